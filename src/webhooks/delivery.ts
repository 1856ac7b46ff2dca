// The delivery worker, one per instance: it claims due deliveries from the queue in the database (so they survive a
// restart, and on PostgreSQL any instance sends them), signs and posts each to its endpoint's judged address, and
// records every attempt. A failure is tried again after an exponential back-off for up to a day; an endpoint whose
// attempts have all failed for three days is disabled, with the reason shown to admins.
import { performance } from 'node:perf_hooks'
import { newId } from '../shared/ids'
import type { Logger } from '../shared/log'
import { OutboundRefused, type Resolver } from '../shared/outbound/addresses'
import { pinnedFetch } from '../shared/outbound/guarded-fetch'
import { type Clock, dayMs, toIso } from '../shared/time'
import type { ClaimedDelivery, WebhookRepository } from './repository'
import { signatureHeaders } from './signing'

export interface RetryPolicy {
  /** The wait after the first failed attempt; each later one doubles it, up to `maxDelayMs`. */
  baseMs: number
  maxDelayMs: number
  /** No attempt is scheduled later than this after the event: the delivery fails instead. */
  giveUpAfterMs: number
  /** An endpoint failing for this long (every attempt since the first failure) is disabled. */
  disableAfterMs: number
}

/** 30 s, 1, 2, 4… minutes, then every 4 hours: 14 attempts within 21 hours. */
export const defaultRetryPolicy: RetryPolicy = {
  baseMs: 30_000,
  maxDelayMs: 4 * 60 * 60_000,
  giveUpAfterMs: dayMs,
  disableAfterMs: 3 * dayMs,
}

export interface DeliveryDeps {
  webhooks: WebhookRepository
  clock: Clock
  log: Logger
  allowPrivateNetworks: boolean
  /** Per attempt, the name's lookup included. */
  timeoutMs: number
  retry?: RetryPolicy
  resolve?: Resolver
  /** How often the queue is read for work other instances queued, or retries that came due. */
  pollMs?: number
  /** Deliveries sent at once. */
  concurrency?: number
  /**
   * Told of every attempt recorded (the operators' metrics): `delivered`, `retrying` (failed, tried again later) or
   * `failed` (failed, and given up on).
   */
  attempted?: (result: AttemptResult) => void
}

export type AttemptResult = 'delivered' | 'retrying' | 'failed'

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>

/** The wait before attempt `attempts + 1`, after `attempts` failed ones. */
export function retryDelay(policy: RetryPolicy, attempts: number): number {
  return Math.min(policy.baseMs * 2 ** Math.max(0, attempts - 1), policy.maxDelayMs)
}

const userAgent = 'Threadhouse-Webhooks/1'

