// Signed webhooks over real HTTP: a loopback receiver (Bun.serve on port 0) verifies every delivery with the
// `standardwebhooks` library. Events from the API, retries on the documented schedule with a clock the test moves,
// giving up after a day and disabling after three, the SSRF rule (literal addresses when added, DNS answers when
// sent), organizations kept apart, the admin pages, the CLI, and a delivery cut short by a crash sent after the restart.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import { Webhook } from 'standardwebhooks'
import { AppError } from '../src/shared/errors'
import { silentLogger } from '../src/shared/log'
import { isPublicAddress } from '../src/shared/outbound/addresses'
import { dayMs } from '../src/shared/time'
import { createDeliveryWorker, defaultRetryPolicy, retryDelay } from '../src/webhooks/delivery'
import type { WebhookPayload } from '../src/webhooks/events'
import { WebhooksModel } from '../src/webhooks/model'
import { createEndpoint, sendTestEvent } from '../src/webhooks/service'
import { testOrigin } from './support/audit'
import { databaseOf, migratedEnv } from './support/backend'
import {
  type Harness,
  harness,
  ManualClock,
  publicUrl,
  runToEnd,
  ScriptedRunner,
  startServer,
  until,
} from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { secretOn, submit } from './support/web-helpers'
import { type ReceivedHook, webhookReceiver } from './support/webhook-receiver'

const allowPrivate = { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true }

async function organizationOf(h: Harness, email: string): Promise<number> {
  const user = await h.store.users.findByEmail(email)
  if (!user) throw new Error('no such user')
  return user.organizationId
}

async function endpointFor(h: Harness, email: string, url: string, events: WebhookPayload['type'][] | null = null) {
  const organizationId = await organizationOf(h, email)
  const created = await createEndpoint(
    h.store.webhooks,
    { organizationId, createdBy: null, url, events: events as never },
    { allowPrivateNetworks: true },
    h.clock.now(),
    testOrigin,
  )
  return { ...created, organizationId }
}

function verified(secret: string, hook: ReceivedHook): WebhookPayload {
  return new Webhook(secret).verify(hook.body, hook.headers) as WebhookPayload
}

test('thread and answer events arrive signed as Standard Webhooks specifies, with the answer’s messages', async () => {
  await using receiver = webhookReceiver()
  await using h = await harness({ config: allowPrivate })
  const user = await h.user()
  const { secret } = await endpointFor(h, user.email, receiver.url)
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Hello webhooks' } })
  const { thread_id, message_id } = created.body as { thread_id: string; message_id: string }
  await h.app.decorator.engine.idle()
  expect(await h.app.decorator.webhooks.runOnce()).toBe(2)
  expect(receiver.received).toHaveLength(2)
  const events = receiver.received.map((hook) => verified(secret, hook))
  const byType = Object.fromEntries(events.map((event) => [event.type, event]))
  expect(byType['thread.created']?.data).toEqual({
    thread_id,
    state: 'waiting',
    app_url: `${publicUrl}/threads/${thread_id}`,
  })
  const completed = byType['answer.completed']
  const messages = (await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: user.token })).body as {
    data: WebhookPayload['data']['messages']
  }
  expect(completed?.data).toEqual({
    thread_id,
    message_id,
    // The model that wrote the answer: the echo responder, as the LLM_* variables configure it.
    model: 'echo',
    // What the answer used (issue 37), as its details show it: the echo responder's counts are estimated.
    usage: expect.objectContaining({ estimated: true, cost: null, input_tokens: expect.any(Number) }),
    state: 'ready',
    app_url: `${publicUrl}/threads/${thread_id}`,
    messages: messages.data?.slice(1),
  })
  expect(Date.parse(completed?.timestamp ?? '')).not.toBeNaN()
  // The bodies are what the OpenAPI document's `webhooks` section describes.
  for (const event of events) expect(Value.Check(WebhooksModel.event, event)).toBe(true)
  const openapi = (await h.call('GET', '/swagger/json')).body as { webhooks: Record<string, unknown> }
  expect(Object.keys(openapi.webhooks)).toEqual([
    'thread.created',
    'answer.completed',
    'answer.failed',
    'answer.interrupted',
    'webhook.test',
  ])
  for (const hook of receiver.received) {
    expect(hook.headers['content-type']).toBe('application/json')
    expect(hook.headers['webhook-signature']).toStartWith('v1,')
    // A changed body or another secret fails verification.
    expect(() => new Webhook(secret).verify(`${hook.body} `, hook.headers)).toThrow()
    const other = (await endpointFor(h, user.email, 'https://example.com/other')).secret
    expect(() => new Webhook(other).verify(hook.body, hook.headers)).toThrow()
  }
})

