// What the tools did, on PostgreSQL: the fence and the unit that records a round. Several instances share the
// database, so a write holds only while the answer is `running` under the writer's own lease, and it takes the
// generation's row FOR SHARE: the answer's end (repository.pg.ts `finish`), which updates that row, waits for a write
// under way, and a write that comes after it finds the answer ended and writes nothing. So every call the run recorded
// is there when its end attaches them to the stored message.
import { and, eq, exists, sql } from 'drizzle-orm'
import { anyDb } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { generations } from './generations.table.pg'
import type { Fence, ToolCallRepository } from './tool-calls.repository'
import { callValues, roundValues, toolCallRepository } from './tool-calls.repository.common'
import { toolCalls, toolRounds } from './tool-calls.table.pg'

export function pgToolCallRepository(db: PgDb): ToolCallRepository {
  const held = (on: Pick<PgDb, 'select'>, { questionId, lease }: Fence) =>
    on
      .select({ one: sql`1` })
      .from(generations)
      .where(
        and(eq(generations.messageId, questionId), eq(generations.status, 'running'), eq(generations.leaseId, lease)),
      )
      .for('share')

  return {
    ...toolCallRepository(anyDb(db), { toolRounds, toolCalls, generations }, (fence) => exists(held(db, fence))),

    recordRound(round, calls, fence) {
      return db.transaction(async (tx) => {
        if ((await held(tx, fence)).length === 0) return false
        await tx.insert(toolRounds).values(roundValues(round))
        if (calls.length > 0) await tx.insert(toolCalls).values(calls.map(callValues))
        return true
      })
    },
  }
}