export function createDeliveryWorker(deps: DeliveryDeps) {
  const retry = deps.retry ?? defaultRetryPolicy
  const concurrency = deps.concurrency ?? 8
  // A claim outlives one attempt, however slow: another instance takes the delivery only once this one surely gave up.
  const leaseMs = 2 * deps.timeoutMs + 5000
  let timer: ReturnType<typeof setInterval> | undefined
  let running: Promise<number> | null = null
  let again = false
  let stopped = false

  /** One attempt, its outcome recorded; never throws for the receiver's sake. */
  async function attempt(delivery: ClaimedDelivery, lease: string): Promise<void> {
    const started = performance.now()
    const url = new URL(delivery.url)
    let responseStatus: number | null = null
    let error: string | null = null
    const signal = AbortSignal.timeout(deps.timeoutMs)
    try {
      // The receiver compares the timestamp with its own clock: it is the wall clock's, whatever clock schedules.
      const headers = {
        'content-type': 'application/json',
        'user-agent': userAgent,
        ...signatureHeaders(delivery.secret, delivery.id, Math.floor(Date.now() / 1000), delivery.payload),
      }
      // A redirect comes back as it is, to be recorded with its status.
      const response = await pinnedFetch(
        url,
        { method: 'POST', headers, body: delivery.payload, signal },
        { allowPrivateNetworks: deps.allowPrivateNetworks, resolve: deps.resolve },
      )
      responseStatus = response.status
      // Only the status matters: the body is never read, so a receiver cannot make the worker hold a large one.
      await response.body?.cancel().catch(() => {})
      if (response.status < 200 || response.status >= 300) {
        error =
          response.status >= 300 && response.status < 400
            ? `HTTP ${response.status}: redirects are not followed`
            : `HTTP ${response.status}`
      }
    } catch (failure) {
      if (failure instanceof OutboundRefused) error = `Refused: ${failure.message}`
      else if (signal.aborted) error = `No answer within ${deps.timeoutMs / 1000} s`
      else error = failure instanceof Error ? failure.message : String(failure)
    }
    const at = deps.clock.now()
    const attempts = delivery.attempts + 1
    const nextAttemptAt = at + retryDelay(retry, attempts)
    const status =
      error === null ? 'delivered' : nextAttemptAt - delivery.createdAt > retry.giveUpAfterMs ? 'failed' : 'pending'
    const recorded = await deps.webhooks.recordAttempt({
      deliveryId: delivery.id,
      endpointId: delivery.endpointId,
      lease,
      at,
      durationMs: Math.round(performance.now() - started),
      responseStatus,
      error,
      status,
      nextAttemptAt: status === 'pending' ? nextAttemptAt : at,
      disable:
        error === null
          ? null
          : {
              ifFailingSince: at - retry.disableAfterMs,
              reason: `Disabled automatically on ${toIso(at)}: every delivery attempt failed for ${Math.round(retry.disableAfterMs / dayMs)} days (last: ${error}).`,
            },
    })
    if (recorded) deps.attempted?.(status === 'pending' ? 'retrying' : status)
    if (!recorded) deps.log.warn('a webhook delivery outlived its lease', { deliveryId: delivery.id })
    else if (error !== null) {
      deps.log.info('webhook delivery failed', { deliveryId: delivery.id, attempt: attempts, status, error })
    } else deps.log.debug('webhook delivered', { deliveryId: delivery.id, attempt: attempts, responseStatus })
  }

  /** Claims and sends batches until nothing is due; the number of attempts made. */
  async function drain(): Promise<number> {
    let total = 0
    while (!stopped) {
      const lease = newId()
      const now = deps.clock.now()
      const batch = await deps.webhooks.claimDue(now, concurrency, lease, now + leaseMs)
      await Promise.all(batch.map((delivery) => attempt(delivery, lease)))
      total += batch.length
      if (batch.length < concurrency) break
    }
    return total
  }

  const worker = {
    /**
     * Sends everything due now and resolves with the number of attempts made. A call while a run is under way gets
     * that run, followed by one more (what was queued meanwhile is sent too).
     */
    runOnce(): Promise<number> {
      if (running) {
        again = true
        return running
      }
      running = drain()
        .catch((error) => {
          deps.log.error('webhook deliveries could not be read', { error: String(error) })
          return 0
        })
        .finally(() => {
          running = null
          if (again && !stopped) {
            again = false
            void worker.runOnce()
          }
        })
      return running
    },

    /** Deliveries were queued by this instance: send them now rather than at the next poll. */
    wake(): void {
      if (timer !== undefined) void worker.runOnce()
    },

    /** Takes back what a dead process left mid-attempt (SQLite), then polls the queue. */
    async start(): Promise<void> {
      const released = await deps.webhooks.releaseAbandoned()
      if (released > 0) deps.log.info('webhook deliveries interrupted by a restart are sent again', { released })
      timer = setInterval(() => void worker.runOnce(), deps.pollMs ?? 1000)
      // The server's port keeps the process alive; this timer alone must not.
      timer.unref()
      void worker.runOnce()
    },

    /** Stops polling and waits for attempts under way; what is left stays queued for the next start. */
    async stop(): Promise<void> {
      clearInterval(timer)
      timer = undefined
      stopped = true
      await running
    },
  }
  return worker
}
