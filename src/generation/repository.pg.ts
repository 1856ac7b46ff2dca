// The generation queue on PostgreSQL (Bun.SQL through drizzle, a pool of connections, READ COMMITTED). Each state
// move is one transaction whose guard is a conditional update, so that of racing callers exactly one moves a row.
//
// Lock order, the same in every move, so that two moves never wait on each other: the thread's row first, then the
// generation's, and the update clock last (the trigger on threads.updated_at takes it and holds it to commit, so
// updated_at is written once, as the last statement). A thread's deletion locks the thread and then cascades to its
// generations: a move that locked the generation first would deadlock with it.
//
// Ending an answer writes messages too, through threads' own insert (handed in as `parts`, see AnswerStoreParts).

import type { WithSubquery } from 'drizzle-orm'
import { and, asc, eq, inArray, isNull, lt, lte, min, not, or, type SQL, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import { anyDb } from '../db/dialect'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import { inTransaction } from '../db/prepared'
import type { ThreadsModel } from '../threads/model'
import { messages, threads } from '../threads/threads.table.pg'
import { answerChunks, generations } from './generations.table.pg'
import { withFiles, withToolCalls } from './history'
import { encodeEvent, relayChannel } from './relay'
import { notifyEvent } from './relay.pg'
import type { AnswerStoreParts, Compaction, GenerationRepository } from './repository'
import { toolHistoryReader } from './tool-calls.repository.common'
import { toolCalls, toolRounds } from './tool-calls.table.pg'
import type { HistoryMessage } from './types'

/** IDs bound per statement: far below PostgreSQL's 65535 parameters, however many a caller passes. */
const idsPerStatement = 1000

const unfinished = ['queued', 'running'] as const

const bound = sql.placeholder

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = []
  for (let start = 0; start < items.length; start += idsPerStatement)
    out.push(items.slice(start, start + idsPerStatement))
  return out
}

/**
 * Takes the thread's row for the rest of the unit (before the generation's: see the lock order above). `no key
 * update` is what the final update of the thread takes anyway; it leaves other tables' foreign-key checks free.
 */
async function lockThread(tx: Tx, threadId: string): Promise<{ organizationId: number; ownerId: number } | undefined> {
  const [row] = await inTransaction(tx, 'generation:lock-thread', (on) =>
    on
      .select({ organizationId: threads.organizationId, ownerId: threads.ownerId })
      .from(threads)
      .where(eq(threads.id, bound('threadId')))
      .for('no key update')
      .prepare('lock_thread'),
  ).execute({ threadId })
  return row
}

/**
 * Takes the thread's row as lockThread does, for an answer's end, and reads the answer's run with it: the run changes
 * only with a claim or an end, which take the same lock first (and recovery skips a locked thread), so it stays as
 * read until this unit commits.
 */
async function lockThreadForEnd(
  tx: Tx,
  threadId: string,
  messageId: string,
): Promise<{ organizationId: number; ownerId: number; runId: string | null } | undefined> {
  const [row] = await inTransaction(tx, 'generation:lock-thread-for-end', (on) =>
    on
      .select({ organizationId: threads.organizationId, ownerId: threads.ownerId, runId: generations.runId })
      .from(threads)
      .leftJoin(generations, eq(generations.messageId, bound('messageId')))
      .where(eq(threads.id, bound('threadId')))
      .for('no key update', { of: threads })
      .prepare('lock_thread_for_end'),
  ).execute({ threadId, messageId })
  return row
}

/** Drops the text an answer's holders published: it is stored with the answer, or generated again from its start. */
function dropChunks(tx: Tx, messageId: string) {
  return inTransaction(tx, 'generation:drop-chunks', (on) =>
    on
      .delete(answerChunks)
      .where(eq(answerChunks.messageId, bound('messageId')))
      .prepare('drop_chunks'),
  ).execute({ messageId })
}

/** Sets the answer's message on the calls its run recorded (placeholders `runId` and `answerId`). */
function attachedCalls(on: Tx) {
  return on.$with('attached_calls').as(
    on
      .update(toolCalls)
      .set({ answerId: sql`${bound('answerId')}` })
      .where(eq(toolCalls.runId, bound('runId'))),
  )
}

