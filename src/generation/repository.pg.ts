// The generation queue on PostgreSQL (Bun.SQL through drizzle, a pool of connections, READ COMMITTED). Each state
// move is one transaction whose guard is a conditional update, so that of racing callers exactly one moves a row.
//
// Lock order, the same in every move, so that two moves never wait on each other: the thread's row first, then the
// generation's, and the update clock last (the trigger on threads.updated_at takes it and holds it to commit, so
// updated_at is written once, as the last statement). A thread's deletion locks the thread and then cascades to its
// generations: a move that locked the generation first would deadlock with it.
//
// Ending an answer writes messages too; the message helpers of src/threads/ are SQLite's, so the few writes needed
// here are written against the PostgreSQL tables below.

import { and, asc, eq, gte, inArray, lte, max, min, not, or, type SQL, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import { attachments } from '../attachments/attachments.table.pg'
import { modelReadyKey } from '../attachments/keys'
import type { PgDb } from '../db/postgres'
import { newId } from '../shared/ids'
import { attachmentIdsOf } from '../threads/messages'
import type { ThreadsModel } from '../threads/model'
import { searchableText } from '../threads/search'
import { messages, threads } from '../threads/threads.table.pg'
import { generations } from './generations.table.pg'
import type { Compaction, GenerationRepository } from './repository'
import type { AttachmentFile, HistoryMessage } from './types'

/** The transaction handle drizzle passes to `db.transaction`: every statement of a unit runs on it. */
type Tx = Parameters<Parameters<PgDb['transaction']>[0]>[0]

/** IDs bound per statement: far below PostgreSQL's 65535 parameters, however many a caller passes. */
const idsPerStatement = 1000

const unfinished = ['queued', 'running'] as const

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = []
  for (let start = 0; start < items.length; start += idsPerStatement)
    out.push(items.slice(start, start + idsPerStatement))
  return out
}

/** The files behind these attachment IDs, as generators read them, by ID. */
async function filesForModel(db: PgDb, ids: string[]): Promise<Map<string, AttachmentFile>> {
  const files = new Map<string, AttachmentFile>()
  for (const chunk of chunks(ids)) {
    const rows = await db
      .select({
        id: attachments.id,
        filename: attachments.filename,
        mediaType: attachments.mediaType,
        resized: attachments.resized,
      })
      .from(attachments)
      .where(inArray(attachments.id, chunk))
    for (const row of rows) {
      files.set(row.id, { filename: row.filename, mediaType: row.mediaType, key: modelReadyKey(row) })
    }
  }
  return files
}

/**
 * Takes the thread's row for the rest of the unit (before the generation's: see the lock order above). `no key
 * update` is what the final update of the thread takes anyway; it leaves other tables' foreign-key checks free.
 */
async function lockThread(tx: Tx, threadId: string): Promise<void> {
  await tx.select({ id: threads.id }).from(threads).where(eq(threads.id, threadId)).for('no key update')
}

/**
 * Inserts a message at the end of its thread, or at `placedAt`. At the end means at `now`, or just after the
 * thread's newest message if the clock has stepped back, so that messages list in the order they were written.
 */
async function insertMessage(
  tx: Tx,
  input: {
    threadId: string
    role: 'assistant' | 'summary'
    contents: ThreadsModel.contentBlock[]
    replyTo?: string
    placedAt?: number
  },
  now: number,
): Promise<void> {
  let createdAt = input.placedAt
  if (createdAt === undefined) {
    const [newest] = await tx
      .select({ createdAt: max(messages.createdAt) })
      .from(messages)
      .where(eq(messages.threadId, input.threadId))
    const last = newest?.createdAt
    createdAt = last == null || now >= last ? now : last + 1
  }
  await tx.insert(messages).values({
    id: newId(),
    threadId: input.threadId,
    role: input.role,
    contents: input.contents,
    text: searchableText(input.contents),
    replyTo: input.replyTo ?? null,
    createdAt,
  })
}

/**
 * Messages are listed by (created_at, id), so the summary is dated one millisecond before the first message it
 * does not replace: it lists exactly where the replaced messages were.
 */
async function storeSummary(tx: Tx, threadId: string, compaction: Compaction, now: number): Promise<void> {
  if (compaction.replaces.length === 0) return
  const inThread = eq(messages.threadId, threadId)
  const [firstKept] = await tx
    .select({ createdAt: min(messages.createdAt) })
    .from(messages)
    .where(and(inThread, eq(messages.active, true), not(inArray(messages.id, compaction.replaces))))
  const createdAt = (firstKept?.createdAt ?? now) - 1
  await tx
    .update(messages)
    .set({ active: false })
    .where(and(inThread, inArray(messages.id, compaction.replaces)))
  const contents = [{ type: 'text' as const, text: compaction.text }]
  await insertMessage(tx, { threadId, role: 'summary', contents, placedAt: createdAt }, now)
}