test('failed and interrupted answers send answer.failed and answer.interrupted, without messages', async () => {
  await using receiver = webhookReceiver()
  const runner = new ScriptedRunner()
  await using h = await harness({ runner, config: allowPrivate })
  const user = await h.user()
  const { secret } = await endpointFor(h, user.email, receiver.url, ['answer.failed', 'answer.interrupted'])
  const failed = (await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'fail please' } }))
    .body as { thread_id: string; message_id: string }
  ;(await runner.started(failed.message_id)).error('The provider is down')
  const stopped = (await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'stop me' } })).body as {
    thread_id: string
    message_id: string
  }
  await runner.started(stopped.message_id)
  expect((await h.call('POST', `/api/v1/threads/${stopped.thread_id}/stop`, { token: user.token })).status).toBe(202)
  await h.app.decorator.engine.idle()
  expect(await h.app.decorator.webhooks.runOnce()).toBe(2)
  const events = receiver.received.map((hook) => verified(secret, hook))
  const url = (id: string) => `${publicUrl}/threads/${id}`
  expect(events.sort((a, b) => a.type.localeCompare(b.type))).toEqual([
    {
      type: 'answer.failed',
      timestamp: expect.any(String),
      data: {
        thread_id: failed.thread_id,
        message_id: failed.message_id,
        state: 'error',
        app_url: url(failed.thread_id),
      },
    },
    {
      type: 'answer.interrupted',
      timestamp: expect.any(String),
      data: {
        thread_id: stopped.thread_id,
        message_id: stopped.message_id,
        state: 'ready',
        app_url: url(stopped.thread_id),
      },
    },
  ])
})

test('a failed delivery is tried again on the back-off schedule with the same webhook-id, each attempt logged', async () => {
  const clock = new ManualClock(Date.now())
  await using receiver = webhookReceiver((n) => new Response('busy', { status: n < 2 ? 503 : 200 }))
  await using h = await harness({ clock, config: allowPrivate })
  const user = await h.user()
  const { secret, organizationId, endpoint } = await endpointFor(h, user.email, receiver.url, ['thread.created'])
  await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'retried' } })
  const worker = h.app.decorator.webhooks
  expect(await worker.runOnce()).toBe(1)
  expect(await worker.runOnce()).toBe(0)
  clock.advance(retryDelay(defaultRetryPolicy, 1) - 1)
  expect(await worker.runOnce()).toBe(0)
  clock.advance(1)
  expect(await worker.runOnce()).toBe(1)
  clock.advance(retryDelay(defaultRetryPolicy, 2))
  expect(await worker.runOnce()).toBe(1)
  expect(receiver.received).toHaveLength(3)
  const ids = new Set(receiver.received.map((hook) => hook.headers['webhook-id']))
  expect(ids.size).toBe(1)
  for (const hook of receiver.received) expect(verified(secret, hook).type).toBe('thread.created')
  const attempts = await h.store.webhooks.recentAttempts(organizationId, 10)
  expect(
    attempts.map(({ attempt, responseStatus, error, status }) => ({ attempt, responseStatus, error, status })),
  ).toEqual([
    { attempt: 3, responseStatus: 200, error: null, status: 'delivered' },
    { attempt: 2, responseStatus: 503, error: 'HTTP 503', status: 'delivered' },
    { attempt: 1, responseStatus: 503, error: 'HTTP 503', status: 'delivered' },
  ])
  const after = await h.store.webhooks.findEndpoint(organizationId, endpoint.id)
  expect(after).toMatchObject({ enabled: true, failureStreak: 0, failingSince: null, lastSuccessAt: clock.now() })
})

