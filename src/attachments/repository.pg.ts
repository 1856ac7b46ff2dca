// The attachment rows on PostgreSQL (Bun.SQL through drizzle): the counted insert and the files' text for search.
// Many connections write at once here, on several instances:
// - The quota holds by locking the thread's row before counting: inserts into one thread take turns, other threads'
//   do not wait.
// - A claim of files skips the rows another claim is taking (SKIP LOCKED), and its lease keeps them its own after
//   it commits; an instance that stops mid-file leaves the lease to run out, and the file to the next claim.
// The rest is repository.common.ts.
import { count, eq } from 'drizzle-orm'
import { anyDb } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { queueDocument } from '../threads/search.pg'
import { threads } from '../threads/threads.table.pg'
import * as tables from './attachments.table.pg'
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

export function pgAttachmentRepository(db: PgDb): AttachmentRepository {
  const common = attachmentRepository(anyDb(db), tables)
  return {
    ...common,

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

    async claimTexts(limit, now, leaseMs) {
      // One statement: the rows it chooses are locked as they are chosen, so claims running at once take other
      // files, and a row another claim took since this one began is checked again (its lease) and passed over.
      const ids = claimableTexts(anyDb(db), tables, threads, now, limit).for('update', {
        of: attachmentTexts,
        skipLocked: true,
      })
      return claimedFiles(common, await claimTexts(anyDb(db), tables, ids, now, leaseMs))
    },

    recordText(attachmentId, text, now) {
      return db.transaction(async (tx) => {
        // The thread's row first, held as any write to the thread holds it: a flush of its search document then
        // either ends before this unit reads the queue or leaves the thread queued (search.pg.ts), and a deletion
        // of the thread, which takes the thread's row before the file's, waits for this unit instead of
        // deadlocking with it. A thread deleted already has no file left to record.
        const [thread] = await tx
          .select({ seq: threads.seq })
          .from(threads)
          .innerJoin(attachments, eq(attachments.threadId, threads.id))
          .where(eq(attachments.id, attachmentId))
          .for('no key update', { of: threads })
        if (!thread) return false
        const recorded = await tx
          .update(attachmentTexts)
          .set(recordedText(text, now))
          .where(pendingText(tables, attachmentId))
          .returning({ id: attachmentTexts.attachmentId })
        if (recorded.length === 0) return false
        if (text.state === 'indexed') await queueDocument(tx, thread.seq)
        return true
      })
    },
  }
}
