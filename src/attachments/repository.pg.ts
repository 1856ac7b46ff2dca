// The attachment rows on PostgreSQL (Bun.SQL through drizzle): the counted insert. Many connections write at once
// here, so the quota holds by locking the thread's row before counting: inserts into one thread take turns, other
// threads' do not wait. The rest is repository.common.ts.
import { count, eq } from 'drizzle-orm'
import { anyDb } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { threads } from '../threads/threads.table.pg'
import * as tables from './attachments.table.pg'
import type { AttachmentRepository, CountedInsert } from './repository'
import { attachmentRepository } from './repository.common'

const { attachments } = tables

export function pgAttachmentRepository(db: PgDb): AttachmentRepository {
  return {
    ...attachmentRepository(anyDb(db), tables),

    insertWithinQuota(threadId, files, limit) {
      return db.transaction(async (tx): Promise<CountedInsert> => {
        await tx.select({ id: threads.id }).from(threads).where(eq(threads.id, threadId)).for('update')
        const [row] = await tx.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId))
        const stored = row?.n ?? 0
        if (stored + files.length > limit) return { inserted: false, stored }
        await tx.insert(attachments).values(files.map((file) => ({ ...file, threadId })))
        return { inserted: true }
      })
    },
  }
}
