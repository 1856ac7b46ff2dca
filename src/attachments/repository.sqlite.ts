// The attachment rows on SQLite (bun:sqlite through drizzle): the counted insert, whose transaction is synchronous
// here. The rest is repository.common.ts.
import { count, eq } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import * as tables from './attachments.table'
import type { AttachmentRepository, CountedInsert } from './repository'
import { attachmentRepository } from './repository.common'

const { attachments } = tables

export function sqliteAttachmentRepository(db: Db): AttachmentRepository {
  return {
    ...attachmentRepository(anyDb(db), asTables(tables)),

    async insertWithinQuota(threadId, files, limit) {
      // One write transaction: on a single connection nothing can insert between the count and the insert.
      return db.transaction((tx): CountedInsert => {
        const stored =
          tx.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId)).get()?.n ?? 0
        if (stored + files.length > limit) return { inserted: false, stored }
        tx.insert(attachments)
          .values(files.map((file) => ({ ...file, threadId })))
          .run()
        return { inserted: true }
      })
    },
  }
}
