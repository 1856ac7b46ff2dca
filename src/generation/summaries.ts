// Stores a compaction: the summary becomes a `summary` message in the place of the messages it replaces,
// and those stop being active (the API lists only active messages). Runs inside the answer's transaction, on
// the same `db` (see src/db/prepared.ts).
import { and, eq, inArray, min, not } from 'drizzle-orm'
import type { Db } from '../db/client'
import { insertMessageRow } from '../threads/repository.sqlite'
import { messages } from '../threads/threads.table'

export interface Compaction {
  text: string
  /** IDs of the oldest active messages of the thread, which the summary stands in for. */
  replaces: string[]
}

/**
 * Messages are listed by (created_at, id), so the summary is dated one millisecond before the first
 * message it does not replace: it lists exactly where the replaced messages were.
 */
export function storeSummary(db: Db, threadId: string, compaction: Compaction, now: number): void {
  if (compaction.replaces.length === 0) return
  const inThread = eq(messages.threadId, threadId)
  const firstKept = db
    .select({ createdAt: min(messages.createdAt) })
    .from(messages)
    .where(and(inThread, eq(messages.active, true), not(inArray(messages.id, compaction.replaces))))
    .get()
  const createdAt = (firstKept?.createdAt ?? now) - 1
  db.update(messages)
    .set({ active: false })
    .where(and(inThread, inArray(messages.id, compaction.replaces)))
    .run()
  const contents = [{ type: 'text' as const, text: compaction.text }]
  insertMessageRow(db, { threadId, role: 'summary', contents, placedAt: createdAt }, now)
}
