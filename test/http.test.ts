// Cross-cutting HTTP behaviour: security headers, request IDs and logs, rate limits, CORS.

import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../src/shared/log'
import { firstRunToken, harness, ManualClock, startServer, until } from './support/helpers'
import { Browser } from './support/oauth-helpers'

test('every response carries security headers and a request ID', async () => {
  await using h = await harness()
  const user = await h.user()
  for (const reply of [
    await h.call('GET', '/api/v1/me', { token: user.token }),
    await h.call('GET', '/api/v1/me'),
    await h.call('GET', '/api/v1/threads/not-a-uuid', { token: user.token }),
    await h.call('GET', '/nowhere'),
  ]) {
    expect(reply.headers.get('x-content-type-options')).toBe('nosniff')
    expect(reply.headers.get('x-frame-options')).toBe('DENY')
    expect(reply.headers.get('referrer-policy')).toBe('no-referrer')
    expect(reply.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(reply.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(reply.headers.get('strict-transport-security')).toBeNull()
  }
  const echoed = await h.call('GET', '/healthz', { headers: { 'x-request-id': 'trace-42' } })
  expect(echoed.headers.get('x-request-id')).toBe('trace-42')
  const refused = await h.call('GET', '/healthz', { headers: { 'x-request-id': 'bad id\u0007' } })
  // A fresh ID replaces it ("not containing 'bad'" failed once: a random UUID held the hex digits b, a, d).
  expect(refused.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
})

test('HSTS is sent when the public URL is https', async () => {
  await using h = await harness({ config: { PUBLIC_URL: 'https://threads.example.com' } })
  expect((await h.call('GET', '/healthz')).headers.get('strict-transport-security')).toContain('max-age=')
})

test('access logs: one info line per request with the route pattern, never the token or the query string', async () => {
  const lines: string[] = []
  await using h = await harness({ log: createLogger('info', (line) => lines.push(line)) })
  const owner = await h.user()
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  await h.call('GET', `/api/v1/threads/${thread_id}?q=secret-words`, {
    token: owner.token,
    headers: { 'x-request-id': 'req-1' },
  })
  // The access log is written after the response has gone out.
  await until(() => lines.some((line) => line.includes('req-1')))
  const parsed = lines.map((line) => JSON.parse(line))
  expect(parsed.find((line) => line.requestId === 'req-1')).toEqual({
    time: expect.any(String),
    level: 'info',
    msg: 'request',
    requestId: 'req-1',
    method: 'GET',
    route: '/api/v1/threads/:threadId',
    status: 200,
    ms: expect.any(Number),
  })
  const all = lines.join('\n')
  expect(all).not.toContain(owner.token)
  expect(all).not.toContain('secret-words')
  expect(all).not.toContain(thread_id)
})

test('refused tokens and failed sign-ins are warnings that name no secret', async () => {
  const lines: string[] = []
  await using h = await harness({ log: createLogger('warn', (line) => lines.push(line)) })
  const owner = await h.user()
  await h.call('GET', '/api/v1/me', { token: 'thp_not-a-real-token', headers: { 'x-request-id': 'req-2' } })
  await h.call('GET', '/api/v1/me') // no token at all: nothing to warn about
  const browser = Browser.inProcess(h)
  expect((await browser.signIn(owner.email, 'wrong password here')).status).toBe(401)
  expect(lines.map((line) => JSON.parse(line))).toEqual([
    {
      time: expect.any(String),
      level: 'warn',
      msg: 'token refused',
      requestId: 'req-2',
      kind: 'personal access token',
    },
    {
      time: expect.any(String),
      level: 'warn',
      msg: 'sign-in failed',
      requestId: expect.any(String),
      email: owner.email,
      ip: null,
    },
  ])
  expect(lines.join('\n')).not.toContain('not-a-real-token')
  expect(lines.join('\n')).not.toContain('wrong password')
})

test('per-token rate limit answers 429 with Retry-After, and recovers when the window ends', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock, config: { RATE_LIMIT_API_PER_MINUTE: 3 } })
  const a = await h.user()
  const b = await h.user()
  for (let i = 0; i < 3; i++) expect((await h.call('GET', '/api/v1/me', { token: a.token })).status).toBe(200)
  const limited = await h.call('GET', '/api/v1/me', { token: a.token })
  expect(limited.status).toBe(429)
  expect(limited.body).toEqual({ error: 'rate_limited', message: expect.any(String) })
  expect(limited.headers.get('retry-after')).toBe('60')
  expect((await h.call('GET', '/api/v1/me', { token: b.token })).status).toBe(200)
  clock.advance(30_000)
  expect((await h.call('GET', '/api/v1/me', { token: a.token })).headers.get('retry-after')).toBe('30')
  clock.advance(30_000)
  expect((await h.call('GET', '/api/v1/me', { token: a.token })).status).toBe(200)
})

