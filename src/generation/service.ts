// The generation engine on the main thread: a durable queue (the `generations` table) drained with a
// concurrency limit. It moves threads through their states, persists each answer once, when it ends
// (never token by token), and feeds the hub that SSE responses listen to.
import { and, asc, eq, inArray, lte, sql } from 'drizzle-orm'
import { filesForModel } from '../attachments/service'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import { attachmentIdsOf } from '../threads/messages'
import type { ThreadsModel } from '../threads/model'
import { insertMessageRow } from '../threads/repository.sqlite'
import { messages, threads } from '../threads/threads.table'
import { generations } from './generations.table'
import { Hub } from './hub'
import { type Compaction, storeSummary } from './summaries'
import type { GenerationRunner, HistoryMessage } from './types'

export interface EngineDeps {
  db: Db
  runner: GenerationRunner
  clock: Clock
  log: Logger
  concurrency: number
}

interface Job {
  messageId: string
  threadId: string
  blocks: ThreadsModel.contentBlock[]
  stopping: boolean
  compaction?: Compaction
  /** Set by the first settle: a worker that fails after a failed start must not store the answer twice. */
  settled?: boolean
}

export const restartMessage = 'The server is restarting; this answer will be generated again once it is back'

/** Attempts an answer gets across restarts before its thread moves to `error`. */
const maxAttempts = 3

export type GenerationEngine = ReturnType<typeof createGenerationEngine>