/**
 * The notification of a move, sent from the RETURNING of the guarded update that makes it: exactly when a row moved,
 * with no statement of its own. PostgreSQL delivers it when the unit commits.
 */
const notifying = sql`pg_notify(${relayChannel}, ${bound('event')})`

/**
 * Messages are listed by (created_at, id), so the summary is dated one millisecond before the first message it
 * does not replace: it lists exactly where the replaced messages were.
 */
async function storeSummary(
  parts: PgAnswerParts,
  tx: Tx,
  threadId: string,
  compaction: Compaction,
  now: number,
): Promise<void> {
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
  await parts.insertMessage(tx, { threadId, role: 'summary', contents, placedAt: createdAt }, now)
}

/**
 * Threads' message insert runs on the answer's transaction. Usage's writes ride on its last statement (the thread's
 * new state) as data-modifying WITH clauses, built once: PostgreSQL runs every such clause, so the answer's end costs
 * no round trip more. `recordUsage` gives the values of their placeholders.
 */
export interface PgAnswerParts extends AnswerStoreParts<Tx, Promise<string>, Record<string, unknown>> {
  usageClauses(on: Tx): WithSubquery[]
}

export function pgGenerationRepository(db: PgDb, parts: PgAnswerParts): GenerationRepository {
  const toolHistory = toolHistoryReader(anyDb(db), { toolRounds, toolCalls, generations })
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

    async pending(threadId) {
      const [row] = await db
        .select({ messageId: generations.messageId, threadId: generations.threadId, status: generations.status })
        .from(generations)
        .where(and(eq(generations.threadId, threadId), inArray(generations.status, [...unfinished])))
      return row ? { ...row, status: row.status as 'queued' | 'running' } : null
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
      return withToolCalls(await withFiles(rows, parts.filesForModel), (answerIds) => toolHistory(threadId, answerIds))
    },

    claim({ messageId, threadId }, now, lease) {
      return db.transaction(async (tx) => {
        await lockThread(tx, threadId)
        // The guard: of racing claims, the first to update the row wins; the others wait on its lock, then see
        // `running` when PostgreSQL re-reads the row, and update nothing.
        const claimed = await inTransaction(tx, 'generation:claim', (on) =>
          on
            .update(generations)
            .set({
              status: 'running',
              attempts: sql`${generations.attempts} + 1`,
              // The run begins with the first claim and goes on through a takeover or a release (generations.runId).
              runId: sql`coalesce(${generations.runId}, ${bound('lease')})`,
              leaseId: sql`${bound('lease')}`,
              leasedBy: sql`${bound('holder')}`,
              leaseExpiresAt: sql`${bound('expiresAt')}`,
            })
            .where(and(eq(generations.messageId, bound('messageId')), eq(generations.status, 'queued')))
            .returning({ notified: notifying })
            .prepare('claim_answer'),
        ).execute({
          messageId,
          lease: lease.id,
          holder: lease.holder,
          expiresAt: lease.expiresAt,
          event: encodeEvent({ kind: 'claimed', messageId, lease: lease.id }),
        })
        if (claimed.length === 0) return false
        // A lease taken over leaves the text its holder published: the answer is generated again from its start.
        await dropChunks(tx, messageId)
        // A stop marked while the claim waited stays marked: the new holder sees it at its first renewal and stops.
        await inTransaction(tx, 'generation:thread-active', (on) =>
          on
            .update(threads)
            .set({
              state: sql`case when ${threads.state} = 'interrupted' then 'interrupted' else 'active' end`,
              updatedAt: sql`${bound('now')}`,
            })
            .where(eq(threads.id, bound('threadId')))
            .prepare('thread_active'),
        ).execute({ threadId, now })
        return true
      })
    },

    finish(answer, now) {
      return db.transaction(async (tx) => {
        const { messageId, threadId, outcome, error, contents, lease } = answer
        const locked = await lockThreadForEnd(tx, threadId, messageId)
        const owner = locked && { organizationId: locked.organizationId, ownerId: locked.ownerId }
        const runId = locked?.runId ?? null
        // A queued answer is ended by a stop (no lease); a running one only by its lease's holder. A holder that lost
        // its lease may find the answer queued again for another instance: it must not end it then either.
        const from = lease === null ? 'queued' : 'leased'
        const ended = await inTransaction(tx, `generation:end:${from}`, (on) =>
          on
            .update(generations)
            .set({
              status: sql`${bound('outcome')}`,
              error: sql`${bound('error')}`,
              finishedAt: sql`${bound('now')}`,
              leaseId: null,
              leaseExpiresAt: null,
              runId: null,
            })
            .where(
              and(
                eq(generations.messageId, bound('messageId')),
                from === 'queued'
                  ? eq(generations.status, 'queued')
                  : and(eq(generations.status, 'running'), eq(generations.leaseId, bound('lease'))),
              ),
            )
            .returning({ notified: notifying })
            .prepare('end_answer'),
        ).execute({ messageId, lease, outcome, error, now, event: encodeEvent({ kind: 'ended', messageId }) })
        if (ended.length === 0) return false
        if (answer.compaction) await storeSummary(parts, tx, threadId, answer.compaction, now)
        // What the run's tools did always has a message to sit under, even an answer stopped before any text. The
        // fenced tool writes hold the generation's row FOR SHARE (tool-calls.repository.pg.ts): the end above waited
        // for any under way, so this read, and the attaching below, see every call the run recorded.
        const called =
          contents.length === 0 &&
          runId !== null &&
          (
            await inTransaction(tx, 'generation:run-called', (on) =>
              on
                .select({ one: sql`1` })
                .from(toolCalls)
                .where(eq(toolCalls.runId, bound('runId')))
                .limit(1)
                .prepare('run_called'),
            ).execute({ runId })
          ).length > 0
        let answerId: string | null = null
        if (contents.length > 0 || called) {
          const model = answer.model ?? null
          answerId = await parts.insertMessage(
            tx,
            { threadId, role: 'assistant', contents, replyTo: messageId, model },
            now,
          )
        }
        await dropChunks(tx, messageId)
        const recorded = answer.usage !== undefined && owner !== undefined
        const usage =
          answer.usage && owner
            ? parts.recordUsage(tx, {
                ...answer.usage,
                organizationId: owner.organizationId,
                userId: owner.ownerId,
                threadId,
                questionId: messageId,
                answerId,
                createdAt: now,
              })
            : undefined
        // The run's calls are attached to the stored message by a clause of the same statement: no round trip more.
        const attach = runId !== null && answerId !== null
        const variant = `${recorded ? 'usage' : 'plain'}${attach ? ':calls' : ''}`
        await inTransaction(tx, `generation:thread-ended:${variant}`, (on) =>
          on
            .with(...(recorded ? parts.usageClauses(on) : []), ...(attach ? [attachedCalls(on)] : []))
            .update(threads)
            .set({ state: sql`${bound('state')}`, updatedAt: sql`${bound('now')}` })
            .where(eq(threads.id, bound('threadId')))
            .prepare('thread_ended'),
        ).execute({ ...usage, threadId, now, state: outcome === 'error' ? 'error' : 'ready', runId, answerId })
        return true
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

    async release(answers) {
      if (answers.length === 0) return
      await db.transaction(async (tx) => {
        for (const chunk of chunks(answers.map((answer) => answer.lease))) {
          await tx
            .update(generations)
            // Drizzle has no GREATEST: the attempt given back, never below zero.
            .set({
              status: 'queued',
              attempts: sql`greatest(${generations.attempts} - 1, 0)`,
              leaseId: null,
              leaseExpiresAt: null,
            })
            .where(and(inArray(generations.leaseId, chunk), eq(generations.status, 'running')))
        }
        await tx.execute(notifyEvent({ kind: 'work' }))
      })
    },

    async renew(leases, expiresAt) {
      const kept: { lease: string | null; threadState: string }[] = []
      for (const chunk of chunks(leases)) {
        kept.push(
          ...(await db
            .update(generations)
            .set({ leaseExpiresAt: expiresAt })
            .where(and(inArray(generations.leaseId, chunk), eq(generations.status, 'running')))
            .returning({
              lease: generations.leaseId,
              threadState: sql<string>`(select ${threads.state} from ${threads} where ${threads.id} = ${generations.threadId})`,
            })),
        )
      }
      const held = new Set(kept.map((row) => row.lease))
      return {
        lost: leases.filter((lease) => !held.has(lease)),
        stopping: kept.flatMap((row) => (row.lease !== null && row.threadState === 'interrupted' ? [row.lease] : [])),
      }
    },

    recover({ maxAttempts, stoppedError, failedError, limit, graceMs }, now) {
      return db.transaction(async (tx) => {
        // Answers whose lease ran out (or that predate leases), with their threads, locked for the rest of the unit.
        // SKIP LOCKED: a row another unit holds is busy, not abandoned (its holder is ending or renewing it, or
        // another instance is recovering it now), and waiting on it could deadlock with the usual lock order.
        const abandoned = await tx
          .select({
            messageId: generations.messageId,
            threadId: generations.threadId,
            attempts: generations.attempts,
            threadState: threads.state,
          })
          .from(generations)
          .innerJoin(threads, eq(threads.id, generations.threadId))
          .where(
            and(
              eq(generations.status, 'running'),
              or(isNull(generations.leaseExpiresAt), lt(generations.leaseExpiresAt, now)),
            ),
          )
          .orderBy(asc(generations.createdAt))
          .for('update', { skipLocked: true })
        const stopped = abandoned.filter((job) => job.threadState === 'interrupted')
        const poisoned = abandoned.filter((job) => job.threadState !== 'interrupted' && job.attempts >= maxAttempts)
        const requeued = abandoned.filter((job) => job.threadState !== 'interrupted' && job.attempts < maxAttempts)
        const ids = (jobs: typeof abandoned) => jobs.map((job) => job.messageId)
        const released = { leaseId: null, leaseExpiresAt: null }
        if (stopped.length > 0) {
          await tx
            .update(generations)
            .set({ status: 'interrupted', error: stoppedError, finishedAt: now, runId: null, ...released })
            .where(inArray(generations.messageId, ids(stopped)))
        }
        if (poisoned.length > 0) {
          await tx
            .update(generations)
            .set({ status: 'error', error: failedError, finishedAt: now, runId: null, ...released })
            .where(inArray(generations.messageId, ids(poisoned)))
        }
        if (requeued.length > 0) {
          await tx
            .update(generations)
            .set({ status: 'queued', ...released })
            .where(inArray(generations.messageId, ids(requeued)))
        }
        for (const job of [...stopped, ...poisoned]) {
          await tx.delete(answerChunks).where(eq(answerChunks.messageId, job.messageId))
          await tx.execute(notifyEvent({ kind: 'ended', messageId: job.messageId }))
        }
        // Every moved thread in one statement, last, so updated_at is written once per thread. Drizzle has no
        // CASE: a failed answer ends its thread in error, else active goes back to waiting, interrupted to ready.
        const failed = inArray(threads.id, [...new Set(poisoned.map((job) => job.threadId))])
        const state: SQL<ThreadsModel.thread['state']> =
          sql`case when ${failed} then 'error' when ${threads.state} = 'active' then 'waiting' else 'ready' end`
        if (abandoned.length > 0) {
          await tx
            .update(threads)
            .set({ state, updatedAt: now })
            .where(
              and(
                inArray(threads.id, [...new Set(abandoned.map((job) => job.threadId))]),
                inArray(threads.state, ['active', 'interrupted']),
              ),
            )
        }
        const queued = await tx
          .select({ messageId: generations.messageId, threadId: generations.threadId })
          .from(generations)
          .where(and(eq(generations.status, 'queued'), lte(generations.createdAt, now - graceMs)))
          .orderBy(asc(generations.createdAt), asc(generations.messageId))
          .limit(limit)
        return { requeued: queued, failed: poisoned.length, stopped: stopped.length, abandoned: abandoned.length }
      })
    },
  }
}