test('per-IP rate limit uses X-Forwarded-For only behind a trusted proxy', async () => {
  await using h = await harness({ config: { RATE_LIMIT_IP_PER_MINUTE: 2, TRUST_PROXY: true } })
  // The proxy appends the address it saw; what the client wrote before it changes nothing.
  const from = (ip: string, forged: string) =>
    h.call('GET', '/healthz', { headers: { 'x-forwarded-for': `${forged}, ${ip}` } })
  expect((await from('192.0.2.1', '10.0.0.1')).status).toBe(200)
  expect((await from('192.0.2.1', '10.0.0.2')).status).toBe(200)
  expect((await from('192.0.2.1', '10.0.0.3')).status).toBe(429)
  expect((await from('192.0.2.2', '10.0.0.3')).status).toBe(200)

  await using untrusted = await harness({ config: { RATE_LIMIT_IP_PER_MINUTE: 1 } })
  for (let i = 0; i < 3; i++) {
    const reply = await untrusted.call('GET', '/healthz', { headers: { 'x-forwarded-for': '192.0.2.1' } })
    expect(reply.status).toBe(200)
  }
})

test('API requests with a valid token count against the token, not the address; refused ones against the address', async () => {
  await using h = await harness({
    config: { RATE_LIMIT_IP_PER_MINUTE: 2, RATE_LIMIT_API_PER_MINUTE: 5, TRUST_PROXY: true },
  })
  const a = await h.user()
  const b = await h.user()
  const office = { 'x-forwarded-for': '192.0.2.1' }
  // Two people behind one address make more API requests than the address's allowance.
  for (const token of [a.token, b.token, a.token, b.token]) {
    expect((await h.call('GET', '/api/v1/me', { token, headers: office })).status).toBe(200)
  }
  expect((await h.call('GET', '/healthz', { headers: office })).status).toBe(200)
  expect((await h.call('GET', '/healthz', { headers: office })).status).toBe(200)
  expect((await h.call('GET', '/healthz', { headers: office })).status).toBe(429)
  // The address's window is full: a refused token, a missing one and an unknown API path are its requests.
  const guesses = [
    h.call('GET', '/api/v1/me', { token: 'thp_guess', headers: office }),
    h.call('GET', '/api/v1/me', { headers: office }),
    h.call('GET', '/api/v1/nothing-here', { token: a.token, headers: office }),
  ]
  for (const reply of await Promise.all(guesses)) {
    expect(reply.status).toBe(429)
    expect(reply.body).toEqual({ error: 'rate_limited', message: expect.any(String) })
    expect(reply.headers.get('retry-after')).toBe('60')
  }
  // A valid token is still served from the full address, up to its own limit.
  expect((await h.call('GET', '/api/v1/me', { token: a.token, headers: office })).status).toBe(200)
  // A body is read only for an address within its limit.
  const body = { name: 'From the office' }
  expect((await h.call('POST', '/api/v1/threads', { token: a.token, headers: office, body })).status).toBe(429)
  const elsewhere = { 'x-forwarded-for': '192.0.2.2' }
  expect((await h.call('GET', '/api/v1/me', { token: 'thp_guess', headers: elsewhere })).status).toBe(401)
  expect((await h.call('GET', '/api/v1/nothing-here', { token: a.token, headers: elsewhere })).status).toBe(404)
  expect((await h.call('GET', '/api/v1/me', { token: 'thp_guess', headers: elsewhere })).status).toBe(429)
  expect((await h.call('POST', '/api/v1/threads', { token: a.token, headers: elsewhere, body })).status).toBe(429)
})

