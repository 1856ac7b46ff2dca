// GET /metrics over real HTTP (the app on a loopback port): off without METRICS_TOKEN, 401 without the token, and
// with it the Prometheus text exposition, read back with a Prometheus text parser (parse-prometheus-text-format):
// route patterns rather than paths, answers by outcome and model, the queue gauges, open streams, provider errors and
// retries from the real worker, webhook deliveries and rate-limit refusals, every series labelled by instance.
import { expect, test } from 'bun:test'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { createWorkerRunner } from '../src/generation/runner'
import { silentLogger } from '../src/shared/log'
import { createEndpoint } from '../src/webhooks/service'
import { testOrigin } from './support/audit'
import { FakeLlm, openaiChunk, openaiDone, openaiError, openaiText, settingsFor, sse } from './support/fake-llm'
import { type Harness, harness, listening, ScriptedRunner, until } from './support/helpers'

const token = 'metrics-token-0123456789abcdef'

interface Sample {
  value?: string
  labels?: Record<string, string>
}

interface Family {
  name: string
  type: string
  metrics: Sample[]
}

/**
 * The families of an exposition, by name. parse-prometheus-text-format folds a labelled histogram's series into one
 * (its flattenMetrics keeps only the last label set's buckets, and no labels), so histograms are declared untyped
 * before parsing: then each run of `_bucket`, `_sum` and `_count` lines parses as a family of its own, every sample
 * with its labels, and the runs of one name (one per label set) are put together here. Counters and gauges are parsed
 * as written.
 */
function parse(text: string): Map<string, Family> {
  const untypedHistograms = text.replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped')
  const families = new Map<string, Family>()
  for (const family of parsePrometheusTextFormat(untypedHistograms) as Family[]) {
    const known = families.get(family.name)
    if (known) known.metrics.push(...family.metrics)
    else families.set(family.name, family)
  }
  return families
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function sampleOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const matching = (families.get(name)?.metrics ?? []).filter((sample) =>
    Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value),
  )
  if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return matching[0]?.value === undefined ? undefined : Number(matching[0].value)
}

