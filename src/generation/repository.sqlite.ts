// The generation queue on SQLite. Every answer runs the claim, history and finish statements, so they are
// prepared once per database (see src/db/prepared.ts); a statement prepared on `db` runs on the transaction's
// connection when called inside db.transaction. Ending an answer writes threads' messages too: it is one unit.
import { and, asc, eq, inArray, lte, min, not, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables } from '../db/dialect'
import { prepared } from '../db/prepared'
import { messages, threads } from '../threads/threads.table'
import { generations } from './generations.table'
import { withFiles, withToolCalls } from './history'
import type { AnswerStoreParts, Compaction, GenerationRepository, PendingAnswer } from './repository'
import { type ToolCallTables, toolHistoryReader } from './tool-calls.repository.common'
import { toolCalls, toolRounds } from './tool-calls.table'
import type { HistoryMessage } from './types'

/** Threads' message insert runs inside the answer's transaction: on SQLite, on the same `db` (src/db/prepared.ts). */
export type SqliteAnswerParts = AnswerStoreParts<Db, string, void>

export function sqliteGenerationRepository(db: Db, parts: SqliteAnswerParts): GenerationRepository {
  const now = () => sql`${sql.placeholder('now')}`
  const statements = {
    find: () =>
      db
        .select({ status: generations.status, error: generations.error })
        .from(generations)
        .where(eq(generations.messageId, sql.placeholder('messageId')))
        .prepare(),
    target: () =>
      db
        .select({ createdAt: messages.createdAt })
        .from(messages)
        .where(eq(messages.id, sql.placeholder('messageId')))
        .prepare(),
    history: () =>
      db
        .select({ id: messages.id, role: messages.role, contents: messages.contents })
        .from(messages)
        .where(
          and(
            eq(messages.threadId, sql.placeholder('threadId')),
            eq(messages.active, true),
            lte(messages.createdAt, sql.placeholder('createdAt')),
          ),
        )
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .prepare(),
    // The run begins with the first claim and goes on through a takeover or a release (see generations.runId).
    claim: () =>
      db
        .update(generations)
        .set({
          status: 'running',
          attempts: sql`${generations.attempts} + 1`,
          runId: sql`coalesce(${generations.runId}, ${sql.placeholder('lease')})`,
        })
        .where(and(eq(generations.messageId, sql.placeholder('messageId')), eq(generations.status, 'queued')))
        .returning({ messageId: generations.messageId })
        .prepare(),
    run: () =>
      db
        .select({ runId: generations.runId })
        .from(generations)
        .where(eq(generations.messageId, sql.placeholder('messageId')))
        .prepare(),
    finish: () =>
      db
        .update(generations)
        .set({
          status: sql`${sql.placeholder('status')}`,
          error: sql`${sql.placeholder('error')}`,
          finishedAt: now(),
          runId: null,
        })
        .where(
          and(
            eq(generations.messageId, sql.placeholder('messageId')),
            inArray(generations.status, ['queued', 'running']),
          ),
        )
        .returning({ messageId: generations.messageId })
        .prepare(),
    runCalled: () =>
      db
        .select({ one: sql`1` })
        .from(toolCalls)
        .where(eq(toolCalls.runId, sql.placeholder('runId')))
        .limit(1)
        .prepare(),
    attachCalls: () =>
      db
        .update(toolCalls)
        .set({ answerId: sql`${sql.placeholder('answerId')}` })
        .where(eq(toolCalls.runId, sql.placeholder('runId')))
        .prepare(),
    owner: () =>
      db
        .select({ organizationId: threads.organizationId, ownerId: threads.ownerId })
        .from(threads)
        .where(eq(threads.id, sql.placeholder('threadId')))
        .prepare(),
    threadState: () =>
      db
        .update(threads)
        .set({ state: sql`${sql.placeholder('state')}`, updatedAt: now() })
        .where(eq(threads.id, sql.placeholder('threadId')))
        .prepare(),
  }
  const statement = <K extends keyof typeof statements>(name: K) =>
    prepared(db, `generation:${name}`, statements[name] as () => unknown) as ReturnType<(typeof statements)[K]>
  const toolHistory = toolHistoryReader(anyDb(db), asTables<ToolCallTables>({ toolRounds, toolCalls, generations }))

  /**
   * Messages are listed by (created_at, id), so the summary is dated one millisecond before the first message it
   * does not replace: it lists exactly where the replaced messages were. Runs inside the answer's transaction.
   */
  function storeSummary(threadId: string, compaction: Compaction, now: number): void {
    if (compaction.replaces.length === 0) return
    const inThread = eq(messages.threadId, threadId)
    const firstKept = db
      .select({ createdAt: min(messages.createdAt) })
      .from(messages)
      .where(and(inThread, eq(messages.active, true), not(inArray(messages.id, compaction.replaces))))
      .get()
    const createdAt = (firstKept?.createdAt ?? now) - 1
    db.update(messages)
      .set({ active: false })
      .where(and(inThread, inArray(messages.id, compaction.replaces)))
      .run()
    const contents = [{ type: 'text' as const, text: compaction.text }]
    parts.insertMessage(db, { threadId, role: 'summary', contents, placedAt: createdAt }, now)
  }

  return {
    async find(messageId) {
      return statement('find').get({ messageId }) ?? null
    },

    async pending(threadId) {
      const row = db
        .select({ messageId: generations.messageId, threadId: generations.threadId, status: generations.status })
        .from(generations)
        .where(and(eq(generations.threadId, threadId), inArray(generations.status, ['queued', 'running'])))
        .get()
      return row ? { ...row, status: row.status as 'queued' | 'running' } : null
    },

    async interrupted(messageIds) {
      if (messageIds.length === 0) return new Set()
      const rows = db
        .select({ messageId: generations.messageId })
        .from(generations)
        .where(and(inArray(generations.messageId, messageIds), eq(generations.status, 'interrupted')))
        .all()
      return new Set(rows.map((row) => row.messageId))
    },

    async history(threadId, messageId) {
      const target = statement('target').get({ messageId })
      if (!target) return []
      const rows = statement('history').all({ threadId, createdAt: target.createdAt }) as Omit<
        HistoryMessage,
        'attachments'
      >[]
      return withToolCalls(await withFiles(rows, parts.filesForModel), (answerIds) => toolHistory(threadId, answerIds))
    },

    // One process holds a SQLite database: leases are neither stored nor checked (see repository.ts).
    async claim({ messageId, threadId }, now, lease) {
      return db.transaction(() => {
        if (!statement('claim').get({ messageId, lease: lease.id })) return false
        statement('threadState').run({ threadId, state: 'active', now })
        return true
      })
    },

    async finish(answer, now) {
      return db.transaction(() => {
        const { messageId, threadId, outcome, error, contents } = answer
        const runId = statement('run').get({ messageId })?.runId ?? null
        if (!statement('finish').get({ messageId, status: outcome, error, now })) return false
        if (answer.compaction) storeSummary(threadId, answer.compaction, now)
        // What the run's tools did always has a message to sit under, even an answer stopped before any text.
        const called = contents.length === 0 && runId !== null && statement('runCalled').get({ runId }) !== undefined
        const answerId =
          contents.length > 0 || called
            ? parts.insertMessage(
                db,
                { threadId, role: 'assistant', contents, replyTo: messageId, model: answer.model ?? null },
                now,
              )
            : null
        if (runId !== null && answerId !== null) statement('attachCalls').run({ runId, answerId })
        const owner = answer.usage ? statement('owner').get({ threadId }) : undefined
        if (answer.usage && owner) {
          const { organizationId, ownerId: userId } = owner
          const row = { ...answer.usage, organizationId, userId, threadId, questionId: messageId, answerId }
          parts.recordUsage(db, { ...row, createdAt: now })
        }
        statement('threadState').run({ threadId, state: outcome === 'error' ? 'error' : 'ready', now })
        return true
      })
    },

    async markStopping(threadId, now) {
      db.update(threads)
        .set({ state: 'interrupted', updatedAt: now })
        .where(and(eq(threads.id, threadId), inArray(threads.state, ['waiting', 'active'])))
        .run()
    },

    async release(answers) {
      const messageIds = answers.map((answer) => answer.messageId)
      db.update(generations)
        .set({ status: 'queued', attempts: sql`max(${generations.attempts} - 1, 0)` })
        .where(and(inArray(generations.messageId, messageIds), eq(generations.status, 'running')))
        .run()
    },

    async renew() {
      return { lost: [], stopping: [] }
    },

    async recover({ maxAttempts, stoppedError, failedError }, now) {
      return db.transaction((tx) => {
        const pending = tx
          .select({ messageId: generations.messageId, threadId: generations.threadId, attempts: generations.attempts })
          .from(generations)
          .where(inArray(generations.status, ['queued', 'running']))
          .orderBy(asc(generations.createdAt))
          .all()
        const beingStopped = new Set(
          tx
            .select({ id: threads.id })
            .from(threads)
            .where(eq(threads.state, 'interrupted'))
            .all()
            .map((thread) => thread.id),
        )
        const stopped = pending.filter((job) => beingStopped.has(job.threadId))
        const poisoned = pending.filter((job) => !beingStopped.has(job.threadId) && job.attempts >= maxAttempts)
        const requeued: PendingAnswer[] = pending
          .filter((job) => !beingStopped.has(job.threadId) && job.attempts < maxAttempts)
          .map(({ messageId, threadId }) => ({ messageId, threadId }))
        for (const job of stopped) {
          tx.update(generations)
            .set({ status: 'interrupted', error: stoppedError, finishedAt: now, runId: null })
            .where(eq(generations.messageId, job.messageId))
            .run()
        }
        tx.update(generations).set({ status: 'queued' }).where(eq(generations.status, 'running')).run()
        tx.update(threads).set({ state: 'waiting', updatedAt: now }).where(eq(threads.state, 'active')).run()
        tx.update(threads).set({ state: 'ready', updatedAt: now }).where(eq(threads.state, 'interrupted')).run()
        for (const job of poisoned) {
          tx.update(generations)
            .set({ status: 'error', error: failedError, finishedAt: now, runId: null })
            .where(eq(generations.messageId, job.messageId))
            .run()
          tx.update(threads).set({ state: 'error', updatedAt: now }).where(eq(threads.id, job.threadId)).run()
        }
        return { requeued, failed: poisoned.length, stopped: stopped.length, abandoned: 0 }
      })
    },
  }
}
