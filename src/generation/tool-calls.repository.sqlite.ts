// What the tools did, on SQLite: the fence and the unit that records a round. One process holds the database and
// leases are not stored (repository.sqlite.ts), so the fence is that the answer is still `running`; a round's two
// inserts run in one synchronous transaction, where nothing interleaves with the check.
import { and, eq, exists, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import { generations } from './generations.table'
import type { Fence, ToolCallRepository } from './tool-calls.repository'
import { callValues, roundValues, type ToolCallTables, toolCallRepository } from './tool-calls.repository.common'
import { toolCalls, toolRounds } from './tool-calls.table'

const tables = asTables<ToolCallTables>({ toolRounds, toolCalls, generations })

export function sqliteToolCallRepository(db: Db): ToolCallRepository {
  const running = ({ questionId }: Fence) =>
    and(eq(generations.messageId, questionId), eq(generations.status, 'running'))
  const held = (fence: Fence) => exists(db.select({ one: sql`1` }).from(generations).where(running(fence)))

  return {
    ...toolCallRepository(anyDb(db), tables, held),

    async recordRound(round, calls, fence) {
      return db.transaction((tx) => {
        if (!tx.select({ one: sql`1` }).from(generations).where(running(fence)).get()) return false
        tx.insert(toolRounds).values(roundValues(round)).run()
        if (calls.length > 0) tx.insert(toolCalls).values(calls.map(callValues)).run()
        return true
      })
    },
  }
}
