// The generation engine on the main thread: a durable queue (see repository.ts) drained with a concurrency
// limit. It moves answers through their states (job.ts), persists each answer once, when it ends (never token by
// token), and feeds the hub that SSE responses listen to.
//
// Where several instances share the database (a relay is given: PostgreSQL), each claim is a lease this engine
// renews; answers whose instance died are taken over (see `recover`, run periodically then); the text of running
// answers is published as it comes, and answers running elsewhere are followed into this hub (remote.ts), so a
// stream is served by whichever instance it reaches. On SQLite none of that runs.
import { hostname } from 'node:os'
import type { DomainEvents } from '../shared/events'
import { newId } from '../shared/ids'
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import { Hub } from './hub'
import { Job, type Outcome } from './job'
import { roundSeparator } from './providers/model'
import type { AnswerRelay, RelayEvent } from './relay'
import { RemoteAnswers } from './remote'
import type { GenerationRecord, GenerationRepository, PendingAnswer } from './repository'
import { type AnswerTools, LostLease, type ToolPlan } from './tools'
import type { AnswerModels, GenerationRunner, HistoryMessage, JobHandlers, JobModel } from './types'
import { type Prices, roundTokens, UsageMeter } from './usage'

export interface EngineDeps {
  generations: GenerationRepository
  /** Null on a database one process holds (SQLite). */
  relay: AnswerRelay | null
  runner: GenerationRunner
  clock: Clock
  log: Logger
  concurrency: number
  /** How long a claim lasts unless renewed, with a relay. */
  leaseMs: number
  /** Told of every answer this engine stores, before its listeners hear the end (webhooks). */
  events?: Pick<DomainEvents, 'emit'>
  /**
   * Which configured model each answer is asked of, and the thread's instructions, resolved as it is prepared
   * (src/models/). Without it every answer goes to the runner's only model.
   */
  models?: AnswerModels
  /** Told of what the runner reports of providers (the operators' metrics, src/metrics/). */
  observer?: ProviderObserver
  /** Each model's price (the models list), for an answer's cost; none: no answer has a cost. */
  prices?: Prices
  /**
   * The tools of the organizations' MCP servers an answer may call (src/connectors/ implements it); without it, or
   * without `models`, answers are offered none.
   */
  tools?: AnswerTools
}

/** What an answer's generator met, by the configured model asked (null: the runner's only one). */
export interface ProviderObserver {
  /** The answer failed; `kind` as providers/failures.ts names it, `worker` when the worker died, or `unexpected`. */
  failed(kind: string, model: string | null): void
  /** A request to the provider was made again after a transient failure of this kind. */
  retried(kind: string, model: string | null): void
}

export const restartMessage = 'The server is restarting; this answer will be generated again once it is back'

const stoppedMessage = 'The response was stopped'

/** Attempts an answer gets across restarts before its thread moves to `error`. */
const maxAttempts = 3

const recoveryErrors = { stoppedError: stoppedMessage, failedError: 'The response failed repeatedly' }

/**
 * The engine's own life. Serving: answers start as places free up. Draining (a shutdown's grace period): running
 * answers may finish, nothing new starts. Closed: the engine ignores the runner.
 */
type Phase = 'serving' | 'draining' | 'closed'

export type GenerationEngine = ReturnType<typeof createGenerationEngine>

/** The engine as features hold it: answers start only through the conversation use case (threads/conversation.ts). */
export type AnswerEngine = Omit<GenerationEngine, 'enqueue'>

