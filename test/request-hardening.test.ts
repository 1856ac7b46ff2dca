// Hostile requests are refused early and cheaply: the caller before the body, the body's media type, size and
// depth before it is parsed, open streams per person and per process, unknown methods with 405 and Allow.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { type JsonBounds, JsonShapeScan, maxJsonDepth } from '../src/shared/body'
import { testOrigin, tokenHolder } from './support/audit'
import {
  collect,
  type Harness,
  harness,
  openStream,
  publicUrl,
  ScriptedRunner,
  tokensOf,
  until,
} from './support/helpers'
import { settings, signedIn } from './support/oauth-helpers'

// Sign-in hashes passwords with argon2 on purpose: slow on a busy machine.

/** Waits until the thread is ready again: on PostgreSQL an answer is stored a moment after `done`. */
async function ready(h: Harness, token: string, threadId: string): Promise<void> {
  await until(async () => (await h.call('GET', `/api/v1/threads/${threadId}`, { token })).body.state === 'ready')
}

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`
const megabyteDeep = nested(512 * 1024 - 16)

/**
 * A body of sixteen chunks (by default 64 KiB of `[` each, 1 MiB in all), sent only as far as someone reads it:
 * `pulls` says how far that was.
 */
function countedBody(chunk: (pull: number) => string = () => '['.repeat(64 * 1024)): {
  body: ReadableStream<Uint8Array>
  pulls: () => number
} {
  let pulls = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++
      if (pulls > 16) controller.close()
      else controller.enqueue(new TextEncoder().encode(chunk(pulls)))
    },
  })
  return { body, pulls: () => pulls }
}

test('a body nested deeper than the bound is 400 before it is parsed, on the API and the settings API', async () => {
  await using h = await harness()
  const owner = await h.user()
  const tooDeep = {
    status: 400,
    body: { error: 'invalid_request', message: `The body is nested more than ${maxJsonDepth} levels deep` },
  }
  for (const body of [megabyteDeep, `{"text":"hi","name":${nested(maxJsonDepth)}}`]) {
    const reply = await h.call('POST', '/api/v1/threads', { token: owner.token, body })
    expect({ status: reply.status, body: reply.body }).toEqual(tooDeep)
  }
  // Brackets inside strings are text, not nesting.
  const text = `${'['.repeat(100)}"\\"${'{'.repeat(100)}`
  expect((await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text } })).status).toBe(201)
  const { browser } = await signedIn(h)
  const settingsReply = await settings(browser, 'POST', '/oauth-clients', undefined, {
    'content-type': 'application/json',
  })
  expect(settingsReply.status).toBe(400)
  // The CSRF header is checked before the body, as the session is: a write without it never has its body read.
  const csrf = ((await (await browser.get('/settings/api/session')).json()) as { csrf_token: string }).csrf_token
  const deep = await browser.request('POST', '/settings/api/oauth-clients', {
    body: megabyteDeep,
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
  })
  expect({ status: deep.status, body: await deep.json() }).toEqual(tooDeep)
  const forged = await browser.request('POST', '/settings/api/oauth-clients', {
    body: megabyteDeep,
    headers: { 'content-type': 'application/json', 'x-csrf-token': 'forged' },
  })
  expect({ status: forged.status, error: ((await forged.json()) as { error: string }).error }).toEqual({
    status: 403,
    error: 'csrf_failed',
  })
})

test('a schema failure reports the first problem only, however large the value', async () => {
  await using h = await harness()
  const owner = await h.user()
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const attachment_ids = Array.from({ length: 50_000 }, (_, i) => `not-a-uuid-${i}`)
  const reply = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
    token: owner.token,
    body: { text: 'hi', attachment_ids },
  })
  expect(reply.status).toBe(400)
  expect(reply.body.error).toBe('invalid_request')
  expect(reply.body.message.length).toBeLessThan(200)
})

test('text holding U+0000 is refused with 400 on every backend, since PostgreSQL cannot store it', async () => {
  await using h = await harness()
  const owner = await h.user()
  const bodies = [{ text: 'a\u0000b' }, { name: 'x\u0000', text: 'hi' }, { text: 'hi', nested: { 'k\u0000': 1 } }]
  for (const body of bodies) {
    const reply = await h.call('POST', '/api/v1/threads', { token: owner.token, body })
    expect({ status: reply.status, body: reply.body }).toEqual({
      status: 400,
      body: { error: 'invalid_request', message: 'Text may not contain the NUL character (U+0000)' },
    })
  }
  // The escape alone, as text, is fine.
  const escaped = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'a\\u0000b' } })
  expect(escaped.status).toBe(201)
  expect(await h.orm.$count(h.tables.threads)).toBe(1)
})

test('the caller is checked before the body is read: 401 first, and the body is left unread', async () => {
  await using h = await harness()
  const invalid = await h.call('POST', '/api/v1/threads', { body: { unknown: 'field' } })
  expect({ status: invalid.status, error: invalid.body.error }).toEqual({ status: 401, error: 'unauthorized' })
  for (const path of ['/api/v1/threads', '/settings/api/oauth-clients']) {
    const { body, pulls } = countedBody()
    const response = await h.app.handle(
      new Request(`${publicUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024) },
        body,
      }),
    )
    expect(response.status).toBe(401)
    // At most what the platform buffers on its own: a read would have taken all sixteen chunks.
    expect(pulls()).toBeLessThanOrEqual(2)
  }
  // A token without the scope is 403, also before the body.
  const reader = await h.user({ scopes: ['threads:read'] })
  const scope = await h.call('POST', '/api/v1/threads', { token: reader.token, body: megabyteDeep })
  expect({ status: scope.status, error: scope.body.error }).toEqual({ status: 403, error: 'insufficient_scope' })
})

