// The attachment rows on SQLite (bun:sqlite through drizzle).
import { and, count, eq, inArray } from 'drizzle-orm'
import type { Db } from '../db/client'
import { attachments } from './attachments.table'
import type { Attachment, AttachmentRepository, CountedInsert } from './repository'

/** IDs bound per statement: far below SQLite's bound on parameters, however many a caller passes (a sweep's). */
const idsPerStatement = 500

function selectByIds(db: Db, ids: string[]): Attachment[] {
  const rows: Attachment[] = []
  for (let start = 0; start < ids.length; start += idsPerStatement) {
    const chunk = ids.slice(start, start + idsPerStatement)
    rows.push(...db.select().from(attachments).where(inArray(attachments.id, chunk)).all())
  }
  return rows
}

function storedCount(db: Pick<Db, 'select'>, threadId: string): number {
  return db.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId)).get()?.n ?? 0
}

export function sqliteAttachmentRepository(db: Db): AttachmentRepository {
  return {
    async countInThread(threadId) {
      return storedCount(db, threadId)
    },

    async insertWithinQuota(threadId, files, limit) {
      // One write transaction: on a single connection nothing can insert between the count and the insert.
      return db.transaction((tx): CountedInsert => {
        const stored = storedCount(tx, threadId)
        if (stored + files.length > limit) return { inserted: false, stored }
        tx.insert(attachments)
          .values(files.map((file) => ({ ...file, threadId })))
          .run()
        return { inserted: true }
      })
    },

    async findInThread(threadId, attachmentId) {
      return (
        db
          .select()
          .from(attachments)
          .where(and(eq(attachments.id, attachmentId), eq(attachments.threadId, threadId)))
          .get() ?? null
      )
    },

    async listByIds(ids) {
      return selectByIds(db, ids)
    },

    async deleteFromThread(threadId, ids) {
      if (ids.length === 0) return
      db.delete(attachments)
        .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, ids)))
        .run()
    },
  }
}