test('a delivery is given up after a day (14 attempts); an endpoint failing for 3 days is disabled with a notice', async () => {
  const clock = new ManualClock(Date.now())
  await using receiver = webhookReceiver(() => new Response('down', { status: 500 }))
  await using h = await harness({ clock, config: allowPrivate })
  const admin = await signedIn(h, { role: 'admin' })
  const start = clock.now()
  const { organizationId, endpoint } = await endpointFor(h, admin.user.email, receiver.url, ['thread.created'])
  await h.call('POST', '/api/v1/threads', { token: admin.user.token, body: { name: 'first' } })
  const worker = h.app.decorator.webhooks
  let attempts = 0
  while ((await worker.runOnce()) > 0) {
    attempts++
    clock.advance(retryDelay(defaultRetryPolicy, attempts))
  }
  expect(attempts).toBe(14)
  const [last] = await h.store.webhooks.recentAttempts(organizationId, 1)
  expect(last).toMatchObject({ attempt: 14, status: 'failed', responseStatus: 500 })
  expect(last?.at).toBeLessThan(start + 21 * 60 * 60_000)
  expect(await h.store.webhooks.findEndpoint(organizationId, endpoint.id)).toMatchObject({
    enabled: true,
    failureStreak: 14,
    failingSince: start,
  })
  // Three days after the first failure, the next failed attempt disables it.
  clock.ms = start + defaultRetryPolicy.disableAfterMs
  await h.call('POST', '/api/v1/threads', { token: admin.user.token, body: { name: 'second' } })
  expect(await worker.runOnce()).toBe(1)
  const disabled = await h.store.webhooks.findEndpoint(organizationId, endpoint.id)
  expect(disabled?.enabled).toBe(false)
  expect(disabled?.disabledReason).toContain('every delivery attempt failed for 3 days (last: HTTP 500)')
  // Its retry is cancelled and nothing more is queued for it.
  clock.advance(dayMs)
  await h.call('POST', '/api/v1/threads', { token: admin.user.token, body: { name: 'third' } })
  expect(await worker.runOnce()).toBe(0)
  expect(receiver.received).toHaveLength(15)
  const page = await (await admin.browser.get('/admin/webhooks')).text()
  expect(page).toContain('Disabled automatically')
  // Enabled again, it starts a new streak and receives events.
  receiver.answer = () => new Response(null, { status: 204 })
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/enable`)).status).toBe(303)
  await h.call('POST', '/api/v1/threads', { token: admin.user.token, body: { name: 'fourth' } })
  expect(await worker.runOnce()).toBe(1)
  expect(await h.store.webhooks.findEndpoint(organizationId, endpoint.id)).toMatchObject({
    enabled: true,
    failureStreak: 0,
  })
})

// The race is PostgreSQL's, where each worker's claim is its own transaction; on SQLite one process's claims are
// serial, and the test holds the count of deliveries only.
test('workers sharing the queue (several instances) send each delivery once', async () => {
  await using receiver = webhookReceiver()
  await using h = await harness({ config: allowPrivate })
  const user = await h.user()
  const { organizationId, endpoint, secret } = await endpointFor(h, user.email, receiver.url)
  for (let i = 0; i < 24; i++) await sendTestEvent(h.store.webhooks, organizationId, endpoint.id, h.clock.now())
  const workers = [1, 2, 3].map(() =>
    createDeliveryWorker({
      webhooks: h.store.webhooks,
      clock: h.clock,
      log: silentLogger,
      allowPrivateNetworks: true,
      timeoutMs: 5000,
      concurrency: 4,
    }),
  )
  const sent = await Promise.all(workers.map((worker) => worker.runOnce()))
  expect(sent.reduce((a, b) => a + b, 0)).toBe(24)
  expect(new Set(receiver.received.map((hook) => verified(secret, hook) && hook.headers['webhook-id'])).size).toBe(24)
  expect(receiver.received).toHaveLength(24)
})

test('SSRF: private, loopback and other non-public addresses are refused when written in the URL', async () => {
  await using h = await harness()
  const user = await h.user()
  const organizationId = await organizationOf(h, user.email)
  const refused = [
    'http://127.0.0.1/hook',
    'http://127.1/hook',
    'http://2130706433/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://10.1.2.3/hook',
    'http://172.16.0.1/hook',
    'http://192.168.1.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/hook',
    'http://[fd00::1]/hook',
    'http://[fe80::1]/hook',
    'http://224.0.0.1/hook',
    'http://0.0.0.0/hook',
    'http://[64:ff9b::7f00:1]/hook',
    // Ranges an address library may still call unicast: benchmarking, local-use NAT64, site-local, IPv4-compatible.
    'http://198.18.0.1/hook',
    'http://[64:ff9b:1::a9fe:a9fe]/hook',
    'http://[fec0::1]/hook',
    'http://[::7f00:1]/hook',
    'ftp://example.com/hook',
    'https://user:pass@example.com/hook',
  ]
  for (const url of refused) {
    const attempt = createEndpoint(
      h.store.webhooks,
      { organizationId, createdBy: null, url, events: null },
      { allowPrivateNetworks: false },
      h.clock.now(),
      testOrigin,
    )
    await expect(attempt).rejects.toBeInstanceOf(AppError)
  }
  expect(await h.store.webhooks.listEndpoints(organizationId)).toEqual([])
  // A name is judged when it is sent to, not when it is added; a public address is fine.
  for (const url of ['https://hooks.example.com/x', 'https://93.184.216.34/x', 'http://[2606:4700::1]/x']) {
    await createEndpoint(
      h.store.webhooks,
      { organizationId, createdBy: null, url, events: null },
      { allowPrivateNetworks: false },
      h.clock.now(),
      testOrigin,
    )
  }
  expect(['8.8.8.8', '2606:4700::1'].map(isPublicAddress)).toEqual([true, true])
  expect(
    ['127.0.0.1', '::1', '10.0.0.1', '100.100.1.1', 'fc00::1', 'ff02::1', '::ffff:10.0.0.1'].some(isPublicAddress),
  ).toBe(false)
})

test('SSRF at delivery: every DNS answer is judged, and the request goes to the judged address', async () => {
  await using receiver = webhookReceiver()
  const answers: Record<string, string[]> = {
    'rebinding.example.com': ['93.184.216.34', '127.0.0.1'],
    'pinned.example.com': ['127.0.0.1'],
  }
  const resolve = async (name: string) => answers[name] ?? []
  // With the flag off: `localhost` through the system's resolver, and a name with one private answer among public ones.
  {
    await using h = await harness({ webhooks: { resolve: undefined } })
    const user = await h.user()
    const organizationId = await organizationOf(h, user.email)
    for (const url of [`http://localhost:${receiver.port}/hooks`]) {
      await createEndpoint(
        h.store.webhooks,
        { organizationId, createdBy: null, url, events: null },
        { allowPrivateNetworks: false },
        h.clock.now(),
        testOrigin,
      )
    }
    await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'to localhost' } })
    expect(await h.app.decorator.webhooks.runOnce()).toBe(1)
    const [attempt] = await h.store.webhooks.recentAttempts(organizationId, 1)
    expect(attempt?.responseStatus).toBeNull()
    expect(attempt?.error).toMatch(/^Refused: localhost resolves to (127\.0\.0\.1|::1), a non-public address$/)
  }
  {
    await using h = await harness({ webhooks: { resolve } })
    const user = await h.user()
    const organizationId = await organizationOf(h, user.email)
    await createEndpoint(
      h.store.webhooks,
      { organizationId, createdBy: null, url: `http://rebinding.example.com:${receiver.port}/hooks`, events: null },
      { allowPrivateNetworks: false },
      h.clock.now(),
      testOrigin,
    )
    await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'rebinding' } })
    expect(await h.app.decorator.webhooks.runOnce()).toBe(1)
    const [attempt] = await h.store.webhooks.recentAttempts(organizationId, 1)
    expect(attempt?.error).toBe('Refused: rebinding.example.com resolves to 127.0.0.1, a non-public address')
  }
  expect(receiver.received).toHaveLength(0)
  // With the flag on, the name's judged address is connected to, the name kept in the Host header; no redirect is
  // followed.
  {
    await using h = await harness({ config: allowPrivate, webhooks: { resolve } })
    const user = await h.user()
    const url = `http://pinned.example.com:${receiver.port}/hooks`
    const { organizationId } = await endpointFor(h, user.email, url)
    receiver.answer = () => new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/' } })
    await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'pinned' } })
    expect(await h.app.decorator.webhooks.runOnce()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]?.headers.host).toBe(`pinned.example.com:${receiver.port}`)
    const [attempt] = await h.store.webhooks.recentAttempts(organizationId, 1)
    expect(attempt).toMatchObject({ responseStatus: 302, error: 'HTTP 302: redirects are not followed' })
  }
})