test('JSON routes take application/json only: other media types are 415 and create nothing', async () => {
  await using h = await harness()
  const owner = await h.user()
  const form = new FormData()
  form.set('text', 'x'.repeat(5 * 1024 * 1024))
  const bodies: [string, RequestInit['body'], Record<string, string>][] = [
    ['multipart', form, {}],
    ['urlencoded', new URLSearchParams({ text: 'hello' }), {}],
    ['text', '{"text":"hello"}', { 'content-type': 'text/plain' }],
    ['none', '{"text":"hello"}', { 'content-type': '' }],
  ]
  for (const [, body, headers] of bodies) {
    const response = await h.app.handle(
      new Request(`${publicUrl}/api/v1/threads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, ...headers },
        body,
      }),
    )
    // A 5 MiB multipart body is refused by its length, before any route: only the upload and composer take it.
    expect([413, 415]).toContain(response.status)
    if (response.status === 415) {
      expect(await response.json()).toEqual({ error: 'unsupported_media_type', message: expect.any(String) })
      expect(response.headers.get('accept-post')).toBe('application/json')
    }
  }
  expect(await h.orm.select().from(h.tables.threads)).toEqual([])
  const small = new FormData()
  small.set('text', 'hello')
  const multipart = await h.call('POST', '/api/v1/threads', { token: owner.token, body: small })
  expect(multipart.status).toBe(415)
  const charset = await h.call('POST', '/api/v1/threads', {
    token: owner.token,
    body: { text: 'hello' },
    headers: { 'content-type': 'application/json; charset=utf-8' },
  })
  expect(charset.status).toBe(201)
})

test('multipart bodies over the JSON bound are refused by length except on the upload and the composer', async () => {
  await using h = await harness()
  const owner = await h.user()
  const big = { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(5 * 1024 * 1024) }
  for (const path of ['/api/v1/threads', '/settings/api/oauth-clients', '/oauth/register', '/login']) {
    const response = await h.app.handle(new Request(`${publicUrl}${path}`, { method: 'POST', headers: big }))
    expect({ path, status: response.status }).toEqual({ path, status: 413 })
  }
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  // The upload judges its own body: an empty one is its own 400, not the JSON bound's 413.
  const upload = await h.app.handle(
    new Request(`${publicUrl}/api/v1/threads/${thread_id}/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'multipart/form-data; boundary=x' },
      body: '--x--\r\n',
    }),
  )
  expect(upload.status).toBe(400)
})