test('preflights count against the address, and so do valid tokens when the per-token limit is off', async () => {
  await using h = await harness({
    config: {
      RATE_LIMIT_IP_PER_MINUTE: 2,
      RATE_LIMIT_API_PER_MINUTE: 0,
      TRUST_PROXY: true,
      CORS_ORIGINS: 'https://app.example',
    },
  })
  const a = await h.user()
  const from = { 'x-forwarded-for': '192.0.2.3' }
  const preflight = {
    ...from,
    origin: 'https://app.example',
    authorization: 'Bearer thp_guess',
    'access-control-request-method': 'GET',
  }
  expect((await h.call('OPTIONS', '/api/v1/me', { headers: preflight })).status).toBeLessThan(300)
  expect((await h.call('GET', '/api/v1/me', { token: a.token, headers: from })).status).toBe(200)
  expect((await h.call('GET', '/api/v1/me', { token: a.token, headers: from })).status).toBe(429)
})

test('CORS is closed by default and opens only to configured origins', async () => {
  await using closed = await harness()
  const plain = await closed.call('GET', '/healthz', { headers: { origin: 'https://app.example' } })
  expect(plain.headers.get('access-control-allow-origin')).toBeNull()

  await using open = await harness({ config: { CORS_ORIGINS: 'https://app.example' } })
  const allowed = await open.call('OPTIONS', '/api/v1/threads', {
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  })
  expect(allowed.status).toBeLessThan(300)
  expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example')
  const other = await open.call('GET', '/healthz', { headers: { origin: 'https://evil.example' } })
  expect(other.headers.get('access-control-allow-origin')).toBeNull()
})

test('bodies are judged by their length before they are read: 413 over the limit, 411 without a length', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bodies-'))
  const env = { DATABASE_PATH: join(dir, 'db.sqlite'), UPLOADS_DIR: dir, ADMIN_EMAIL: 'o@example.com' }
  await using server = await startServer({ ...env, ADMIN_PASSWORD: 'a long enough password' })
  const auth = { authorization: `Bearer ${await firstRunToken(server)}` }
  const json = { ...auth, 'content-type': 'application/json' }
  const big = JSON.stringify({ text: 'x'.repeat(1024 * 1024) })
  const refused = await fetch(`${server.url}/api/v1/threads`, { method: 'POST', headers: json, body: big })
  expect(refused.status).toBe(413)
  expect(await refused.json()).toEqual({ error: 'payload_too_large', message: expect.any(String) })
  // Sent chunked, a JSON body has no length to judge; clients send JSON with one.
  const chunked = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
    const headers = { ...json, 'transfer-encoding': 'chunked' }
    const request = httpRequest(`${server.url}/api/v1/threads`, { method: 'POST', headers }, (response) => {
      let body = ''
      response.on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: response.statusCode, body }))
    })
    request.on('error', reject).write('{"name":')
    request.end('"chunked"}')
  })
  expect(chunked.status).toBe(411)
  expect(JSON.parse(chunked.body)).toEqual({ error: 'length_required', message: expect.any(String) })
  // An upload far over its limit still gets the route's own 413 and body, not Bun's bare one.
  const created = await fetch(`${server.url}/api/v1/threads`, { method: 'POST', headers: json, body: '{}' })
  const { thread_id } = (await created.json()) as { thread_id: string }
  const form = new FormData()
  form.append('attachments[0]', new Blob([new Uint8Array(40 * 1024 * 1024)]), 'huge.bin')
  const upload = await fetch(`${server.url}/api/v1/threads/${thread_id}/attachments`, {
    method: 'POST',
    headers: auth,
    body: form,
  })
  expect(upload.status).toBe(413)
  expect(await upload.json()).toEqual({ message: expect.any(String) })
  rmSync(dir, { recursive: true, force: true })
})

test('over a real socket, the peer address is counted when a request needs it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-peer-'))
  const env = { DATABASE_PATH: join(dir, 'db.sqlite'), UPLOADS_DIR: dir, ADMIN_EMAIL: 'o@example.com' }
  await using server = await startServer({
    ...env,
    ADMIN_PASSWORD: 'a long enough password',
    RATE_LIMIT_IP_PER_MINUTE: '2',
  })
  const auth = { authorization: `Bearer ${await firstRunToken(server)}` }
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  expect((await fetch(`${server.url}/api/v1/me`, { headers: { authorization: 'Bearer thp_guess' } })).status).toBe(401)
  expect((await fetch(`${server.url}/healthz`)).status).toBe(429)
  expect((await fetch(`${server.url}/api/v1/me`, { headers: auth })).status).toBe(200)
  rmSync(dir, { recursive: true, force: true })
})