test('events go only to endpoints of the thread’s own organization; a private thread’s carry no messages', async () => {
  await using acmeHooks = webhookReceiver()
  await using globexHooks = webhookReceiver()
  await using h = await harness({ config: allowPrivate })
  const acme = await h.user({ org: 'acme' })
  const globex = await h.user({ org: 'globex' })
  const acmeEndpoint = await endpointFor(h, acme.email, acmeHooks.url)
  await endpointFor(h, globex.email, globexHooks.url)
  const created = await h.call('POST', '/api/v1/threads', {
    token: acme.token,
    body: { name: 'secret plans', is_private: true, text: 'private question' },
  })
  await h.app.decorator.engine.idle()
  await h.app.decorator.webhooks.runOnce()
  expect(globexHooks.received).toHaveLength(0)
  const types = acmeHooks.received.map((hook) => verified(acmeEndpoint.secret, hook).type).sort()
  expect(types).toEqual(['answer.completed', 'thread.created'])
  for (const hook of acmeHooks.received) {
    const { data } = verified(acmeEndpoint.secret, hook)
    expect(data.thread_id).toBe((created.body as { thread_id: string }).thread_id)
    // The owner's alone: the organization's admins learn that it was answered, not what was said.
    expect(data.messages).toBeUndefined()
    expect(hook.body).not.toContain('private question')
  }
})