test('open streams are limited per person, whatever their tokens, and per process, with 429 and Retry-After', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner, config: { STREAM_LIMIT_PER_USER: 2, STREAM_LIMIT_TOTAL: 3 } })
  const owner = await h.user()
  const second = await createPersonalAccessToken(
    h.store.accessTokens,
    { user: await tokenHolder(h.store, owner.id), name: 'second', scopes: ['threads:read'] },
    0,
    testOrigin,
  )
  const { thread_id, message_id } = (
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'go' } })
  ).body
  const job = await runner.started(message_id)
  job.token('so far ')
  const path = `/api/v1/threads/${thread_id}/messages/${message_id}/response/stream`
  const first = await openStream(h, path, owner.token)
  const other = await openStream(h, path, second)
  const refused = await h.call('GET', path, { token: second })
  expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 429, error: 'too_many_streams' })
  expect(refused.headers.get('retry-after')).toBe('5')
  // Another person may still open one, up to the process's limit of three.
  const colleague = await h.user({ scopes: ['threads:read'] })
  const theirs = await openStream(h, path, colleague.token)
  expect(theirs.status).toBe(200)
  const full = await h.call('GET', path, { token: (await h.user()).token })
  expect(full.status).toBe(429)
  // A stream whose client goes away gives its place back.
  await other.events.next()
  await other.events.return(undefined)
  expect((await openStream(h, path, second)).status).toBe(200)
  job.token('done now')
  job.done()
  expect(tokensOf(await collect(first.events))).toBe('so far done now')
  expect((await h.call('GET', path, { token: colleague.token })).status).toBe(200)
})

test('done only when the thread is ready: an older answer’s stream and poll wait for a newer answer', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'one' } })).body
  const first = await runner.started(created.message_id)
  first.token('first answer')
  first.done()
  const base = `/api/v1/threads/${created.thread_id}/messages`
  const poll = (id: string) => h.call('GET', `${base}/${id}/response`, { token: owner.token })
  // On PostgreSQL the answer is stored a moment after `done`.
  await until(async () => (await poll(created.message_id)).status === 200)
  const sent = await h.call('POST', base, { token: owner.token, body: { text: 'two' } })
  const second = await runner.started(sent.body.message_id)
  // The first answer is complete, but the thread is busy: the poll says processing, the stream holds `done`.
  expect((await poll(created.message_id)).body).toEqual({ status: 'processing' })
  const stream = await openStream(h, `${base}/${created.message_id}/response/stream`, owner.token)
  const replay = await stream.events.next()
  expect(replay.value?.event).toBe('token')
  const ending = stream.events.next()
  second.token('second answer')
  second.done()
  expect((await ending).value).toEqual({ id: '12', event: 'done', data: '{}' })
  expect((await h.call('GET', `/api/v1/threads/${created.thread_id}`, { token: owner.token })).body.state).toBe('ready')
  expect((await poll(created.message_id)).status).toBe(200)
})

test('when the newer answer fails, the older answer’s waiting stream ends with error, never done', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'one' } })).body
  ;(await runner.started(created.message_id)).done()
  await ready(h, owner.token, created.thread_id)
  const base = `/api/v1/threads/${created.thread_id}/messages`
  const sent = await h.call('POST', base, { token: owner.token, body: { text: 'two' } })
  const second = await runner.started(sent.body.message_id)
  const stream = await openStream(h, `${base}/${created.message_id}/response/stream`, owner.token)
  const events = collect(stream.events)
  second.error('The model is unreachable')
  expect((await events).map((event) => event.event)).toEqual(['error'])
})

test('unknown methods on known paths are 405 with Allow; unknown paths stay 404', async () => {
  await using h = await harness()
  const put = await h.call('PUT', '/api/v1/threads')
  expect({ status: put.status, allow: put.headers.get('allow'), error: put.body.error }).toEqual({
    status: 405,
    allow: 'GET, HEAD, POST',
    error: 'method_not_allowed',
  })
  const thread = await h.call('DELETE', '/api/v1/threads/0190a6c4-1d5c-7000-8000-000000000000/messages')
  expect({ status: thread.status, allow: thread.headers.get('allow') }).toEqual({
    status: 405,
    allow: 'GET, HEAD, POST',
  })
  expect((await h.call('DELETE', '/healthz')).headers.get('allow')).toBe('GET, HEAD')
  expect((await h.call('GET', '/api/v1/nothing-here')).status).toBe(404)
})

