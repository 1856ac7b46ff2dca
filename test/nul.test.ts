// U+0000 on every input path other than JSON bodies (request-hardening.test.ts has those): query strings, path
// parameters, form posts, multipart fields and the OAuth endpoints' Basic header. PostgreSQL's text cannot hold
// it, so each is refused with 400 before a query sees it, on both backends alike, in the shape of the path's
// surface: the API's `{ error, message }`, RFC 6749's `{ error, error_description }`, or an HTML page.
import { expect, test } from 'bun:test'
import { nulMessage } from '../src/shared/nul'
import { type Harness, harness } from './support/helpers'
import { Browser, basic, register, signedIn } from './support/oauth-helpers'
import { csrfOf } from './support/web-helpers'

// Some forty requests, a sign-in page and a client registration: seconds on a busy machine.

type Surface = 'api' | 'oauth' | 'page' | 'mcp'

interface Case {
  name: string
  surface: Surface
  send(): Promise<Response>
}

async function world(h: Harness) {
  const { browser, user } = await signedIn(h, { role: 'owner' })
  const csrf = await csrfOf(browser)
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'seed' } })
  await h.app.decorator.engine.idle()
  const client = await register(h)
  return {
    browser,
    csrf,
    token: user.token,
    thread: created.body.thread_id as string,
    message: created.body.message_id as string,
    clientId: client.client_id as string,
  }
}

