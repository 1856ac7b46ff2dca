// The attachment rows on SQLite (bun:sqlite through drizzle): the counted insert and the files' text for search,
// whose transactions are synchronous here. One connection serves the one process a SQLite file takes, so a claim
// needs no lock: its one statement chooses and takes. The rest is repository.common.ts.
import { count, eq } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import { queueDocument } from '../threads/search.fts5'
import * as threadTables from '../threads/threads.table'
import * as tables from './attachments.table'
import type { AttachmentRepository, CountedInsert } from './repository'
import {
  attachmentRepository,
  claimableTexts,
  claimedFiles,
  claimTexts,
  pendingText,
  recordedText,
} from './repository.common'

const { attachments, attachmentTexts } = tables
const neutral = asTables<typeof import('./attachments.table.pg')>(tables)
const threads = asTables<typeof import('../threads/threads.table.pg')>(threadTables).threads

export function sqliteAttachmentRepository(db: Db): AttachmentRepository {
  const common = attachmentRepository(anyDb(db), neutral)
  return {
    ...common,

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

    async claimTexts(limit, now, leaseMs) {
      const ids = claimableTexts(anyDb(db), neutral, threads, now, limit)
      return claimedFiles(common, await claimTexts(anyDb(db), neutral, ids, now, leaseMs))
    },

    async recordText(attachmentId, text, now) {
      return db.transaction(() => {
        const recorded = db
          .update(attachmentTexts)
          .set(recordedText(text, now))
          .where(pendingText(neutral, attachmentId))
          .returning({ id: attachmentTexts.attachmentId })
          .all()
        if (recorded.length === 0) return false
        const file = db
          .select({ threadId: attachments.threadId })
          .from(attachments)
          .where(eq(attachments.id, attachmentId))
          .get()
        if (text.state === 'indexed' && file) queueDocument(db, file.threadId)
        return true
      })
    },
  }
}
