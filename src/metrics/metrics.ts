// What an operator's Prometheus scrapes from GET /metrics (docs/operations.md, Metrics): counters the features are
// told of through ports (no feature imports this folder), and gauges read from the engine and the open streams at
// scrape time. One registry per app, never prom-client's global one: two apps in one process (tests, or several
// instances side by side) keep their counts apart, and building an app registers nothing anywhere else.
import { Counter, Gauge, type Metric, type MetricValueWithName, Registry } from 'prom-client'
import type { RecordedUsage } from '../shared/events'

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

/** One method, route and status's requests: how many, their total time, and how many fell in each bucket. */
interface RequestSeries {
  labels: { method: string; route: string; status: string }
  count: number
  sum: number
  /** Per bucket of `latencyBuckets`, not cumulative; the last is the requests slower than every bound. */
  buckets: Float64Array
}

function newSeries(labels: RequestSeries['labels']): RequestSeries {
  return { labels, count: 0, sum: 0, buckets: new Float64Array(latencyBuckets.length + 1) }
}

type LatencyValue = MetricValueWithName<'method' | 'route' | 'le'>

/**
 * The request latency histogram as prom-client's registry reads a metric (`get`, as its own Histogram answers):
 * the series by method and route, every status's requests together, with cumulative buckets.
 */
class LatencyHistogram {
  readonly name = 'threadhouse_http_request_duration_seconds'
  readonly help = 'Time from a request’s arrival to its response, by method and route pattern.'

  constructor(private readonly requests: Map<string, RequestSeries>) {}

  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: LatencyValue[] }> {
    const byRoute = new Map<
      string,
      { labels: { method: string; route: string }; count: number; sum: number; buckets: Float64Array }
    >()
    for (const series of this.requests.values()) {
      const { method, route } = series.labels
      const key = `${method} ${route}`
      let merged = byRoute.get(key)
      if (!merged) {
        merged = { labels: { method, route }, count: 0, sum: 0, buckets: new Float64Array(latencyBuckets.length + 1) }
        byRoute.set(key, merged)
      }
      merged.count += series.count
      merged.sum += series.sum
      for (let i = 0; i < series.buckets.length; i++) (merged.buckets[i] as number) += series.buckets[i] as number
    }
    const values: LatencyValue[] = []
    for (const { labels, count, sum, buckets } of byRoute.values()) {
      let cumulative = 0
      for (let i = 0; i < latencyBuckets.length; i++) {
        cumulative += buckets[i] as number
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { ...labels, le: latencyBuckets[i] as number },
          value: cumulative,
        })
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count })
      values.push({ metricName: `${this.name}_sum`, labels, value: sum })
      values.push({ metricName: `${this.name}_count`, labels, value: count })
    }
    return {
      name: this.name,
      help: this.help,
      type: 'histogram',
      aggregator: 'sum',
      values,
    }
  }
}

export function createMetrics() {
  const registry = new Registry()
  const registers = [registry]
  // Requests are counted in plain objects on the request's path, and handed to prom-client at scrape time: its own
  // counter and histogram hash and check their labels on every call, some twenty times what a request's counting
  // costs here (bench/metrics.ts).
  const perRequest = new Map<string, RequestSeries>()
  new Counter({
    name: 'threadhouse_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
    collect() {
      this.reset()
      for (const series of perRequest.values()) this.inc(series.labels, series.count)
    },
  })
  registry.registerMetric(new LatencyHistogram(perRequest) as unknown as Metric)
  const answers = new Counter({
    name: 'threadhouse_answers_total',
    help: 'Answers this instance stored, by outcome (complete, stopped, failed) and configured model.',
    labelNames: ['outcome', 'model'] as const,
    registers,
  })
  const tokens = new Counter({
    name: 'threadhouse_tokens_total',
    help: 'Tokens the answers this instance stored used, by configured model and kind (input, output, cached_input; cached input is part of input), estimated or reported.',
    labelNames: ['model', 'kind', 'estimated'] as const,
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
      // Bounded by the routes, methods and statuses there are: never a raw path.
      const key = `${method} ${status} ${pattern}`
      let series = perRequest.get(key)
      if (!series) {
        series = newSeries({ method, route: pattern, status: String(status) })
        perRequest.set(key, series)
      }
      series.count++
      const seconds = ms / 1000
      series.sum += seconds
      let bucket = 0
      while (bucket < latencyBuckets.length && seconds > (latencyBuckets[bucket] as number)) bucket++
      ;(series.buckets[bucket] as number)++
    },

    answer(outcome: keyof typeof outcomeNames, model: string | null, usage?: RecordedUsage): void {
      answers.inc({ outcome: outcomeNames[outcome], model: model ?? 'none' })
      if (!usage) return
      const labels = { model: model ?? 'none', estimated: String(usage.estimated) }
      tokens.inc({ ...labels, kind: 'input' }, usage.inputTokens)
      tokens.inc({ ...labels, kind: 'output' }, usage.outputTokens)
      tokens.inc({ ...labels, kind: 'cached_input' }, usage.cachedInputTokens)
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
