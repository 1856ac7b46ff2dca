// The attachment rows on SQLite (bun:sqlite through drizzle): the counted insert, whose transaction is synchronous
// here, and the synchronous read that another feature's SQLite unit of work uses for the files beside its own rows (a
// generation's history, see filesForModel). The rest is repository.common.ts.
import { count, eq, inArray } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import type { AttachmentFile } from '../generation/types'
import * as tables from './attachments.table'
import { modelReadyKey } from './keys'
import type { AttachmentRepository, CountedInsert } from './repository'
import { attachmentRepository, idsPerStatement } from './repository.common'

const { attachments } = tables

/** The files behind these attachment IDs, as generators read them, by ID. */
export function filesForModel(db: Db, ids: string[]): Map<string, AttachmentFile> {
  const files = new Map<string, AttachmentFile>()
  for (let start = 0; start < ids.length; start += idsPerStatement) {
    const chunk = ids.slice(start, start + idsPerStatement)
    for (const row of db.select().from(attachments).where(inArray(attachments.id, chunk)).all()) {
      files.set(row.id, { filename: row.filename, mediaType: row.mediaType, key: modelReadyKey(row) })
    }
  }
  return files
}

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
