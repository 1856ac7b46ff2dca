// Property-based hostile input: random and adversarial bodies, query strings, path parameters and
// headers sent to every endpoint always get a documented status with a JSON error body, never a 500,
// and a rejected request never changes the database.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { type Harness, harness, publicUrl } from './support/helpers'

const documented = new Set([200, 201, 202, 204, 400, 401, 403, 404, 409, 413, 415, 429])

async function counts(h: Harness): Promise<string> {
  const { threads, messages, generations, feedback } = h.tables
  return JSON.stringify(
    await Promise.all([threads, messages, generations, feedback].map((table) => h.orm.$count(table))),
  )
}

async function world() {
  const h = await harness()
  const owner = await h.user()
  const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'seed' } })).body
  await h.app.decorator.engine.idle()
  return { h, token: owner.token, thread: created.thread_id as string, message: created.message_id as string }
}

const endpoints = (thread: string, message: string): [string, string][] => [
  ['GET', '/api/v1/me'],
  ['GET', '/api/v1/threads'],
  ['POST', '/api/v1/threads'],
  ['GET', `/api/v1/threads/${thread}`],
  ['GET', `/api/v1/threads/${thread}/messages`],
  ['POST', `/api/v1/threads/${thread}/messages`],
  ['POST', `/api/v1/threads/${thread}/messages/${message}/feedback`],
  ['GET', `/api/v1/threads/${thread}/messages/${message}/response`],
]

async function expectDocumentedError(response: Response): Promise<void> {
  expect(documented.has(response.status)).toBe(true)
  if (response.status < 400) return
  expect(response.headers.get('content-type')).toContain('application/json')
  const body = await response.json()
  expect(body).toEqual(expect.objectContaining({ error: expect.any(String), message: expect.any(String) }))
  expect(JSON.stringify(body)).not.toMatch(/\bat .+:\d+:\d+|node_modules|\/src\//)
}

test('random JSON bodies', async () => {
  const { h, token, thread, message } = await world()
  const targets = endpoints(thread, message).filter(([method]) => method === 'POST')
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...targets), fc.jsonValue(), async ([method, path], body) => {
      const before = await counts(h)
      const response = await h.app.handle(
        new Request(`${publicUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
      await expectDocumentedError(response)
      if (response.status >= 400) expect(await counts(h)).toBe(before)
      await h.app.decorator.engine.idle()
    }),
    { numRuns: 150 },
  )
  await h[Symbol.asyncDispose]()
})

test('adversarial bodies: not JSON, wrong content types, deep nesting, huge strings', async () => {
  const { h, token, thread } = await world()
  const body = fc.oneof(
    fc.string(),
    fc.constant('{"text":'),
    fc.constant(`${'['.repeat(5000)}${']'.repeat(5000)}`),
    fc.constant(JSON.stringify({ text: 'x'.repeat(200_000) })),
    fc.constant(JSON.stringify({ text: 'x'.repeat(2_000_000) })), // 413, refused before parsing
    fc.constant(JSON.stringify({ text: '\u0000\ud800' })),
    fc.constant('{"text":"a","text":"b","__proto__":{"x":1}}'),
  )
  const contentType = fc.constantFrom(
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    '',
  )
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('/api/v1/threads', `/api/v1/threads/${thread}/messages`),
      body,
      contentType,
      async (path, text, type) => {
        const before = await counts(h)
        const response = await h.app.handle(
          new Request(`${publicUrl}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, ...(type ? { 'content-type': type } : {}) },
            body: text,
          }),
        )
        await expectDocumentedError(response)
        if (response.status >= 400) expect(await counts(h)).toBe(before)
        await h.app.decorator.engine.idle()
      },
    ),
    { numRuns: 60 },
  )
  await h[Symbol.asyncDispose]()
})

test('random query strings and path parameters', async () => {
  const { h, token, thread, message } = await world()
  const segment = fc.oneof(fc.string(), fc.uuid(), fc.constantFrom('..', '%00', '%2e%2e', thread, message, ''))
  const query = fc.array(
    fc.tuple(
      fc.oneof(fc.string(), fc.constantFrom('limit', 'after', 'q', 'sort_by', 'owned', 'updated_since')),
      fc.string(),
    ),
    { maxLength: 5 },
  )
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...endpoints(thread, message).filter(([method]) => method === 'GET')),
      segment,
      query,
      async ([, path], replacement, pairs) => {
        const mangled = path.replace(thread, encodeURIComponent(replacement))
        const search = new URLSearchParams(pairs).toString()
        const response = await h.app.handle(
          new Request(`${publicUrl}${mangled}${search ? `?${search}` : ''}`, {
            headers: { authorization: `Bearer ${token}` },
          }),
        )
        await expectDocumentedError(response)
      },
    ),
    { numRuns: 200 },
  )
  await h[Symbol.asyncDispose]()
})

test('random authorization headers are 401, never more', async () => {
  const { h, thread } = await world()
  const header = fc.oneof(
    fc.string(),
    fc.string().map((s) => `Bearer ${s}`),
    fc.string().map((s) => `Bearer thp_${s}`),
    fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer thp_x', `Bearer ${'a'.repeat(10_000)}`),
  )
  await fc.assert(
    fc.asyncProperty(header, async (authorization) => {
      let request: Request
      try {
        request = new Request(`${publicUrl}/api/v1/threads/${thread}`, { headers: { authorization } })
      } catch {
        return // not a header value a client could send
      }
      const response = await h.app.handle(request)
      expect(response.status).toBe(401)
      await expectDocumentedError(response)
    }),
    { numRuns: 150 },
  )
  await h[Symbol.asyncDispose]()
})