async function scrape(url: URL, bearer = token): Promise<Map<string, Family>> {
  const response = await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${bearer}` } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  return parse(await response.text())
}

async function send(url: URL, userToken: string, path: string, body?: unknown): Promise<Response> {
  return fetch(new URL(path, url), {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

function holderOf(h: Harness): string {
  return h.app.decorator.engine.stats().holder
}

test('without METRICS_TOKEN /metrics does not exist: 404 as for any unknown path', async () => {
  await using h = await harness()
  await using server = listening(h)
  for (const accept of ['application/json', 'text/html', 'text/plain;version=0.0.4']) {
    const headers = { authorization: `Bearer ${token}`, accept }
    const metrics = await fetch(new URL('/metrics', server.url), { headers })
    const unknown = await fetch(new URL('/nowhere', server.url), { headers })
    expect(metrics.status).toBe(404)
    expect(metrics.headers.get('content-type')).toBe(unknown.headers.get('content-type'))
    expect(await metrics.text()).toBe(await unknown.text())
  }
})

test('with METRICS_TOKEN: 401 without the token or with another, 200 with it; never in the OpenAPI document', async () => {
  await using h = await harness({ config: { METRICS_TOKEN: token } })
  await using server = listening(h)
  const url = new URL('/metrics', server.url)
  const missing = await fetch(url)
  expect(missing.status).toBe(401)
  expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="metrics"')
  expect(await missing.json()).toEqual({ error: 'unauthorized', message: 'A bearer token is required' })
  for (const wrong of [`${token}x`, token.slice(0, -1), 'short', token.toUpperCase()]) {
    const refused = await fetch(url, { headers: { authorization: `Bearer ${wrong}` } })
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { error: string }).error).toBe('unauthorized')
  }
  // A user's API token is not the metrics token.
  const user = await h.user()
  expect((await fetch(url, { headers: { authorization: `Bearer ${user.token}` } })).status).toBe(401)
  expect((await fetch(url, { headers: { authorization: `Basic ${btoa(`x:${token}`)}` } })).status).toBe(401)
  const families = await scrape(server.url)
  expect(families.get('threadhouse_http_requests_total')?.type).toBe('COUNTER')
  const openapi = (await (await fetch(new URL('/swagger/json', server.url))).json()) as { paths: object }
  expect(Object.keys(openapi.paths).some((path) => path.includes('metrics'))).toBe(false)
})

test('requests by route pattern and status, latency, answers by outcome and model, labelled by instance', async () => {
  await using h = await harness({ config: { METRICS_TOKEN: token } })
  await using server = listening(h)
  const user = await h.user()
  const created = await send(server.url, user.token, '/api/v1/threads', { text: 'Hello metrics' })
  expect(created.status).toBe(201)
  const { thread_id, message_id } = (await created.json()) as { thread_id: string; message_id: string }
  await h.app.decorator.engine.idle()
  const stream = await send(
    server.url,
    user.token,
    `/api/v1/threads/${thread_id}/messages/${message_id}/response/stream`,
  )
  expect(await stream.text()).toContain('event: done')
  for (let i = 0; i < 2; i++)
    expect((await send(server.url, user.token, `/api/v1/threads/${thread_id}`)).status).toBe(200)
  expect((await send(server.url, user.token, `/api/v1/threads/${crypto.randomUUID()}`)).status).toBe(404)
  expect((await fetch(new URL(`/nowhere/${thread_id}`, server.url))).status).toBe(404)
  // Responses are counted once they have gone out.
  const thread = { method: 'GET', route: '/api/v1/threads/:threadId' }
  const families = await until(async () => {
    const scraped = await scrape(server.url)
    return sampleOf(scraped, 'threadhouse_http_requests_total', { ...thread, status: '404' }) === 1 &&
      sampleOf(scraped, 'threadhouse_http_requests_total', { route: 'unmatched' }) === 1
      ? scraped
      : undefined
  })
  expect(sampleOf(families, 'threadhouse_http_requests_total', { ...thread, status: '200' })).toBe(2)
  expect(
    sampleOf(families, 'threadhouse_http_requests_total', { method: 'POST', route: '/api/v1/threads', status: '201' }),
  ).toBe(1)
  expect(sampleOf(families, 'threadhouse_http_request_duration_seconds_count', thread)).toBe(3)
  expect(sampleOf(families, 'threadhouse_http_request_duration_seconds_bucket', { ...thread, le: '+Inf' })).toBe(3)
  expect(sampleOf(families, 'threadhouse_http_request_duration_seconds_sum', thread)).toBeGreaterThan(0)
  // No label holds an ID: the patterns, never the paths.
  const requests = families.get('threadhouse_http_requests_total')?.metrics ?? []
  expect(requests.map((sample) => sample.labels?.route)).toContain(
    '/api/v1/threads/:threadId/messages/:messageId/response/stream',
  )
  for (const family of families.values()) {
    for (const sample of family.metrics) {
      expect(JSON.stringify(sample.labels)).not.toContain(thread_id)
      // Every series says which instance it counts: the engine's lease holder.
      expect(sample.labels?.instance_id).toBe(holderOf(h))
    }
  }
  expect(sampleOf(families, 'threadhouse_answers_total', { outcome: 'complete', model: 'echo' })).toBe(1)
  // The echo responder reports no usage: its answer's tokens are the server's estimate, and said to be.
  const echoTokens = { model: 'echo', estimated: 'true' }
  expect(sampleOf(families, 'threadhouse_tokens_total', { ...echoTokens, kind: 'input' })).toBeGreaterThan(0)
  expect(sampleOf(families, 'threadhouse_tokens_total', { ...echoTokens, kind: 'output' })).toBeGreaterThan(0)
  expect(sampleOf(families, 'threadhouse_answers_queued')).toBe(0)
  expect(sampleOf(families, 'threadhouse_answers_running')).toBe(0)
  expect(sampleOf(families, 'threadhouse_open_streams')).toBe(0)
})

test('queue gauges, open streams and failed and stopped answers, read at scrape time', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner, config: { METRICS_TOKEN: token, GENERATION_CONCURRENCY: 1 } })
  await using server = listening(h)
  const user = await h.user()
  const first = (await (await send(server.url, user.token, '/api/v1/threads', { text: 'one' })).json()) as {
    thread_id: string
    message_id: string
  }
  const second = (await (await send(server.url, user.token, '/api/v1/threads', { text: 'two' })).json()) as {
    thread_id: string
    message_id: string
  }
  const handlers = await runner.started(first.message_id)
  const stream = await send(
    server.url,
    user.token,
    `/api/v1/threads/${first.thread_id}/messages/${first.message_id}/response/stream`,
  )
  expect(stream.status).toBe(200)
  let families = await scrape(server.url)
  expect(sampleOf(families, 'threadhouse_answers_running')).toBe(1)
  expect(sampleOf(families, 'threadhouse_answers_queued')).toBe(1)
  expect(sampleOf(families, 'threadhouse_open_streams')).toBe(1)
  handlers.retried?.('overloaded')
  handlers.error('The AI provider is overloaded right now.', 'overloaded')
  expect(await stream.text()).toContain('event: error')
  await runner.started(second.message_id)
  expect((await send(server.url, user.token, `/api/v1/threads/${second.thread_id}/stop`, {})).status).toBe(202)
  await h.app.decorator.engine.idle()
  families = await until(async () => {
    const scraped = await scrape(server.url)
    return sampleOf(scraped, 'threadhouse_open_streams') === 0 ? scraped : undefined
  })
  expect(sampleOf(families, 'threadhouse_answers_running')).toBe(0)
  expect(sampleOf(families, 'threadhouse_answers_queued')).toBe(0)
  expect(sampleOf(families, 'threadhouse_answers_total', { outcome: 'failed', model: 'echo' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_answers_total', { outcome: 'stopped', model: 'echo' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_provider_errors_total', { kind: 'overloaded', model: 'echo' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_provider_retries_total', { kind: 'overloaded', model: 'echo' })).toBe(1)
})

test('provider retries and errors are counted from what the real worker reports', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    // 503: the provider is overloaded, which is worth another attempt.
    () => openaiError(503, { message: 'busy', type: 'server_error', code: null }),
    () => sse([...openaiText(['Hi', ' there']), openaiChunk({}, 'stop'), openaiDone]),
    () => openaiError(401, { message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' }),
  )
  await using h = await harness({
    runner: (blobs) => createWorkerRunner(settingsFor('openai', fake), blobs, silentLogger),
    config: { METRICS_TOKEN: token },
  })
  await using server = listening(h)
  const user = await h.user()
  expect((await send(server.url, user.token, '/api/v1/threads', { text: 'retry once' })).status).toBe(201)
  await h.app.decorator.engine.idle()
  expect((await send(server.url, user.token, '/api/v1/threads', { text: 'refused' })).status).toBe(201)
  await h.app.decorator.engine.idle()
  expect(fake.received).toHaveLength(3)
  const families = await scrape(server.url)
  // The model label is the configured model's ID (the LLM_* list of one names it `echo`; the worker here runs the
  // fake provider whatever a job names).
  expect(sampleOf(families, 'threadhouse_provider_retries_total', { kind: 'overloaded', model: 'echo' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_provider_errors_total', { kind: 'auth', model: 'echo' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_answers_total', { outcome: 'complete' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_answers_total', { outcome: 'failed' })).toBe(1)
})

test('webhook deliveries by result and rate-limit refusals by limit', async () => {
  await using receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(null, { status: 204 }) })
  await using h = await harness({
    config: { METRICS_TOKEN: token, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true, RATE_LIMIT_API_PER_MINUTE: 3 },
  })
  await using server = listening(h)
  const user = await h.user()
  const member = await h.store.users.findByEmail(user.email)
  const endpoint = { organizationId: member?.organizationId ?? 0, createdBy: null, events: ['thread.created' as never] }
  const allow = { allowPrivateNetworks: true }
  await createEndpoint(
    h.store.webhooks,
    { ...endpoint, url: `http://127.0.0.1:${receiver.port}/ok` },
    allow,
    0,
    testOrigin,
  )
  // Nothing listens on the closed port: the attempt fails and is tried again later.
  const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const closedUrl = `http://127.0.0.1:${closed.port}/gone`
  await closed.stop(true)
  await createEndpoint(h.store.webhooks, { ...endpoint, url: closedUrl }, allow, 0, testOrigin)
  expect((await send(server.url, user.token, '/api/v1/threads', {})).status).toBe(201)
  expect(await h.app.decorator.webhooks.runOnce()).toBe(2)
  // The token's limit is 3 a minute: the fourth and fifth requests are refused.
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await send(server.url, user.token, '/api/v1/threads')).status)
  expect(statuses).toEqual([200, 200, 429, 429])
  const families = await scrape(server.url)
  expect(sampleOf(families, 'threadhouse_webhook_deliveries_total', { result: 'delivered' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_webhook_deliveries_total', { result: 'retrying' })).toBe(1)
  expect(sampleOf(families, 'threadhouse_rate_limit_refusals_total', { limit: 'token' })).toBe(2)
  await until(async () => {
    const scraped = await scrape(server.url)
    return sampleOf(scraped, 'threadhouse_http_requests_total', { route: '/api/v1/threads', status: '429' }) === 2
  })
})

test('two apps in one process count apart: no global registry', async () => {
  await using one = await harness({ config: { METRICS_TOKEN: token } })
  await using two = await harness({ config: { METRICS_TOKEN: token } })
  await using first = listening(one)
  await using second = listening(two)
  for (let i = 0; i < 3; i++) expect((await fetch(new URL('/healthz', first.url))).status).toBe(200)
  const route = { method: 'GET', route: '/healthz', status: '200' }
  await until(async () => sampleOf(await scrape(first.url), 'threadhouse_http_requests_total', route) === 3)
  expect(sampleOf(await scrape(second.url), 'threadhouse_http_requests_total', route)).toBeUndefined()
  expect(holderOf(one)).not.toBe(holderOf(two))
})