export function createGenerationEngine({ db, runner, clock, log, concurrency }: EngineDeps) {
  const hub = new Hub()
  const queue: { messageId: string; threadId: string }[] = []
  const running = new Map<string, Job>()
  /** Draining: running answers may finish, nothing new starts. Closed: the engine ignores the runner. */
  let draining = false
  let closed = false
  const idleWaiters: (() => void)[] = []
  const drainWaiters: (() => void)[] = []

  // Every answer runs these statements: prepared once (see src/db/prepared.ts), they run on the
  // transaction's connection when called inside db.transaction.
  const now = () => sql`${sql.placeholder('now')}`
  const statements = {
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
    claim: () =>
      db
        .update(generations)
        .set({ status: 'running', attempts: sql`${generations.attempts} + 1` })
        .where(and(eq(generations.messageId, sql.placeholder('messageId')), eq(generations.status, 'queued')))
        .returning({ messageId: generations.messageId })
        .prepare(),
    finish: () =>
      db
        .update(generations)
        .set({ status: sql`${sql.placeholder('status')}`, error: sql`${sql.placeholder('error')}`, finishedAt: now() })
        .where(eq(generations.messageId, sql.placeholder('messageId')))
        .prepare(),
    threadState: () =>
      db
        .update(threads)
        .set({ state: sql`${sql.placeholder('state')}`, updatedAt: now() })
        .where(eq(threads.id, sql.placeholder('threadId')))
        .prepare(),
  }
  const statement = <K extends keyof typeof statements>(name: K) =>
    prepared(db, `engine:${name}`, statements[name] as () => unknown) as ReturnType<(typeof statements)[K]>

  function history(threadId: string, upTo: string): HistoryMessage[] {
    const target = statement('target').get({ messageId: upTo })
    if (!target) return []
    const rows = statement('history').all({ threadId, createdAt: target.createdAt }) as Omit<
      HistoryMessage,
      'attachments'
    >[]
    const files = filesForModel(db, [...new Set(rows.flatMap((row) => attachmentIdsOf(row.contents)))])
    return rows.map((row) => {
      const own = attachmentIdsOf(row.contents).flatMap((id) => {
        const file = files.get(id)
        return file ? [[id, file] as const] : []
      })
      return own.length === 0 ? row : { ...row, attachments: Object.fromEntries(own) }
    })
  }

  function settle(job: Job, outcome: 'complete' | 'error' | 'interrupted', error: string | null): void {
    if (job.settled) return
    job.settled = true
    running.delete(job.messageId)
    try {
      store(job, outcome, error)
      hub.finish(job.messageId, outcome === 'complete' ? null : { error: error ?? 'The response failed' })
      if (outcome === 'error') log.warn('generation failed', { messageId: job.messageId, error })
    } catch (failure) {
      // The database refused the answer (disk full, I/O error): the job stays `running` in the table and
      // is run again at the next start; listeners are told now rather than left waiting.
      log.error('could not store an answer', { messageId: job.messageId, error: String(failure) })
      hub.finish(job.messageId, { error: 'The response could not be saved' })
    }
    pump()
  }

  function store(job: Job, outcome: 'complete' | 'error' | 'interrupted', error: string | null): void {
    const now = clock.now()
    const text = hub.text(job.messageId)
    const contents: ThreadsModel.contentBlock[] =
      text === '' ? [...job.blocks] : [{ type: 'text', text }, ...job.blocks]
    db.transaction(() => {
      // A summary stays valid whatever happens to the answer, so it is kept even when the answer fails.
      if (job.compaction) storeSummary(db, job.threadId, job.compaction, now)
      if (contents.length > 0) {
        insertMessageRow(db, { threadId: job.threadId, role: 'assistant', contents, replyTo: job.messageId }, now)
      }
      statement('finish').run({ messageId: job.messageId, status: outcome, error, now })
      // An interrupted answer leaves the thread ready at once: `interrupted` lasts only while stopping.
      statement('threadState').run({ threadId: job.threadId, state: outcome === 'error' ? 'error' : 'ready', now })
    })
  }

  function start(messageId: string, threadId: string): void {
    const now = clock.now()
    const job: Job = { messageId, threadId, blocks: [], stopping: false }
    try {
      const started = db.transaction(() => {
        if (!statement('claim').get({ messageId })) return false
        statement('threadState').run({ threadId, state: 'active', now })
        return true
      })
      // Claimed elsewhere or already settled: nothing will feed this hub entry, so end its listeners now.
      if (!started) {
        hub.finish(messageId, { error: 'The response is no longer pending' })
        return
      }
      running.set(messageId, job)
      run(job)
    } catch (failure) {
      // The pump runs inside other requests' handlers: a database error here must end this answer, not theirs.
      log.error('could not start an answer', { messageId, error: String(failure) })
      settle(job, 'error', 'The response could not be started')
    }
  }

  function run(job: Job): void {
    const { messageId, threadId } = job
    runner.run(messageId, history(threadId, messageId), {
      token: (text) => !closed && hub.push(messageId, text),
      block: (block) => !closed && job.blocks.push(block),
      summary: (text, replaces) => {
        if (!closed) job.compaction = { text, replaces }
      },
      done: () => !closed && settle(job, 'complete', null),
      error: (message) => !closed && settle(job, 'error', message),
      cancelled: () => !closed && settle(job, 'interrupted', 'The response was stopped'),
    })
  }

  function pump(): void {
    while (!draining && running.size < concurrency && queue.length > 0) {
      const next = queue.shift()
      if (next) start(next.messageId, next.threadId)
    }
    if (running.size === 0) for (const resolve of drainWaiters.splice(0)) resolve()
    if (running.size === 0 && queue.length === 0) for (const resolve of idleWaiters.splice(0)) resolve()
  }

  return {
    hub,

    /** Schedules the answer to a user message whose `generations` row was just committed. */
    enqueue(messageId: string, threadId: string): void {
      hub.open(messageId)
      queue.push({ messageId, threadId })
      pump()
    },

    /**
     * Requeues work that a previous process accepted but did not finish, oldest first, and releases
     * threads that were being stopped. Run once at start-up, before serving.
     */
    recover(): number {
      const pending = db
        .select({ messageId: generations.messageId, threadId: generations.threadId, attempts: generations.attempts })
        .from(generations)
        .where(inArray(generations.status, ['queued', 'running']))
        .orderBy(asc(generations.createdAt))
        .all()
      // An answer whose thread was being stopped when the process died was stopped: it is not run again.
      const stopped = new Set(
        db
          .select({ id: threads.id })
          .from(threads)
          .where(eq(threads.state, 'interrupted'))
          .all()
          .map((thread) => thread.id),
      )
      const wasStopped = (job: { threadId: string }) => stopped.has(job.threadId)
      // An answer whose generation was cut short this often is likely what brings the process down:
      // give up on it instead of crashing in a loop.
      const poisoned = pending.filter((job) => !wasStopped(job) && job.attempts >= maxAttempts)
      const retried = pending.filter((job) => !wasStopped(job) && job.attempts < maxAttempts)
      const now = clock.now()
      db.transaction((tx) => {
        for (const job of pending.filter(wasStopped)) {
          tx.update(generations)
            .set({ status: 'interrupted', error: 'The response was stopped', finishedAt: now })
            .where(eq(generations.messageId, job.messageId))
            .run()
        }
        tx.update(generations).set({ status: 'queued' }).where(eq(generations.status, 'running')).run()
        // Each state change moves updated_at, so that clients polling with updated_since see it.
        tx.update(threads).set({ state: 'waiting', updatedAt: now }).where(eq(threads.state, 'active')).run()
        tx.update(threads).set({ state: 'ready', updatedAt: now }).where(eq(threads.state, 'interrupted')).run()
        for (const job of poisoned) {
          tx.update(generations)
            .set({ status: 'error', error: 'The response failed repeatedly', finishedAt: now })
            .where(eq(generations.messageId, job.messageId))
            .run()
          tx.update(threads).set({ state: 'error', updatedAt: now }).where(eq(threads.id, job.threadId)).run()
        }
      })
      for (const { messageId, threadId } of retried) this.enqueue(messageId, threadId)
      if (pending.length > 0)
        log.info('recovered unfinished answers', { requeued: retried.length, failed: poisoned.length })
      return retried.length
    },

    /**
     * Stops the answer a thread is producing: the thread is `interrupted` until the generator has let go,
     * then `ready` with the partial answer kept. Returns false when nothing was running or queued.
     */
    interrupt(threadId: string): boolean {
      // After shutdown the runner's answers are ignored; the next start regenerates what is unfinished.
      if (closed) return false
      const queued = queue.findIndex((item) => item.threadId === threadId)
      if (queued >= 0) {
        const [item] = queue.splice(queued, 1)
        if (!item) return false
        settle({ ...item, blocks: [], stopping: true }, 'interrupted', 'The response was stopped')
        return true
      }
      const job = [...running.values()].find((candidate) => candidate.threadId === threadId)
      if (!job || job.stopping) return false
      job.stopping = true
      db.update(threads).set({ state: 'interrupted', updatedAt: clock.now() }).where(eq(threads.id, threadId)).run()
      runner.cancel(job.messageId)
      return true
    },

    /** False once shutdown has begun: the readiness probe then fails so no new work is routed here. */
    accepting(): boolean {
      return !draining
    },

    /** Resolves when nothing is queued or running (tests and graceful shutdown). */
    idle(): Promise<void> {
      if (running.size === 0 && queue.length === 0) return Promise.resolve()
      return new Promise((resolve) => idleWaiters.push(resolve))
    },

    /**
     * Graceful stop: starts nothing new, lets running answers finish for up to `graceMs`, then tells the
     * listeners of every unfinished answer that it will be generated again after the restart. Unfinished
     * answers stay queued/running in the database, and the next start runs them.
     */
    async close(graceMs = 0): Promise<void> {
      draining = true
      if (running.size > 0 && graceMs > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([
          new Promise<void>((resolve) => drainWaiters.push(resolve)),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, graceMs)
          }),
        ])
        clearTimeout(timer)
      }
      closed = true
      const unfinished = [...running.keys()]
      for (const messageId of [...unfinished, ...queue.map((item) => item.messageId)]) {
        hub.finish(messageId, { error: restartMessage, resumable: true })
      }
      // A shutdown is no crash: give back the attempt these answers' claims counted, so that answers longer
      // than the grace period are not failed as "repeatedly" after three deploys. Queued again, they are run
      // at the next start.
      if (unfinished.length > 0) {
        try {
          db.update(generations)
            .set({ status: 'queued', attempts: sql`max(${generations.attempts} - 1, 0)` })
            .where(and(inArray(generations.messageId, unfinished), eq(generations.status, 'running')))
            .run()
        } catch (failure) {
          log.error('could not requeue unfinished answers', { error: String(failure) })
        }
      }
      await runner.close()
    },
  }
}