export function pgGenerationRepository(db: PgDb): GenerationRepository {
  return {
    async interrupted(messageIds) {
      if (messageIds.length === 0) return new Set()
      const rows = await db
        .select({ messageId: generations.messageId })
        .from(generations)
        .where(and(inArray(generations.messageId, messageIds), eq(generations.status, 'interrupted')))
      return new Set(rows.map((row) => row.messageId))
    },

    async find(messageId) {
      const [row] = await db
        .select({ status: generations.status, error: generations.error })
        .from(generations)
        .where(eq(generations.messageId, messageId))
      return row ?? null
    },

    async history(threadId, messageId) {
      // One statement, so the target's time and the messages up to it come from one snapshot. A target that is
      // gone compares as null: no rows.
      const target = alias(messages, 'target')
      const rows = (await db
        .select({ id: messages.id, role: messages.role, contents: messages.contents })
        .from(messages)
        .where(
          and(
            eq(messages.threadId, threadId),
            eq(messages.active, true),
            lte(
              messages.createdAt,
              db.select({ createdAt: target.createdAt }).from(target).where(eq(target.id, messageId)),
            ),
          ),
        )
        .orderBy(asc(messages.createdAt), asc(messages.id))) as Omit<HistoryMessage, 'attachments'>[]
      const files = await filesForModel(db, [...new Set(rows.flatMap((row) => attachmentIdsOf(row.contents)))])
      return rows.map((row) => {
        const own = attachmentIdsOf(row.contents).flatMap((id) => {
          const file = files.get(id)
          return file ? [[id, file] as const] : []
        })
        return own.length === 0 ? row : { ...row, attachments: Object.fromEntries(own) }
      })
    },

    claim({ messageId, threadId }, now) {
      return db.transaction(async (tx) => {
        await lockThread(tx, threadId)
        // The guard: of racing claims, the first to update the row wins; the others wait on its lock, then see
        // `running` when PostgreSQL re-reads the row, and update nothing.
        const claimed = await tx
          .update(generations)
          .set({ status: 'running', attempts: sql`${generations.attempts} + 1` })
          .where(and(eq(generations.messageId, messageId), eq(generations.status, 'queued')))
          .returning({ messageId: generations.messageId })
        if (claimed.length === 0) return false
        await tx.update(threads).set({ state: 'active', updatedAt: now }).where(eq(threads.id, threadId))
        return true
      })
    },

    async finish(answer, now) {
      await db.transaction(async (tx) => {
        const { messageId, threadId, outcome, error, contents } = answer
        await lockThread(tx, threadId)
        const ended = await tx
          .update(generations)
          .set({ status: outcome, error, finishedAt: now })
          .where(and(eq(generations.messageId, messageId), inArray(generations.status, [...unfinished])))
          .returning({ messageId: generations.messageId })
        if (ended.length === 0) return
        if (answer.compaction) await storeSummary(tx, threadId, answer.compaction, now)
        if (contents.length > 0) {
          await insertMessage(tx, { threadId, role: 'assistant', contents, replyTo: messageId }, now)
        }
        await tx
          .update(threads)
          .set({ state: outcome === 'error' ? 'error' : 'ready', updatedAt: now })
          .where(eq(threads.id, threadId))
      })
    },

    async markStopping(threadId, now) {
      // One conditional update: a stop that waits on the answer's end re-reads the thread, finds it no longer
      // busy, and moves nothing.
      await db
        .update(threads)
        .set({ state: 'interrupted', updatedAt: now })
        .where(and(eq(threads.id, threadId), inArray(threads.state, ['waiting', 'active'])))
    },

    async release(messageIds) {
      for (const chunk of chunks(messageIds)) {
        await db
          .update(generations)
          // Drizzle has no GREATEST: the attempt given back, never below zero.
          .set({ status: 'queued', attempts: sql`greatest(${generations.attempts} - 1, 0)` })
          .where(and(inArray(generations.messageId, chunk), eq(generations.status, 'running')))
      }
    },

    recover({ maxAttempts, stoppedError, failedError }, now) {
      return db.transaction(async (tx) => {
        const pending = inArray(generations.status, [...unfinished])
        // Threads first (the lock order above): every thread this unit may move, held until commit, so the states
        // read below are the states written from.
        await tx
          .select({ id: threads.id })
          .from(threads)
          .where(
            or(
              inArray(threads.state, ['active', 'interrupted']),
              inArray(threads.id, tx.select({ threadId: generations.threadId }).from(generations).where(pending)),
            ),
          )
          .orderBy(asc(threads.id))
          .for('no key update')
        const stopped = await tx
          .update(generations)
          .set({ status: 'interrupted', error: stoppedError, finishedAt: now })
          .where(
            and(
              pending,
              inArray(
                generations.threadId,
                tx.select({ id: threads.id }).from(threads).where(eq(threads.state, 'interrupted')),
              ),
            ),
          )
          .returning({ messageId: generations.messageId })
        const poisoned = await tx
          .update(generations)
          .set({ status: 'error', error: failedError, finishedAt: now })
          .where(and(pending, gte(generations.attempts, maxAttempts)))
          .returning({ threadId: generations.threadId })
        await tx.update(generations).set({ status: 'queued' }).where(eq(generations.status, 'running'))
        const requeued = await tx
          .select({ messageId: generations.messageId, threadId: generations.threadId })
          .from(generations)
          .where(eq(generations.status, 'queued'))
          .orderBy(asc(generations.createdAt), asc(generations.messageId))
        // Every moved thread in one statement, last, so updated_at is written once per thread. Drizzle has no
        // CASE: a failed answer ends its thread in error, else active goes back to waiting, interrupted to ready.
        // One parameter per thread whose answer's attempts ran out: a handful, those that brought processes down.
        const failedThreads = [...new Set(poisoned.map((job) => job.threadId))]
        const failed = inArray(threads.id, failedThreads)
        const state: SQL<ThreadsModel.thread['state']> =
          sql`case when ${failed} then 'error' when ${threads.state} = 'active' then 'waiting' else 'ready' end`
        await tx
          .update(threads)
          .set({ state, updatedAt: now })
          .where(or(inArray(threads.state, ['active', 'interrupted']), failed))
        return { requeued, failed: poisoned.length, stopped: stopped.length }
      })
    },
  }
}
