// The attachment rows on either database (repository.ts): every single-statement read and write. The counted
// insert and the files' text for search, units of work that each dialect serialises its own way, stay in
// repository.sqlite.ts / repository.pg.ts, built from the pieces at the end of this file.
import { and, asc, count, eq, inArray, isNull, lte, notInArray, or, type SQLWrapper, sql } from 'drizzle-orm'
import type { AnyDb } from '../db/dialect'
import type { threads } from '../threads/threads.table.pg'
import type * as tables from './attachments.table.pg'
import type { Attachment, AttachmentRepository, ClaimedFile, FileText } from './repository'

/** IDs bound per statement: far below either database's bound on parameters, however many a caller passes (a sweep's). */
export const idsPerStatement = 500

export function attachmentRepository(
  db: AnyDb,
  { attachments, attachmentTexts }: typeof tables,
): Omit<AttachmentRepository, 'insertWithinQuota' | 'claimTexts' | 'recordText'> {
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

    async releaseText(attachmentId) {
      await db
        .update(attachmentTexts)
        .set({ attempts: sql`${attachmentTexts.attempts} - 1`, leaseExpiresAt: null })
        .where(and(eq(attachmentTexts.attachmentId, attachmentId), eq(attachmentTexts.state, 'pending')))
    },
  }
}

/** Thread states in which an answer is queued or being written: their files wait for it to end. */
const answering: ('waiting' | 'active')[] = ['waiting', 'active']

/**
 * The IDs of up to `limit` files a claim may take at `now`, oldest first (IDs are UUIDv7): pending, not held by a
 * claim that lasts, in a thread with no answer waiting or running. Read through the partial index of pending rows.
 */
export function claimableTexts(
  db: AnyDb,
  { attachments, attachmentTexts }: typeof tables,
  thread: typeof threads,
  now: number,
  limit: number,
) {
  return db
    .select({ id: attachmentTexts.attachmentId })
    .from(attachmentTexts)
    .innerJoin(attachments, eq(attachments.id, attachmentTexts.attachmentId))
    .innerJoin(thread, eq(thread.id, attachments.threadId))
    .where(
      and(
        eq(attachmentTexts.state, 'pending'),
        or(isNull(attachmentTexts.leaseExpiresAt), lte(attachmentTexts.leaseExpiresAt, now)),
        notInArray(thread.state, answering),
      ),
    )
    .orderBy(asc(attachmentTexts.attachmentId))
    .limit(limit)
}

/** The claim itself: the files are the caller's until `now + leaseMs`, and each claim is counted. */
export function claimTexts(
  db: AnyDb,
  { attachmentTexts }: typeof tables,
  ids: SQLWrapper,
  now: number,
  leaseMs: number,
) {
  return db
    .update(attachmentTexts)
    .set({ attempts: sql`${attachmentTexts.attempts} + 1`, leaseExpiresAt: now + leaseMs })
    .where(inArray(attachmentTexts.attachmentId, ids))
    .returning({ id: attachmentTexts.attachmentId, attempts: attachmentTexts.attempts })
}

/** The claimed files with their rows, oldest first; a file deleted since is left out. */
export async function claimedFiles(
  repository: Pick<AttachmentRepository, 'listByIds'>,
  claimed: { id: string; attempts: number }[],
): Promise<ClaimedFile[]> {
  const rows = new Map((await repository.listByIds(claimed.map((row) => row.id))).map((row) => [row.id, row]))
  return claimed
    .flatMap(({ id, attempts }) => {
      const attachment = rows.get(id)
      return attachment ? [{ attachment, attempts }] : []
    })
    .sort((a, b) => (a.attachment.id < b.attachment.id ? -1 : 1))
}

/** The row's columns once its text is known: the claim ends with it. */
export function recordedText(text: FileText, now: number) {
  const found = text.state === 'indexed' ? text : { text: null, words: null, truncated: false }
  return {
    state: text.state,
    text: found.text,
    words: found.words,
    truncated: found.truncated,
    indexedAt: now,
    leaseExpiresAt: null,
  }
}

/** The file's row while it is still pending: recording a text changes no row already recorded. */
export function pendingText({ attachmentTexts }: typeof tables, attachmentId: string) {
  return and(eq(attachmentTexts.attachmentId, attachmentId), eq(attachmentTexts.state, 'pending'))
}