test('admin pages: add (secret shown once), test, disable, enable and delete endpoints; attempts listed', async () => {
  await using receiver = webhookReceiver()
  await using h = await harness({ config: allowPrivate })
  const admin = await signedIn(h, { role: 'admin', org: 'acme' })
  const member = await signedIn(h, { org: 'acme' })
  const outsider = await signedIn(h, { role: 'admin', org: 'globex' })
  expect((await member.browser.get('/admin/webhooks')).status).toBe(403)
  expect((await submit(member.browser, '/admin/webhooks', { url: receiver.url })).status).toBe(403)
  const added = await submit(admin.browser, '/admin/webhooks', { url: receiver.url, events: ['thread.created'] })
  expect(added.status).toBe(200)
  const secret = secretOn(await added.text(), 'webhook-secret')
  expect(secret).toStartWith('whsec_')
  const organizationId = await organizationOf(h, admin.user.email)
  const [endpoint] = await h.store.webhooks.listEndpoints(organizationId)
  if (!endpoint) throw new Error('no endpoint')
  expect(endpoint).toMatchObject({ url: receiver.url, events: ['thread.created'], createdBy: admin.user.id })
  const listed = await (await admin.browser.get('/admin/webhooks')).text()
  expect(listed).toContain(receiver.url)
  expect(listed).not.toContain(secret)
  // Another organization's admin cannot reach it.
  for (const action of ['test', 'disable', 'enable', 'delete']) {
    expect((await submit(outsider.browser, `/admin/webhooks/${endpoint.id}/${action}`)).status).toBe(404)
  }
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/test`)).headers.get('location')).toBe(
    '/admin/webhooks?notice=test-queued',
  )
  // The server's running worker is woken at once; this one is not started, so the test runs it.
  expect(await h.app.decorator.webhooks.runOnce()).toBe(1)
  const test = verified(secret, receiver.received[0] as ReceivedHook)
  expect(test).toMatchObject({ type: 'webhook.test', data: { endpoint_id: endpoint.id } })
  const withAttempt = await (await admin.browser.get('/admin/webhooks')).text()
  expect(withAttempt).toContain('HTTP 204 in')
  expect(withAttempt).toContain('webhook.test')
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/disable`)).status).toBe(303)
  const disabledPage = await (await admin.browser.get('/admin/webhooks')).text()
  expect(disabledPage).toContain(`Disabled by ${admin.user.email}`)
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/test`)).status).toBe(409)
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/enable`)).status).toBe(303)
  expect((await admin.browser.get(`/admin/webhooks/${endpoint.id}/delete`)).status).toBe(200)
  expect((await submit(admin.browser, `/admin/webhooks/${endpoint.id}/delete`)).status).toBe(303)
  expect(await h.store.webhooks.listEndpoints(organizationId)).toEqual([])
  // Without the flag, the form refuses a loopback address and says why.
  await using strict = await harness()
  const strictAdmin = await signedIn(strict, { role: 'admin' })
  const refused = await submit(strictAdmin.browser, '/admin/webhooks', { url: 'http://127.0.0.1:9/x' })
  expect(refused.status).toBe(400)
  expect(await refused.text()).toContain('WEBHOOKS_ALLOW_PRIVATE_NETWORKS')
})