test('open registration never parses a body nested deeper than client metadata can be', async () => {
  await using h = await harness()
  const reply = await h.call('POST', '/oauth/register', { body: `{"client_name":${megabyteDeep}}` })
  expect({ status: reply.status, error: reply.body.error }).toEqual({ status: 400, error: 'invalid_client_metadata' })
})

test('every route that may receive a body says how it reads it: as JSON after its guard, or not at all', async () => {
  await using h = await harness()
  const unread: string[] = []
  for (const route of h.app.routes) {
    if (['GET', 'HEAD', 'OPTIONS'].includes(route.method)) continue
    const hooks = (route.hooks as { parse?: unknown }).parse
    const names = (Array.isArray(hooks) ? hooks : hooks === undefined ? [] : [hooks]).map((hook) => {
      const fn = typeof hook === 'object' && hook !== null && 'fn' in hook ? hook.fn : hook
      return typeof fn === 'string' ? fn : typeof fn === 'function' ? fn.name : ''
    })
    // Elysia's own parser would buffer and parse whatever arrives, before the route could judge it; and a JSON
    // body is read only after the guard's own hook (named `parse`) has checked the caller.
    const json = names.indexOf('readJsonBody')
    const guarded = json > 0 && names.indexOf('parse') >= 0 && names.indexOf('parse') < json
    if (!names.includes('none') && !guarded) unread.push(`${route.method} ${route.path}`)
  }
  expect(unread).toEqual([])
})

/** A generator that, like a real one, lets go of a stopped answer a while after it is asked to. */
class SlowToStopRunner extends ScriptedRunner {
  readonly stopping = new Map<string, () => void>()
  override cancel(jobId: string): void {
    const job = this.jobs.get(jobId)
    this.jobs.delete(jobId)
    if (job) this.stopping.set(jobId, () => job.handlers.cancelled())
  }
}

test('while a newer answer is being stopped, an older answer’s poll says processing and its stream waits', async () => {
  const runner = new SlowToStopRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'one' } })).body
  ;(await runner.started(created.message_id)).done()
  await ready(h, owner.token, created.thread_id)
  const base = `/api/v1/threads/${created.thread_id}/messages`
  const sent = await h.call('POST', base, { token: owner.token, body: { text: 'two' } })
  await runner.started(sent.body.message_id)
  expect((await h.call('POST', `/api/v1/threads/${created.thread_id}/stop`, { token: owner.token })).status).toBe(202)
  const thread = await h.call('GET', `/api/v1/threads/${created.thread_id}`, { token: owner.token })
  expect(thread.body.state).toBe('interrupted')
  const poll = await h.call('GET', `${base}/${created.message_id}/response`, { token: owner.token })
  expect(poll.status).toBe(202)
  const stream = await openStream(h, `${base}/${created.message_id}/response/stream`, owner.token)
  const events = collect(stream.events)
  runner.stopping.get(sent.body.message_id)?.()
  expect((await events).map((event) => event.event)).toEqual(['done'])
  expect((await h.call('GET', `${base}/${created.message_id}/response`, { token: owner.token })).status).toBe(200)
})