/** Every input path but JSON bodies, each carrying U+0000 once. */
function cases(h: Harness, w: Awaited<ReturnType<typeof world>>): Case[] {
  const { browser, csrf, token, thread, message, clientId } = w
  const api = (path: string, init: RequestInit = {}) =>
    h.app.handle(
      new Request(`http://threadhouse.test${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      }),
    )
  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    h.app.handle(
      new Request(`http://threadhouse.test${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(fields),
      }),
    )
  // What the pages' own forms send: the session's CSRF token, from the page's origin.
  const sameOrigin = { origin: browser.origin, 'sec-fetch-site': 'same-origin' }
  const pageForm = (path: string, fields: Record<string, string>) =>
    browser.request('POST', path, {
      body: new URLSearchParams({ csrf, ...fields }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin },
    })
  const multipart = (path: string, fields: Record<string, string>) => {
    const body = new FormData()
    for (const [name, value] of Object.entries({ csrf, ...fields })) body.set(name, value)
    return browser.request('POST', path, { body, headers: sameOrigin })
  }
  const authorize = `client_id=${clientId}&response_type=code&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&scope=threads%3Aread`
  return [
    // Query strings and path parameters of the API.
    { name: 'search ?q=', surface: 'api', send: () => api('/api/v1/threads?q=a%00b') },
    { name: 'list cursor', surface: 'api', send: () => api('/api/v1/threads?cursor=%00') },
    { name: 'updated_since', surface: 'api', send: () => api('/api/v1/threads?updated_since=2026-01-01T00:00:00Z%00') },
    { name: 'messages ?after=', surface: 'api', send: () => api(`/api/v1/threads/${thread}/messages?after=%00`) },
    { name: 'thread ID in the path', surface: 'api', send: () => api(`/api/v1/threads/${thread}%00`) },
    {
      name: 'attachment ID in the path',
      surface: 'api',
      send: () => api(`/api/v1/threads/${thread}/attachments/%00`),
    },
    {
      name: 'a PATCH with a query',
      surface: 'api',
      send: () =>
        api(`/api/v1/threads/${thread}?x=%00`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: '{"name":"renamed"}',
        }),
    },
    {
      name: 'stream ?after=',
      surface: 'api',
      send: () => api(`/api/v1/threads/${thread}/messages/${message}/response/stream?after=%00`),
    },
    { name: 'MCP query', surface: 'mcp', send: () => api('/mcp?session=%00', { method: 'POST' }) },
    { name: 'limits query', surface: 'api', send: () => api('/api/v1/limits?x=%00') },
    {
      name: 'settings operation path parameter',
      surface: 'api',
      send: () => browser.get('/settings/api/oauth-clients/%00'),
    },
    // The OAuth endpoints: the form, the query, and the Basic header's client ID.
    {
      name: 'token: code',
      surface: 'oauth',
      send: () =>
        form('/oauth/token', {
          grant_type: 'authorization_code',
          code: 'a\u0000b',
          client_id: clientId,
          code_verifier: 'x'.repeat(43),
        }),
    },
    {
      name: 'token: client_id',
      surface: 'oauth',
      send: () => form('/oauth/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: '\u0000' }),
    },
    {
      name: 'token: Basic header',
      surface: 'oauth',
      send: () =>
        form(
          '/oauth/token',
          { grant_type: 'refresh_token', refresh_token: 'x' },
          { authorization: basic('a\u0000', 's') },
        ),
    },
    { name: 'token: query', surface: 'oauth', send: () => form('/oauth/token?x=%00', { grant_type: 'refresh_token' }) },
    {
      name: 'revoke: token',
      surface: 'oauth',
      send: () => form('/oauth/token/revoke', { token: '\u0000', client_id: clientId }),
    },
    {
      name: 'register: query',
      surface: 'oauth',
      send: () =>
        h.app.handle(
          new Request('http://threadhouse.test/oauth/register?x=%00', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ client_name: 'x', redirect_uris: ['http://127.0.0.1/callback'] }),
          }),
        ),
    },
    // Pages: query strings, path parameters, and their forms, urlencoded and multipart.
    { name: 'authorize query', surface: 'page', send: () => browser.get(`/oauth/authorize?${authorize}&state=%00`) },
    {
      name: 'consent form',
      surface: 'page',
      send: () => pageForm(`/oauth/authorize?${authorize}&state=s`, { decision: 'approve\u0000' }),
    },
    { name: 'sign-in ?next=', surface: 'page', send: () => Browser.inProcess(h).get('/login?next=%2F%00') },
    {
      name: 'sign-in form',
      surface: 'page',
      send: () => Browser.inProcess(h).postForm('/login', { email: 'a\u0000@example.com', password: 'p', csrf: 'x' }),
    },
    {
      name: 'OIDC callback',
      surface: 'page',
      send: () => Browser.inProcess(h).get('/login/oidc/callback?state=%00&code=c'),
    },
    { name: 'thread list ?q=', surface: 'page', send: () => browser.get('/threads?q=%00') },
    { name: 'thread list cursor', surface: 'page', send: () => browser.get('/threads?after=%00') },
    { name: 'thread page path', surface: 'page', send: () => browser.get(`/threads/${thread}%00`) },
    { name: 'new thread (multipart)', surface: 'page', send: () => multipart('/threads', { text: 'a\u0000b' }) },
    { name: 'new thread name', surface: 'page', send: () => multipart('/threads', { text: 'hi', name: '\u0000' }) },
    {
      name: 'composer (urlencoded)',
      surface: 'page',
      send: () => pageForm(`/threads/${thread}/messages`, { text: '\u0000' }),
    },
    { name: 'rename form', surface: 'page', send: () => pageForm(`/threads/${thread}/update`, { name: 'x\u0000' }) },
    {
      name: 'feedback form',
      surface: 'page',
      send: () =>
        pageForm(`/threads/${thread}/messages/${message}/feedback`, { positive: 'true', feedback_text: '\u0000' }),
    },
    {
      name: 'token form',
      surface: 'page',
      send: () => pageForm('/settings/tokens', { name: 'a\u0000', scope: 'threads:read' }),
    },
    { name: 'app revocation path', surface: 'page', send: () => pageForm('/settings/apps/%00/revoke', {}) },
    {
      name: 'client form',
      surface: 'page',
      send: () => pageForm('/settings/clients', { client_name: '\u0000', redirect_uris: 'http://127.0.0.1/cb' }),
    },
    {
      name: 'invite form',
      surface: 'page',
      send: () => pageForm('/admin/members', { email: 'b\u0000@example.com', role: 'member' }),
    },
    { name: 'member role path', surface: 'page', send: () => pageForm('/admin/members/%00/role', { role: 'admin' }) },
    {
      // The raw byte rather than `%00`: the form reader decodes both to the same text.
      name: 'raw NUL byte in a form',
      surface: 'page',
      send: () =>
        browser.request('POST', '/settings/tokens', {
          body: `csrf=${encodeURIComponent(csrf)}&name=a\u0000b&scope=threads%3Aread`,
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin },
        }),
    },
  ]
}