test('webhook:create adds an endpoint and prints its secret last; refuses unknown organizations and private URLs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-webhooks-cli-'))
  try {
    const env = await migratedEnv(join(dir, 'db.sqlite'))
    const cli = (...args: string[]) => runToEnd(['bun', 'run', 'cli', ...args], env)
    const owner = await cli(
      'user:create',
      '--email',
      'owner@example.com',
      '--password',
      'correct horse',
      '--org',
      'acme',
    )
    expect(owner.code).toBe(0)
    const made = await cli(
      'webhook:create',
      '--org',
      'acme',
      '--url',
      'https://hooks.example.com/in',
      '--events',
      'answer.completed,thread.created',
    )
    expect(made.code).toBe(0)
    const lines = made.stdout.trim().split('\n')
    expect(lines.at(-1)).toMatch(/^whsec_[A-Za-z0-9+/=]+$/)
    expect(lines[0]).toContain('https://hooks.example.com/in (answer.completed, thread.created)')
    expect((await cli('webhook:create', '--org', 'nope', '--url', 'https://x.example.com/')).stderr).toContain(
      'No organization with slug nope',
    )
    const loopback = await cli('webhook:create', '--org', 'acme', '--url', 'http://127.0.0.1/')
    expect(loopback.code).toBe(1)
    expect(loopback.stderr).toContain('WEBHOOKS_ALLOW_PRIVATE_NETWORKS')
    expect(
      (await cli('webhook:create', '--org', 'acme', '--url', 'https://x.example.com/', '--events', 'nope')).stderr,
    ).toContain('Unknown event type: nope')
    const help = await cli('webhook:create', '--help')
    expect(help.stdout).toContain('--org SLUG --url URL [--events E1,E2]')
    await using db = await databaseOf(env)
    const organizationId = await db.store.users.organizationIdBySlug('acme')
    const endpoints = await db.store.webhooks.listEndpoints(organizationId ?? -1)
    expect(endpoints.map((endpoint) => [endpoint.url, endpoint.events, endpoint.secret])).toEqual([
      ['https://hooks.example.com/in', ['answer.completed', 'thread.created'], lines.at(-1) ?? ''],
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a delivery queued through the API and cut short by a crash is sent after the restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-webhooks-restart-'))
  let release = () => {}
  // The first request is held open: the server is killed while it is in flight.
  await using receiver = webhookReceiver((n) =>
    n === 0 ? new Promise<Response>((resolve) => (release = () => resolve(new Response(null)))) : new Response(null),
  )
  try {
    const env = {
      ...(await migratedEnv(join(dir, 'db.sqlite'))),
      UPLOADS_DIR: join(dir, 'uploads'),
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOKS_TIMEOUT_MS: '1000',
    }
    // Set up as an operator would, with the CLI (each command its own process, gone before the server starts).
    const cli = async (...args: string[]) => {
      const result = await runToEnd(['bun', 'run', 'cli', ...args], env)
      if (result.code !== 0) throw new Error(result.stderr)
      return result.stdout.trim().split('\n').at(-1) ?? ''
    }
    await cli('user:create', '--email', 'owner@example.com', '--password', 'correct horse', '--org', 'acme')
    const secret = await cli('webhook:create', '--org', 'acme', '--url', receiver.url, '--events', 'thread.created')
    const token = await cli('token:create', '--email', 'owner@example.com', '--scopes', 'threads:write')
    {
      await using server = await startServer(env)
      const created = await fetch(`${server.url}/api/v1/threads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'queued before the crash' }),
      })
      expect(created.status).toBe(201)
      await until(() => receiver.received.length === 1)
      server.process.kill('SIGKILL')
      await server.process.exited
    }
    release()
    await using server = await startServer(env)
    await until(() => receiver.received.length === 2)
    const [first, second] = receiver.received as [ReceivedHook, ReceivedHook]
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id'] as string)
    expect(verified(secret, second).type).toBe('thread.created')
    expect(server.stderr()).toContain('"port"')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a deleted thread takes its deliveries with it, sent or not: its words do not live on in payloads', async () => {
  await using receiver = webhookReceiver()
  await using h = await harness({ config: allowPrivate })
  const owner = await h.user()
  await endpointFor(h, owner.email, receiver.url)
  const kept = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'keep me' } })).body
  const gone = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'forget me' } })).body
  await h.app.decorator.engine.idle()
  await h.app.decorator.webhooks.runOnce()
  const { webhookDeliveries } = h.tables
  const threadsOf = async () =>
    (await h.orm.select({ threadId: webhookDeliveries.threadId }).from(webhookDeliveries)).map((row) => row.threadId)
  expect((await threadsOf()).filter((id) => id === gone.thread_id)).toHaveLength(2)
  const deleted = await h.call('DELETE', `/api/v1/threads/${gone.thread_id}`, { token: owner.token })
  expect(deleted.status).toBe(204)
  const left = await threadsOf()
  expect(left).not.toContain(gone.thread_id)
  expect(left.filter((id) => id === kept.thread_id)).toHaveLength(2)
})