export function createGenerationEngine({
  generations,
  relay,
  runner,
  clock,
  log,
  concurrency,
  leaseMs,
  events,
  models,
  observer,
  prices,
  tools,
}: EngineDeps) {
  const hub = new Hub()
  /** Who holds this engine's leases, as the operator reads it in the database and the logs. */
  const holder = `${hostname()}:${process.pid}:${newId().slice(-8)}`
  /** Leases are renewed, and abandoned work looked for, four times per lease. */
  const upkeepMs = Math.max(250, Math.floor(leaseMs / 4))
  const remote = relay ? new RemoteAnswers(hub, relay, log, 1000) : null
  const counts = { takenOver: 0, lostLeases: 0, handedOver: 0 }
  /** Answers waiting for a place, oldest first. */
  const queue: PendingAnswer[] = []
  /** Answers being claimed, generated or stored: each holds one of the `concurrency` places. */
  const running = new Map<string, Job>()
  /**
   * Answers queued again (a regenerate) while their previous run was still being stored here: its hub entry is the
   * previous run's until it has told its listeners the end, so the new run is queued only once it has left.
   */
  const again = new Map<string, string>()
  const waiters = { idle: [] as (() => void)[], drained: [] as (() => void)[] }
  let phase: Phase = 'serving'
  let upkeepTimer: ReturnType<typeof setInterval> | undefined

  /** Stores how an answer ended; once committed, tells `answer.stored` before anything else hears of the end. */
  async function finish(answer: Parameters<GenerationRepository['finish']>[0], now: number): Promise<boolean> {
    const stored = await generations.finish(answer, now)
    const { threadId, messageId, outcome } = answer
    if (stored) {
      const { usage } = answer
      await events?.emit({
        type: 'answer.stored',
        threadId,
        messageId,
        outcome,
        model: answer.model ?? null,
        ...(usage ? { usage } : {}),
      })
    }
    return stored
  }

  function settle(job: Job, outcome: Outcome, error: string | null): Promise<void> {
    return job.settle(() => persist(job, outcome, error))
  }

  /** Stores the answer, then frees its place: until then it is running (idle and a graceful close wait for it). */
  async function persist(job: Job, outcome: Outcome, error: string | null): Promise<void> {
    const { messageId } = job
    // A stopped answer's calls are being cut short: how each ended is recorded before the answer is stored with them.
    job.toolAbort.abort()
    await Promise.allSettled(job.toolRounds)
    try {
      // Not waiting for the last chunk to be published: other instances' streams complete from the stored answer.
      const stored = await finish(job.ended(outcome, error, hub.text(messageId), prices), clock.now())
      if (stored) {
        // Listeners hear the end once it is stored: a stream's `done` promises that the thread takes messages again.
        endListeners(job, outcome === 'complete' ? null : { error: error ?? 'The response failed' })
      } else if (job.replaced) {
        hub.end(job.replaced, { error: 'The response is no longer pending' })
      } else {
        // Another instance holds the answer now (it took over a lease this one lost), or it ended elsewhere.
        followElsewhere(messageId)
      }
      if (outcome === 'error' && stored) log.warn('generation failed', { messageId, error })
    } catch (failure) {
      // The database refused the answer (disk full, I/O error): the job stays `running` in the table and
      // is run again at the next start; listeners are told now rather than left waiting.
      log.error('could not store an answer', { messageId, error: String(failure) })
      endListeners(job, { error: 'The response could not be saved' })
    }
    running.delete(messageId)
    const threadId = again.get(messageId)
    if (threadId !== undefined) {
      again.delete(messageId)
      engine.enqueue(messageId, threadId)
      return
    }
    pump()
  }

  /** Tells the job's listeners how it ended: in the hub, or on the entry a regenerate replaced (Hub.replace). */
  function endListeners(job: Job, outcome: { error: string } | null): void {
    if (job.replaced) hub.end(job.replaced, outcome)
    else hub.finish(job.messageId, outcome)
  }

  /**
   * The answer is not this engine's to generate (claimed elsewhere, ended, or its lease lost): with a relay its
   * listeners follow it wherever it is; without one nothing else feeds this hub entry, so they hear the end now.
   */
  function followElsewhere(messageId: string): void {
    // Taken over from the queue without a hub entry: nobody here waits for it.
    if (!hub.isLive(messageId)) return
    // With a relay, whoever listens (or subscribes meanwhile) hears it wherever it runs, or how it ended: a claim
    // lost to an answer that had just ended must not end its streams with an error.
    if (remote) remote.follow(messageId)
    else hub.finish(messageId, { error: 'The response is no longer pending' })
  }

  /** Starts what waits, up to the free places, and tells who waits for the engine to empty. */
  function pump(): void {
    while (phase === 'serving' && running.size < concurrency && queue.length > 0) {
      const next = queue.shift()
      if (next) start(next)
    }
    if (running.size === 0) for (const resolve of waiters.drained.splice(0)) resolve()
    if (running.size === 0 && queue.length === 0) for (const resolve of waiters.idle.splice(0)) resolve()
  }

  /** Takes a place at once, then claims the answer and hands it to the runner. */
  function start(answer: PendingAnswer): void {
    const job = new Job(answer.messageId, answer.threadId)
    running.set(job.messageId, job)
    void claimAndRun(job)
  }

  async function claimAndRun(job: Job): Promise<void> {
    try {
      if (!(await claim(job))) return
      const history = await generations.history(job.threadId, job.messageId)
      const asked: JobModel | undefined = models ? await models.prepare(job.threadId, job.messageId) : undefined
      job.model = asked?.model ?? null
      if (tools && asked && job.lease !== null) {
        job.tools = { threadId: job.threadId, messageId: job.messageId, lease: job.lease, model: asked.model }
      }
      const plan = job.tools ? await tools?.prepare(job.tools, history, clock.now(), job.toolAbort.signal) : null
      // Shut down meanwhile: the claim is given back with the others (see close).
      if (phase === 'closed') {
        running.delete(job.messageId)
        return
      }
      // Stopped meanwhile, before the runner knew of it: it ends as a stopped answer that produced nothing.
      if (job.stopping) return settle(job, 'interrupted', stoppedMessage)
      job.state = 'generating'
      if (!plan) {
        job.meter = new UsageMeter(history)
        runner.run(job.messageId, history, handlersOf(job), asked)
        return
      }
      const hidden = new Set(plan.hide)
      const shown = history.filter((message) => !hidden.has(message.id))
      resume(job, shown, plan)
      // The chain's next call waits for a person: the answer is the question, and no model is asked.
      if (plan.ask) {
        job.blocks.push(plan.ask)
        return settle(job, 'complete', null)
      }
      const { offered, rounds, final, question } = plan
      runner.run(job.messageId, shown, handlersOf(job), {
        ...(asked as JobModel),
        tools: { offered, rounds, final, question },
      })
    } catch (failure) {
      // Another instance took the answer over (or it ended) while its tools were prepared: the end below is not stored,
      // and the answer is followed where it runs, as when a renewal finds the lease lost.
      if (failure instanceof LostLease) {
        log.warn('lost the lease on an answer while starting it; another instance generates it', {
          messageId: job.messageId,
        })
      } else {
        // A database error ends this answer, and only this one: nothing else awaits its start.
        log.error('could not start an answer', { messageId: job.messageId, error: String(failure) })
      }
      await settle(job, 'error', 'The response could not be started')
    }
  }

  /**
   * Picks up the rounds this run recorded before a takeover: their text is the answer's start again (the hub's
   * listeners hear only what they lack), and what they used is metered. An answer that only asks a person about a
   * call asked no model: without resumed rounds it has no usage.
   */
  function resume(job: Job, history: HistoryMessage[], plan: ToolPlan): void {
    if (!plan.ask || plan.resumed.length > 0) {
      job.meter = new UsageMeter(history)
      for (const usage of plan.resumedUsage) job.meter.report(usage, 'answer')
      for (const round of plan.resumed) job.meter.round(roundTokens(round))
    }
    // Each round's text is what the hub got since the round before, separators included: joined, they are the start.
    const text = plan.resumed.map((round) => round.text).join('')
    if (text !== '') {
      hub.push(job.messageId, text)
      if (relay) job.publish(relay, hub, log)
      job.separate = true
    }
    job.roundOffset = hub.text(job.messageId).length
  }

  /** Claims the answer under a new lease; one claimed elsewhere (or ended) frees its place and is followed. */
  async function claim(job: Job): Promise<boolean> {
    const lease = { id: newId(), holder, expiresAt: clock.now() + leaseMs }
    // Known before the claim commits, so that a shutdown meanwhile gives it back (see close).
    job.lease = lease.id
    if (!(await generations.claim(job, clock.now(), lease))) {
      running.delete(job.messageId)
      followElsewhere(job.messageId)
      pump()
      return false
    }
    job.claimed()
    // Taken over from the queue, it has no hub entry yet (see takeOver).
    hub.open(job.messageId)
    // Followed until now (its stream came here first): this engine generates it from the start.
    if (remote?.has(job.messageId)) {
      remote.unfollow(job.messageId)
      hub.restart(job.messageId)
    }
    return true
  }

  /** What the runner says about the job, ignored once the engine is closed. */
  function handlersOf(job: Job): JobHandlers {
    const end = (outcome: Outcome, error: string | null): void => {
      if (phase !== 'closed') void settle(job, outcome, error)
    }
    return {
      token: (text) => {
        if (phase === 'closed') return
        job.meter?.produced()
        // The first text after resumed rounds is a new round's, set apart as the model's loop sets its rounds.
        if (job.separate) {
          job.separate = false
          hub.push(job.messageId, roundSeparator)
        }
        hub.push(job.messageId, text)
        if (relay) job.publish(relay, hub, log)
      },
      block: (block) => {
        if (phase === 'closed') return
        job.meter?.produced()
        job.blocks.push(block)
      },
      usage: (usage, of) => {
        if (phase === 'closed') return
        job.meter?.report(usage, of)
        if (of === 'answer') job.lastUsage = usage
      },
      summary: (text, replaces) => {
        if (phase !== 'closed') job.compaction = { text, replaces }
      },
      done: () => end('complete', null),
      error: (message, kind) => {
        if (phase !== 'closed') observer?.failed(kind ?? 'unexpected', job.model)
        end('error', message)
      },
      cancelled: () => end('interrupted', stoppedMessage),
      retried: (kind) => {
        if (phase !== 'closed') observer?.retried(kind, job.model)
      },
      ...(tools && job.tools ? { toolCalls: (round, calls) => toolRound(job, tools, round, calls) } : {}),
    }
  }

  /**
   * A round of the model's tool calls: its text is what the hub got since the round before. A call that needs a
   * person's approval ends the answer with the question (`pause`).
   */
  async function toolRound(
    job: Job,
    tools: AnswerTools,
    round: number,
    calls: Parameters<NonNullable<JobHandlers['toolCalls']>>[1],
  ): Promise<Awaited<ReturnType<NonNullable<JobHandlers['toolCalls']>>>> {
    const all = hub.text(job.messageId)
    const text = all.slice(job.roundOffset)
    job.roundOffset = all.length
    const usage = job.lastUsage
    job.lastUsage = undefined
    const work = tools.round(
      job.tools as NonNullable<Job['tools']>,
      { round, text, calls, usage },
      job.toolAbort.signal,
    )
    job.toolRounds.add(work)
    try {
      const out = await work
      if (phase === 'closed') return out.reply
      if (out.ask) job.blocks.push(out.ask)
      if (out.reply.next !== 'pause') job.meter?.round(roundTokens({ text, calls, results: out.reply.results }))
      return out.reply
    } finally {
      job.toolRounds.delete(work)
    }
  }

  /** Renews this engine's leases: a lost one's generation is cut short, a stop asked elsewhere is carried out. */
  async function renewLeases(): Promise<void> {
    const held = [...running.values()].filter((job) => job.held && job.state !== 'storing')
    if (held.length === 0) return
    const { lost, stopping } = await generations.renew(
      held.map((job) => job.lease as string),
      clock.now() + leaseMs,
    )
    const byLease = new Map(held.map((job) => [job.lease, job]))
    for (const lease of lost) {
      const job = byLease.get(lease)
      if (!job || job.state === 'storing') continue
      counts.lostLeases++
      log.warn('lost the lease on an answer; another instance generates it', { messageId: job.messageId })
      job.stopping = true
      runner.cancel(job.messageId)
      // After the cancel: the worker hears it before the cut-short calls' results, and asks the model nothing more.
      job.toolAbort.abort()
    }
    for (const lease of stopping) {
      const job = byLease.get(lease)
      if (job) void engine.interrupt(job.threadId)
    }
  }

  /** Takes over what other instances left behind, up to the free places. */
  async function takeOver(): Promise<number> {
    if (phase !== 'serving') return 0
    const limit = concurrency - running.size - queue.length
    const policy = { maxAttempts, ...recoveryErrors, limit: relay ? Math.max(0, limit) : Infinity, graceMs: upkeepMs }
    const { requeued, failed, stopped, abandoned } = await generations.recover(policy, clock.now())
    const known = new Set([...running.keys(), ...queue.map((item) => item.messageId)])
    const fresh = requeued.filter((item) => !known.has(item.messageId))
    // With a relay the answers are queued here without a hub entry: one read queued may have ended by now (here or
    // elsewhere), and a stream must not subscribe to it as if it were live. The claim opens the entry; a stream
    // meanwhile follows it from the database (watch). Without one (SQLite, at start-up) they are this process's own.
    for (const item of fresh) {
      if (!relay) hub.open(item.messageId)
      queue.push(item)
    }
    pump()
    if (abandoned > 0) counts.takenOver += abandoned
    if (fresh.length + failed + stopped > 0) {
      log.info(relay ? 'took over unfinished answers' : 'recovered unfinished answers', {
        requeued: fresh.length,
        failed,
        stopped,
        ...(relay ? { abandoned } : {}),
      })
    }
    return fresh.length
  }

  function takeOverInBackground(): void {
    void takeOver().catch((error) => log.warn('could not take over answers', { error: String(error) }))
  }

  /**
   * Hears the other instances, then renews leases and takes over abandoned work every `upkeepMs`, one tick at a
   * time: on a slow database, piled-up ticks would hold the pool's connections that the renewals themselves need.
   */
  async function startUpkeep(relay: AnswerRelay): Promise<void> {
    await relay.listen(hear, () => {
      // Notifications may have been lost with the connection: read what they would have said.
      remote?.pollAll()
      takeOverInBackground()
    })
    let ticks = 0
    let ticking = false
    upkeepTimer = setInterval(() => {
      // A line a minute for the operator: what this instance runs and follows, and what it took over or lost.
      if (++ticks % Math.round(60_000 / upkeepMs) === 0) log.info('generation', engine.stats())
      if (ticking) return
      ticking = true
      renewLeases()
        .then(takeOver)
        .catch((error) => log.warn('could not renew leases or take over answers', { error: String(error) }))
        .finally(() => {
          ticking = false
        })
    }, upkeepMs)
    // The server's port keeps the process alive; this timer alone must not.
    upkeepTimer.unref()
  }

  /** Stops a queued answer before it took a place: it is stored as stopped, having produced nothing. */
  async function stopQueued(at: number): Promise<boolean> {
    const [item] = queue.splice(at, 1)
    if (!item) return false
    const stopped = new Job(item.messageId, item.threadId)
    stopped.stopping = true
    await settle(stopped, 'interrupted', stoppedMessage)
    return true
  }

  /**
   * Stops a regenerated answer still waiting for its previous run to be stored (`again`): once that run has left,
   * the new one is stored as stopped, having produced nothing.
   */
  async function stopAgain(messageId: string, threadId: string): Promise<boolean> {
    again.delete(messageId)
    await running.get(messageId)?.stored
    const stopped = new Job(messageId, threadId)
    stopped.stopping = true
    await settle(stopped, 'interrupted', stoppedMessage)
    return true
  }

  /** Stops an answer that holds a place here: the thread is marked, and the runner let go. */
  async function stopRunning(job: Job): Promise<boolean> {
    // One already ending (its answer being stored) has nothing left to stop.
    if (job.stopping || job.state === 'storing') return false
    job.stopping = true
    await generations.markStopping(job.threadId, clock.now())
    runner.cancel(job.messageId)
    // After the cancel: the worker hears it before the cut-short calls' results, and asks the model nothing more.
    job.toolAbort.abort()
    // A generator that let go at once (during cancel) has its answer being stored: the stop ends with it.
    await job.stored
    return true
  }

  /**
   * Stops an answer this engine neither runs nor has queued: one queued by another instance is ended here; one
   * running elsewhere is marked as being stopped, its lease holder told (and, should the notice be lost, it sees
   * the mark when it next renews), and the stop waits for the answer's end as a local one does.
   */
  async function interruptElsewhere(threadId: string): Promise<boolean> {
    const pending = await generations.pending(threadId)
    if (!pending) return false
    if (pending.status === 'queued') {
      const ended = { ...pending, outcome: 'interrupted' as const, error: stoppedMessage, contents: [], lease: null }
      if (await finish(ended, clock.now())) return true
      // Claimed meanwhile: stopped as a running one.
    }
    await generations.markStopping(threadId, clock.now())
    await relay?.stop(threadId)
    await answerEnd(pending.messageId, 2 * leaseMs)
    return true
  }

  /** Resolves once the answer has ended (wherever it runs), or after `ms`. */
  async function answerEnd(messageId: string, ms: number): Promise<void> {
    await engine.watch(messageId)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(end, ms)
      function end(): void {
        clearTimeout(timer)
        subscription?.leave(listener)
        resolve()
      }
      const listener = { token() {}, done: end, error: end }
      const subscription = hub.subscribe(messageId, hub.text(messageId).length, listener)
      if (!subscription) end()
    })
  }

  /** What another instance says: text for followed answers, a stop for one of ours, or work to take. */
  function hear(event: RelayEvent): void {
    if (phase === 'closed') return
    if (event.kind === 'stop') {
      // Only the lease holder acts; the instance that asked hears its own notice and finds nothing running here.
      if ([...running.values()].some((job) => job.threadId === event.threadId && job.held)) {
        void engine.interrupt(event.threadId)
      }
      return
    }
    if (event.kind === 'work') {
      takeOverInBackground()
      return
    }
    if (event.kind === 'claimed' || event.kind === 'ended') {
      // Queued here, but claimed (or stopped) elsewhere: its place here goes to the next, its listeners follow it.
      const at = queue.findIndex((item) => item.messageId === event.messageId)
      if (at >= 0) {
        queue.splice(at, 1)
        followElsewhere(event.messageId)
      }
    }
    remote?.hear(event)
  }

  /** Resolves once nothing holds a place, or after `graceMs`. */
  async function placesFree(graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      new Promise<void>((resolve) => waiters.drained.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs)
      }),
    ])
    clearTimeout(timer)
  }

  /**
   * A shutdown is no crash: gives back the attempt these answers' claims counted, so that answers longer than the
   * grace period are not failed as "repeatedly" after three deploys. Queued again, they are run at the next start,
   * or at once by another instance.
   */
  async function giveBack(unfinished: Job[]): Promise<void> {
    const held = unfinished.flatMap((job) => (job.lease ? [{ messageId: job.messageId, lease: job.lease }] : []))
    if (held.length === 0) return
    try {
      await generations.release(held)
      counts.handedOver += held.length
      if (relay) log.info('handed unfinished answers over to other instances', { answers: held.length })
    } catch (failure) {
      log.error('could not requeue unfinished answers', { error: String(failure) })
    }
  }

  const engine = {
    hub,

    /** Schedules the answer to a user message whose `generations` row was just committed. */
    enqueue(messageId: string, threadId: string): void {
      // Its previous run committed (the thread took the regenerate) but is still telling its end: see `again`. Who
      // listens from now on hears the new answer; the previous one's listeners hear it end.
      const previous = running.get(messageId)
      if (previous?.state === 'storing') {
        previous.replaced ??= hub.replace(messageId)
        again.set(messageId, threadId)
        return
      }
      hub.open(messageId)
      queue.push({ messageId, threadId })
      pump()
    },

    /**
     * Makes an answer that is queued or running on another instance live in this hub, so that it can be
     * subscribed to. Nothing to do without a relay, or when it is live here already.
     */
    async watch(messageId: string, known?: GenerationRecord | null): Promise<void> {
      if (!remote || hub.isLive(messageId)) return
      // The caller may have read the answer's record already (a stream's 404 check): not read twice.
      const generation = known === undefined ? await generations.find(messageId) : known
      const pending = generation?.status === 'queued' || generation?.status === 'running'
      if (pending && !hub.isLive(messageId)) remote.follow(messageId)
    },

    /** For operators and tests: what this instance runs, follows, and has taken over or lost since it started. */
    stats() {
      return { holder, running: running.size, queued: queue.length, following: remote?.size ?? 0, ...counts }
    },

    /**
     * Requeues work that a previous process accepted but did not finish, oldest first, and releases
     * threads that were being stopped. Run once at start-up, before serving. An answer whose thread was
     * being stopped when the process died was stopped: it is not run again. One whose generation was cut
     * short `maxAttempts` times is likely what brings the process down: it fails instead of crashing in a loop.
     */
    async recover(): Promise<number> {
      const taken = await takeOver()
      if (relay && !upkeepTimer) await startUpkeep(relay)
      return taken
    },

    /**
     * Stops the answer a thread is producing: the thread is `interrupted` until the generator has let go,
     * then `ready` with the partial answer kept. Returns false when nothing was running or queued.
     */
    async interrupt(threadId: string): Promise<boolean> {
      // After shutdown the runner's answers are ignored; the next start regenerates what is unfinished.
      if (phase === 'closed') return false
      const queued = queue.findIndex((item) => item.threadId === threadId)
      if (queued >= 0) return stopQueued(queued)
      const regenerated = [...again].find(([, thread]) => thread === threadId)?.[0]
      if (regenerated !== undefined) return stopAgain(regenerated, threadId)
      const job = [...running.values()].find((candidate) => candidate.threadId === threadId)
      if (job) return stopRunning(job)
      return relay ? interruptElsewhere(threadId) : false
    },

    /** False once shutdown has begun: the readiness probe then fails so no new work is routed here. */
    accepting(): boolean {
      return phase === 'serving'
    },

    /** Resolves when nothing is queued or running (tests and graceful shutdown). */
    idle(): Promise<void> {
      if (running.size === 0 && queue.length === 0) return Promise.resolve()
      return new Promise((resolve) => waiters.idle.push(resolve))
    },

    /**
     * Graceful stop: starts nothing new, lets running answers finish for up to `graceMs`, then tells the
     * listeners of every unfinished answer that it will be generated again after the restart. Unfinished
     * answers are queued again in the database, and the next start runs them; where other instances share the
     * database, one of them takes each at once (released with a notice, not left to a lease's expiry).
     */
    async close(graceMs = 0): Promise<void> {
      phase = 'draining'
      if (running.size > 0 && graceMs > 0) await placesFree(graceMs)
      // Leases were renewed through the grace period, so that no other instance took these answers meanwhile.
      clearInterval(upkeepTimer)
      phase = 'closed'
      // Answers being stored are finished, not given back.
      const unfinished = [...running.values()].filter((job) => job.state !== 'storing')
      // Their tool calls are cancelled (and recorded so, when there is time): none is ever sent again.
      for (const job of unfinished) job.toolAbort.abort()
      for (const messageId of [...unfinished.map((job) => job.messageId), ...queue.map((item) => item.messageId)]) {
        hub.finish(messageId, { error: restartMessage, resumable: true })
      }
      remote?.close(restartMessage)
      await giveBack(unfinished)
      await relay?.close()
      await runner.close()
    },
  }
  return engine
}
