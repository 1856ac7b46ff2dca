// The attachment rows on either database (repository.ts): every single-statement read and write. Only the counted
// insert, a unit of work that each dialect serialises its own way, stays in repository.sqlite.ts / repository.pg.ts.
import { and, count, eq, inArray } from 'drizzle-orm'
import type { AnyDb } from '../db/dialect'
import type * as tables from './attachments.table.pg'
import type { Attachment, AttachmentRepository } from './repository'

/** IDs bound per statement: far below either database's bound on parameters, however many a caller passes (a sweep's). */
export const idsPerStatement = 500

export function attachmentRepository(
  db: AnyDb,
  { attachments }: typeof tables,
): Omit<AttachmentRepository, 'insertWithinQuota'> {
  return {
    async countInThread(threadId) {
      const [row] = await db.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId))
      return row?.n ?? 0
    },

    async findInThread(threadId, attachmentId) {
      const [row] = await db
        .select()
        .from(attachments)
        .where(and(eq(attachments.id, attachmentId), eq(attachments.threadId, threadId)))
      return row ?? null
    },

    async listByIds(ids) {
      const rows: Attachment[] = []
      for (let start = 0; start < ids.length; start += idsPerStatement) {
        const chunk = ids.slice(start, start + idsPerStatement)
        rows.push(...(await db.select().from(attachments).where(inArray(attachments.id, chunk))))
      }
      return rows
    },

    async deleteFromThread(threadId, ids) {
      if (ids.length === 0) return
      await db.delete(attachments).where(and(eq(attachments.threadId, threadId), inArray(attachments.id, ids)))
    },
  }
}
