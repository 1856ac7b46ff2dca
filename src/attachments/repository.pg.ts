// The attachment rows on PostgreSQL (Bun.SQL through drizzle). Many connections write at once here, so the quota
// holds by locking the thread's row before counting: inserts into one thread take turns, other threads' do not wait.
import { and, count, eq, inArray } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import { threads } from '../threads/threads.table.pg'
import { attachments } from './attachments.table.pg'
import type { Attachment, AttachmentRepository, CountedInsert } from './repository'

const idsPerStatement = 1000

async function storedCount(db: Pick<PgDb, 'select'>, threadId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId))
  return row?.n ?? 0
}

export function pgAttachmentRepository(db: PgDb): AttachmentRepository {
  return {
    countInThread: (threadId) => storedCount(db, threadId),

    insertWithinQuota(threadId, files, limit) {
      return db.transaction(async (tx): Promise<CountedInsert> => {
        await tx.select({ id: threads.id }).from(threads).where(eq(threads.id, threadId)).for('update')
        const stored = await storedCount(tx, threadId)
        if (stored + files.length > limit) return { inserted: false, stored }
        await tx.insert(attachments).values(files.map((file) => ({ ...file, threadId })))
        return { inserted: true }
      })
    },

    async findInThread(threadId, attachmentId) {
      const [row] = await db
        .select()
        .from(attachments)
        .where(and(eq(attachments.id, attachmentId), eq(attachments.threadId, threadId)))
      return row ?? null
    },

    async listByIds(ids) {
      // In chunks, as on SQLite: a sweep may pass more IDs than the 65535 parameters a statement can bind.
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
