// The generation engine on the main thread: a durable queue (see repository.ts) drained with a concurrency
// limit. It moves answers through their states, persists each answer once, when it ends (never token by
// token), and feeds the hub that SSE responses listen to.
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import type { ThreadsModel } from '../threads/model'
import { Hub } from './hub'
import type { Compaction, GenerationRepository, PendingAnswer } from './repository'
import type { GenerationRunner } from './types'

export interface EngineDeps {
  generations: GenerationRepository
  runner: GenerationRunner
  clock: Clock
  log: Logger
  concurrency: number
}

interface Job extends PendingAnswer {
  blocks: ThreadsModel.contentBlock[]
  stopping: boolean
  compaction?: Compaction
  /**
   * Set by the first settle, until the answer is stored: a worker that fails after a failed start must not store
   * the answer twice, and a stop whose generator let go at once waits for it.
   */
  settled?: Promise<void>
}

export const restartMessage = 'The server is restarting; this answer will be generated again once it is back'

const stoppedMessage = 'The response was stopped'

/** Attempts an answer gets across restarts before its thread moves to `error`. */
const maxAttempts = 3

export type GenerationEngine = ReturnType<typeof createGenerationEngine>

export function createGenerationEngine({ generations, runner, clock, log, concurrency }: EngineDeps) {
  const hub = new Hub()
  const queue: PendingAnswer[] = []
  /** Answers being claimed, generated or stored: each holds one of the `concurrency` places. */
  const running = new Map<string, Job>()
  /** Draining: running answers may finish, nothing new starts. Closed: the engine ignores the runner. */
  let draining = false
  let closed = false
  const idleWaiters: (() => void)[] = []
  const drainWaiters: (() => void)[] = []

  function settle(job: Job, outcome: 'complete' | 'error' | 'interrupted', error: string | null): Promise<void> {
    job.settled ??= store(job, outcome, error)
    return job.settled
  }

  /** Stores the answer, then frees its place: until then it is running (idle and a graceful close wait for it). */
  async function store(job: Job, outcome: 'complete' | 'error' | 'interrupted', error: string | null): Promise<void> {
    const text = hub.text(job.messageId)
    const contents: ThreadsModel.contentBlock[] =
      text === '' ? [...job.blocks] : [{ type: 'text', text }, ...job.blocks]
    try {
      const { messageId, threadId, compaction } = job
      await generations.finish({ messageId, threadId, outcome, error, contents, compaction }, clock.now())
      // Listeners hear the end once it is stored: a stream's `done` promises that the thread takes messages again.
      hub.finish(job.messageId, outcome === 'complete' ? null : { error: error ?? 'The response failed' })
      if (outcome === 'error') log.warn('generation failed', { messageId: job.messageId, error })
    } catch (failure) {
      // The database refused the answer (disk full, I/O error): the job stays `running` in the table and
      // is run again at the next start; listeners are told now rather than left waiting.
      log.error('could not store an answer', { messageId: job.messageId, error: String(failure) })
      hub.finish(job.messageId, { error: 'The response could not be saved' })
    }
    running.delete(job.messageId)
    pump()
  }

  /** Takes a place at once, then claims the answer and hands it to the runner. */
  function start(answer: PendingAnswer): void {
    const job: Job = { ...answer, blocks: [], stopping: false }
    running.set(job.messageId, job)
    void claimAndRun(job)
  }

  async function claimAndRun(job: Job): Promise<void> {
    const { messageId, threadId } = job
    try {
      const claimed = await generations.claim(job, clock.now())
      // Claimed elsewhere or already settled: nothing will feed this hub entry, so end its listeners now.
      if (!claimed) {
        running.delete(messageId)
        hub.finish(messageId, { error: 'The response is no longer pending' })
        return pump()
      }
      const history = await generations.history(threadId, messageId)
      // Shut down meanwhile: the claim is given back with the others (see close).
      if (closed) {
        running.delete(messageId)
        return
      }
      // Stopped meanwhile, before the runner knew of it: it ends as a stopped answer that produced nothing.
      if (job.stopping) return settle(job, 'interrupted', stoppedMessage)
      const end = (outcome: 'complete' | 'error' | 'interrupted', error: string | null): void => {
        if (!closed) void settle(job, outcome, error)
      }
      runner.run(messageId, history, {
        token: (text) => !closed && hub.push(messageId, text),
        block: (block) => !closed && job.blocks.push(block),
        summary: (text, replaces) => {
          if (!closed) job.compaction = { text, replaces }
        },
        done: () => end('complete', null),
        error: (message) => end('error', message),
        cancelled: () => end('interrupted', stoppedMessage),
      })
    } catch (failure) {
      // A database error ends this answer, and only this one: nothing else awaits its start.
      log.error('could not start an answer', { messageId, error: String(failure) })
      await settle(job, 'error', 'The response could not be started')
    }
  }

  function pump(): void {
    while (!draining && running.size < concurrency && queue.length > 0) {
      const next = queue.shift()
      if (next) start(next)
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
     * threads that were being stopped. Run once at start-up, before serving. An answer whose thread was
     * being stopped when the process died was stopped: it is not run again. One whose generation was cut
     * short `maxAttempts` times is likely what brings the process down: it fails instead of crashing in a loop.
     */
    async recover(): Promise<number> {
      const policy = { maxAttempts, stoppedError: stoppedMessage, failedError: 'The response failed repeatedly' }
      const { requeued, failed, stopped } = await generations.recover(policy, clock.now())
      for (const { messageId, threadId } of requeued) this.enqueue(messageId, threadId)
      if (requeued.length + failed + stopped > 0) {
        log.info('recovered unfinished answers', { requeued: requeued.length, failed })
      }
      return requeued.length
    },

    /**
     * Stops the answer a thread is producing: the thread is `interrupted` until the generator has let go,
     * then `ready` with the partial answer kept. Returns false when nothing was running or queued.
     */
    async interrupt(threadId: string): Promise<boolean> {
      // After shutdown the runner's answers are ignored; the next start regenerates what is unfinished.
      if (closed) return false
      const queued = queue.findIndex((item) => item.threadId === threadId)
      if (queued >= 0) {
        const [item] = queue.splice(queued, 1)
        if (!item) return false
        await settle({ ...item, blocks: [], stopping: true }, 'interrupted', stoppedMessage)
        return true
      }
      const job = [...running.values()].find((candidate) => candidate.threadId === threadId)
      // One already ending (its answer being stored) has nothing left to stop.
      if (!job || job.stopping || job.settled) return false
      job.stopping = true
      await generations.markStopping(threadId, clock.now())
      runner.cancel(job.messageId)
      // A generator that let go at once (during cancel) has its answer being stored: the stop ends with it.
      await job.settled
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
      // Answers being stored are finished, not given back.
      const unfinished = [...running.values()].filter((job) => !job.settled).map((job) => job.messageId)
      for (const messageId of [...unfinished, ...queue.map((item) => item.messageId)]) {
        hub.finish(messageId, { error: restartMessage, resumable: true })
      }
      // A shutdown is no crash: give back the attempt these answers' claims counted, so that answers longer
      // than the grace period are not failed as "repeatedly" after three deploys. Queued again, they are run
      // at the next start.
      if (unfinished.length > 0) {
        try {
          await generations.release(unfinished)
        } catch (failure) {
          log.error('could not requeue unfinished answers', { error: String(failure) })
        }
      }
      await runner.close()
    },
  }
}
