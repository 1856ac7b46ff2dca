// What an operator's Prometheus scrapes from GET /metrics (docs/operations.md, Metrics): counters the features are
// told of through ports (no feature imports this folder), and gauges read from the engine and the open streams at
// scrape time. One registry per app, never prom-client's global one: two apps in one process (tests, or several
// instances side by side) keep their counts apart, and building an app registers nothing anywhere else.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/** Who this instance is, and what the gauges read when Prometheus scrapes. */
export interface MetricsSources {
  /** Labels every series (`instance_id`), so that the instances behind one load balancer are told apart. */
  instanceId: string
  /** The engine's own counts (generation/service.ts `stats`). */
  answers(): { queued: number; running: number }
  /** Event streams this process holds open (shared/streams/sse.ts OpenStreams). */
  openStreams(): number
}

/** How an answer ended, in the words of the usage records and the issue: the domain event's outcome renamed. */
const outcomeNames = { complete: 'complete', interrupted: 'stopped', error: 'failed' } as const

/** The limits a refusal is counted under (docs/operations.md, Rate limits). */
export type LimitName = 'ip' | 'token' | 'auth' | 'registration' | 'streams'

/** The label of a request no route matched: its raw path would let any client add series. */
export const unmatchedRoute = 'unmatched'

/**
 * Requests' latency in seconds: from a few milliseconds (a cached read) to the seconds an upload or a slow database
 * takes. An event stream's time is until its response began, not its whole life.
 */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export type Metrics = ReturnType<typeof createMetrics>

export function createMetrics() {
  const registry = new Registry()
  const registers = [registry]
  const requests = new Counter({
    name: 'threadhouse_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  })
  const latency = new Histogram({
    name: 'threadhouse_http_request_duration_seconds',
    help: 'Time from a request’s arrival to its response, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: latencyBuckets,
    registers,
  })
  const answers = new Counter({
    name: 'threadhouse_answers_total',
    help: 'Answers this instance stored, by outcome (complete, stopped, failed) and configured model.',
    labelNames: ['outcome', 'model'] as const,
    registers,
  })
  const providerErrors = new Counter({
    name: 'threadhouse_provider_errors_total',
    help: 'Answers that failed in their generator, by kind of failure and configured model.',
    labelNames: ['kind', 'model'] as const,
    registers,
  })
  const providerRetries = new Counter({
    name: 'threadhouse_provider_retries_total',
    help: 'Requests to a model provider made again after a transient failure, by kind and configured model.',
    labelNames: ['kind', 'model'] as const,
    registers,
  })
  const deliveries = new Counter({
    name: 'threadhouse_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by result (delivered, retrying, failed).',
    labelNames: ['result'] as const,
    registers,
  })
  const refusals = new Counter({
    name: 'threadhouse_rate_limit_refusals_total',
    help: 'Requests refused by a limit (ip, token, auth, registration, streams).',
    labelNames: ['limit'] as const,
    registers,
  })
  let sources: MetricsSources | undefined
  new Gauge({
    name: 'threadhouse_answers_queued',
    help: 'Answers waiting in this instance’s queue for a place to run.',
    registers,
    collect() {
      if (sources) this.set(sources.answers().queued)
    },
  })
  new Gauge({
    name: 'threadhouse_answers_running',
    help: 'Answers this instance is claiming, generating or storing.',
    registers,
    collect() {
      if (sources) this.set(sources.answers().running)
    },
  })
  new Gauge({
    name: 'threadhouse_open_streams',
    help: 'Event streams (answer streams and the change feed) this instance holds open.',
    registers,
    collect() {
      if (sources) this.set(sources.openStreams())
    },
  })

  // A request's two series by its labels, looked up once: prom-client would otherwise sort and join the label
  // names on every call. The keys are bounded by the routes, methods and statuses there are.
  const perRequest = new Map<string, { count: () => void; time: (seconds: number) => void }>()

  return {
    registry,

    /** The instance and the gauges' sources, known once the engine and the streams exist. */
    attach(from: MetricsSources): void {
      sources = from
      registry.setDefaultLabels({ instance_id: from.instanceId })
    },

    /** One answered request (shared/http.ts RequestObserver). */
    request(method: string, route: string | null, status: number, ms: number): void {
      const pattern = route ?? unmatchedRoute
      const key = `${method} ${status} ${pattern}`
      let series = perRequest.get(key)
      if (!series) {
        const counted = requests.labels(method, pattern, String(status))
        const timed = latency.labels(method, pattern)
        series = { count: () => counted.inc(), time: (seconds) => timed.observe(seconds) }
        perRequest.set(key, series)
      }
      series.count()
      series.time(ms / 1000)
    },

    answer(outcome: keyof typeof outcomeNames, model: string | null): void {
      answers.inc({ outcome: outcomeNames[outcome], model: model ?? 'none' })
    },

    providerFailed(kind: string, model: string | null): void {
      providerErrors.inc({ kind, model: model ?? 'none' })
    },

    providerRetried(kind: string, model: string | null): void {
      providerRetries.inc({ kind, model: model ?? 'none' })
    },

    delivery(result: 'delivered' | 'retrying' | 'failed'): void {
      deliveries.inc({ result })
    },

    /** A counter for one limit's refusals, to hand to the limiter. */
    refusals(limit: LimitName): () => void {
      const counted = refusals.labels(limit)
      return () => counted.inc()
    },

    /** The exposition text and its content type. */
    async scrape(): Promise<{ body: string; contentType: string }> {
      return { body: await registry.metrics(), contentType: registry.contentType }
    },
  }
}