test('MCP and closed registration read no body they need not: depth-bounded JSON-RPC, registration access first', async () => {
  await using h = await harness({ config: { OAUTH_OPEN_REGISTRATION: false } })
  const owner = await h.user()
  const mcp = await h.app.handle(
    new Request(`${publicUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_threads","arguments":${megabyteDeep}}}`,
    }),
  )
  expect({ status: mcp.status, body: await mcp.json() }).toEqual({
    status: 400,
    body: { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is nested too deep' }, id: null },
  })
  const { body, pulls } = countedBody()
  const registration = await h.app.handle(
    new Request(`${publicUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024) },
      body,
    }),
  )
  expect(registration.status).toBe(401)
  expect(pulls()).toBeLessThanOrEqual(2)
})

test('a JSON body too deep or too wide is refused once that much of it has arrived, never read to its end', async () => {
  await using h = await harness()
  const owner = await h.user()
  const post = (path: string, body: ReadableStream<Uint8Array>) =>
    h.app.handle(
      new Request(`${publicUrl}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      }),
    )
  // At most what the platform buffers ahead of a reader: reading the body to its end takes all sixteen chunks.
  const deep = countedBody()
  const api = await post('/api/v1/threads', deep.body)
  expect({ status: api.status, body: await api.json() }).toEqual({
    status: 400,
    body: { error: 'invalid_request', message: `The body is nested more than ${maxJsonDepth} levels deep` },
  })
  expect(deep.pulls()).toBeLessThanOrEqual(2)
  // Issue 33's body, a tools/list whose params hold hundreds of thousands of keys, refused at its 2,001st value.
  const keys = (pull: number) => Array.from({ length: 5000 }, (_, i) => `"k${pull * 5000 + i}":0,`).join('')
  const wide = countedBody((pull) =>
    pull === 1 ? '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{' : keys(pull),
  )
  const mcp = await post('/mcp', wide.body)
  expect({ status: mcp.status, body: await mcp.json() }).toEqual({
    status: 400,
    body: {
      jsonrpc: '2.0',
      error: {
        code: -32700,
        message: 'Parse error: the body holds more than 2000 values (array elements and object members)',
      },
      id: null,
    },
  })
  expect(wide.pulls()).toBeLessThanOrEqual(3)
})

test('the shape scan counts depth and values exactly, however the bytes arrive', () => {
  /** Depth and values (array elements and object members) of a parsed value, walked. */
  const shapeOf = (value: unknown, depth = 0): JsonBounds => {
    if (value === null || typeof value !== 'object') return { depth, elements: 0 }
    const children = Object.values(value)
    const shape = { depth: depth + 1, elements: children.length }
    for (const child of children) {
      const inner = shapeOf(child, depth + 1)
      shape.depth = Math.max(shape.depth, inner.depth)
      shape.elements += inner.elements
    }
    return shape
  }
  const text = fc.oneof(
    fc.jsonValue(),
    fc.jsonValue({ maxDepth: 3 }).map((value) => ({ '\\"[{,': value })),
  )
  fc.assert(
    fc.property(text, fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), (value, cuts, spaced) => {
      const bytes = new TextEncoder().encode(JSON.stringify(value, null, spaced ? 2 : undefined))
      const scanned = (bounds: JsonBounds) => {
        const scan = new JsonShapeScan(bounds)
        let from = 0
        for (const at of [...cuts.map((cut) => cut % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
          scan.feed(bytes.subarray(from, Math.max(from, at)))
          from = Math.max(from, at)
        }
        return scan.problem
      }
      const shape = shapeOf(value)
      expect(scanned(shape)).toBeNull()
      if (shape.depth > 0) expect(scanned({ ...shape, depth: shape.depth - 1 })).toBe('depth')
      if (shape.elements > 0) expect(scanned({ ...shape, elements: shape.elements - 1 })).toBe('width')
    }),
    { numRuns: 2000 },
  )
})

test('the last event sets a day’s reconnection delay, except a restart’s error: that answer comes back', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const raw = async (end: (messageId: string) => void): Promise<string> => {
    const { thread_id, message_id } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'go' } })
    ).body
    await runner.started(message_id)
    const path = `/api/v1/threads/${thread_id}/messages/${message_id}/response/stream`
    const response = await h.app.handle(
      new Request(`${publicUrl}${path}`, { headers: { authorization: `Bearer ${owner.token}` } }),
    )
    end(message_id)
    return await response.text()
  }
  const hub = h.app.decorator.engine.hub
  expect(await raw((id) => hub.finish(id, { error: 'The model failed' }))).toContain('retry: 86400000\n')
  const restart = await raw((id) => hub.finish(id, { error: 'Restarting', resumable: true }))
  expect(restart).toContain('event: error')
  expect(restart).not.toContain('retry:')
})