async function answerOf(response: Response): Promise<{ status: number; type: string; body: unknown }> {
  const type = response.headers.get('content-type') ?? ''
  const text = await response.text()
  return { status: response.status, type, body: type.startsWith('application/json') ? JSON.parse(text) : text }
}

const expected: Record<Surface, (answer: { body: unknown }) => unknown> = {
  api: () => ({ status: 400, type: 'application/json', body: { error: 'invalid_request', message: nulMessage } }),
  oauth: () => ({
    status: 400,
    type: 'application/json',
    body: { error: 'invalid_request', error_description: nulMessage },
  }),
  page: () => ({ status: 400, type: 'text/html; charset=utf-8', body: expect.stringContaining(nulMessage) }),
  // Every answer of /mcp after the token check is JSON-RPC, as for a JSON body holding U+0000.
  mcp: () => ({
    status: 400,
    type: 'application/json',
    body: {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: text may not contain U+0000' },
    },
  }),
}

test('U+0000 in a query, a path, a form or a Basic header is a 400 in the shape of the path, and stores nothing', async () => {
  await using h = await harness()
  const w = await world(h)
  const { threads, messages, oauthClients, personalAccessTokens } = h.tables
  const counts = () => Promise.all([threads, messages, oauthClients, personalAccessTokens].map((t) => h.orm.$count(t)))
  const before = await counts()
  const answers: Record<string, unknown> = {}
  const wanted: Record<string, unknown> = {}
  for (const one of cases(h, w)) {
    const answer = await answerOf(await one.send())
    // JSON answers carry no charset parameter; compare the media type.
    answers[one.name] = { ...answer, type: one.surface === 'page' ? answer.type : answer.type.split(';')[0] }
    wanted[one.name] = expected[one.surface](answer)
  }
  expect(answers).toEqual(wanted)
  expect(await counts()).toEqual(before)
})

test('behind a token or a session, 401 and 403 come first, as for every other problem of a request', async () => {
  await using h = await harness()
  const readOnly = (await h.user({ scopes: ['threads:read'] })).token
  const statuses = {
    noToken: (await h.call('GET', '/api/v1/threads?q=%00')).status,
    badToken: (await h.call('GET', '/api/v1/threads/%00', { token: 'thp_unknown' })).status,
    noScope: (await h.call('PATCH', '/api/v1/threads/%00', { token: readOnly, body: {} })).status,
    mcpNoToken: (await h.call('POST', '/mcp?x=%00')).status,
    settingsNoSession: (await h.call('GET', '/settings/api/oauth-clients?x=%00')).status,
    withScope: (await h.call('GET', '/api/v1/threads?q=%00', { token: readOnly })).status,
  }
  expect(statuses).toEqual({
    noToken: 401,
    badToken: 401,
    noScope: 403,
    mcpNoToken: 401,
    settingsNoSession: 401,
    withScope: 400,
  })
})

test('the pages answer the refusal as a page, with their headers; the escapes of NUL as text are fine', async () => {
  await using h = await harness()
  const w = await world(h)
  const refused = await w.browser.get('/threads?q=%00')
  expect({
    status: refused.status,
    csp: refused.headers.get('content-security-policy'),
    cache: refused.headers.get('cache-control'),
  }).toEqual({
    status: 400,
    csp:
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; form-action 'self'; " +
      "frame-ancestors 'none'; base-uri 'none'",
    cache: 'no-store',
  })
  expect(await refused.text()).toStartWith('<!doctype html>')
  // `%2500` is the text `%00`, and a backslash escape is text too: neither is U+0000.
  expect((await w.browser.get('/threads?q=%2500')).status).toBe(200)
  const search = await h.call('GET', '/api/v1/threads?q=%5Cu0000', { token: w.token })
  expect(search.status).toBe(200)
})
