// The MCP client (connectors/client.ts) against a real SDK server on loopback (support/mcp-upstream.ts), storing what
// it learns in the run's backend: tools listed, checked and stored, calls made with the server's own headers and
// nothing else, and each way a server can misbehave (hanging, failing, lying, flooding, forgetting its session) ending
// as an outcome rather than an exception. Loopback is only reachable with WEBHOOKS_ALLOW_PRIVATE_NETWORKS' switch on,
// so every test meant to arrive runs with it, and the switch's refusal is checked through a name a resolver answers.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { createMcpConnections } from '../src/connectors/client'
import { type McpServerRow, sealedFor } from '../src/connectors/repository'
import { resultText } from '../src/connectors/result'
import { checkTool } from '../src/connectors/tool-list'
import { silentLogger } from '../src/shared/log'
import type { OutboundRules } from '../src/shared/outbound/guarded-fetch'
import { secretBox } from '../src/shared/secret-box'
import { testEvent } from './support/audit'
import { harness, until } from './support/helpers'
import { mcpUpstream } from './support/mcp-upstream'

const staticHeaders = { Authorization: 'Bearer upstream-only-secret', 'X-Team': 'docs' }

async function setup(outbound: Partial<Omit<OutboundRules, 'userAgent'>> = {}) {
  const h = await harness()
  const user = await h.user({ org: 'acme', role: 'owner' })
  const [row] = await h.orm
    .select({ organizationId: h.tables.users.organizationId })
    .from(h.tables.users)
    .where(eq(h.tables.users.id, user.id))
  const organizationId = (row as { organizationId: number }).organizationId
  const up = mcpUpstream()
  const box = secretBox({ current: randomBytes(32).toString('base64') })
  const servers = h.store.mcpServers
  const pool = createMcpConnections({
    servers,
    box,
    outbound: { allowPrivateNetworks: true, timeoutMs: 10_000, maxResponseBytes: 1_000_000, ...outbound },
    resultMaxChars: 2000,
    log: silentLogger,
    idleMs: 60_000,
  })
  /** A server with the static headers, at the upstream's URL unless told. */
  const addServer = async (url = up.url): Promise<McpServerRow> => {
    const id = Bun.randomUUIDv7()
    const added = await servers.add(
      {
        id,
        organizationId,
        name: 'docs',
        url,
        auth: 'headers',
        headersSealed: box.seal(JSON.stringify(staticHeaders), sealedFor.headers(id)),
        headerNames: Object.keys(staticHeaders),
        trusted: false,
        createdBy: user.id,
        now: Date.now(),
      },
      () => testEvent('mcp_server.added'),
    )
    if (!added) throw new Error('server not added')
    return added
  }
  const reread = async (server: McpServerRow) => (await servers.get(organizationId, server.id)) as McpServerRow
  return {
    h,
    up,
    pool,
    servers,
    box,
    addServer,
    reread,
    async [Symbol.asyncDispose]() {
      await pool.close()
      await up[Symbol.asyncDispose]()
      await h[Symbol.asyncDispose]()
    },
  }
}

const never = () => new AbortController().signal

test('lists, stores and calls tools over one client, sending the server’s own headers and no other credential', async () => {
  await using s = await setup()
  const server = await s.addServer()
  expect(await s.pool.refresh(server)).toEqual({ status: 'ok', tools: 2, error: null })
  const stored = await s.servers.tools(server.id)
  expect(stored.map((tool) => [tool.name, tool.enabled, tool.readOnly, tool.problem])).toEqual([
    ['delete_page', true, false, null],
    ['search_docs', true, true, null],
  ])
  const after = await s.reread(server)
  expect([after.status, after.lastError, after.toolsRefreshedAt !== null]).toEqual(['ok', null, true])

  const found = await s.pool.call(after, 'search_docs', { query: 'mcp' }, never())
  expect(found).toEqual({ status: 'ok', text: 'Found 2 pages for mcp', chars: 21, error: null })
  const deleted = await s.pool.call(after, 'delete_page', { page: 'Home' }, never())
  expect(deleted.text).toBe('Deleted Home')
  expect(s.up.deletes).toBe(1)

  // One client: a single initialize (the only request without a session) served the refresh and both calls.
  expect(s.up.requests.filter((request) => request.headers['mcp-session-id'] === undefined)).toHaveLength(1)
  expect(s.pool.size).toBe(1)
  for (const request of s.up.requests) {
    expect(request.headers.authorization).toBe(staticHeaders.Authorization)
    expect(request.headers['x-team']).toBe('docs')
    expect(request.headers.cookie).toBeUndefined()
    expect(request.headers['user-agent']).toBe('Threadhouse-MCP/1')
  }
})

test('tools announced by list_changed are stored turned off; those listed at first stay as admins left them', async () => {
  await using s = await setup()
  const server = await s.addServer()
  await s.pool.refresh(server)
  await s.servers.setToolEnabled(server.organizationId, server.id, 'delete_page', false)
  // The announcement travels on the client's GET stream, which opens after the session starts.
  await until(() => s.up.requests.some((request) => request.method === 'GET'))
  await s.up.addTool({ name: 'new_tool' })
  const stored = await until(async () => {
    const tools = await s.servers.tools(server.id)
    return tools.some((tool) => tool.name === 'new_tool') && tools
  })
  expect(stored.map((tool) => [tool.name, tool.enabled])).toEqual([
    ['delete_page', false],
    ['new_tool', false],
    ['search_docs', true],
  ])
})

test('a tool whose input schema is not an object gets a problem; structured content breaking its schema is an error', async () => {
  await using s = await setup()
  s.up.mode = 'lie'
  const server = await s.addServer()
  expect((await s.pool.refresh(server)).tools).toBe(3)
  const stored = await s.servers.tools(server.id)
  const odd = stored.find((tool) => tool.name === 'odd_args')
  expect(odd?.problem).toBe("its inputSchema is not a JSON Schema of type 'object'")
  expect(stored.find((tool) => tool.name === 'search_docs')?.problem).toBeNull()
  expect((await s.servers.offerable(server.organizationId)).map(({ tool }) => tool.name)).toEqual([
    'delete_page',
    'search_docs',
  ])

  const lied = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(lied.status).toBe('error')
  expect(lied.error).toContain("does not match the tool's output schema")
})

test('a result or tool list past MCP_RESPONSE_MAX_BYTES is an error naming the bound, at once rather than at the timeout', async () => {
  await using s = await setup({ maxResponseBytes: 1_000_000, timeoutMs: 60_000 })
  const server = await s.addServer()
  await s.pool.refresh(server)
  s.up.mode = 'huge'
  const started = performance.now()
  const huge = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(huge.status).toBe('error')
  expect(huge.error).toContain('more than 1000000 bytes')
  expect(performance.now() - started).toBeLessThan(30_000)
  // A tool list as large fails the same way, whether refreshed or read as a client opens.
  const refreshed = await s.pool.refresh(server)
  expect(refreshed.status).toBe('error')
  expect(refreshed.error).toContain('more than 1000000 bytes')
  expect((await s.reread(server)).lastError).toBe(refreshed.error)
  s.pool.forget(server.id)
  const opening = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(opening.error).toContain('more than 1000000 bytes')
  expect(performance.now() - started).toBeLessThan(30_000)
  // The pool recovers once the server behaves.
  s.up.mode = 'normal'
  expect((await s.pool.call(server, 'search_docs', { query: 'y' }, never())).status).toBe('ok')
})

test('a tool that never answers times out at MCP_TIMEOUT_MS, and the server is told to stop', async () => {
  await using s = await setup({ timeoutMs: 1000 })
  const server = await s.addServer()
  await s.pool.refresh(server)
  s.up.mode = 'hang'
  const started = performance.now()
  const hung = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(hung).toMatchObject({ status: 'timeout', error: 'no answer within 1000 ms' })
  expect(performance.now() - started).toBeLessThan(5000)
  await until(() => s.up.cancelled === 1)
})

test('isError and a JSON-RPC error are errors with a short reason; the tool’s own text is what the model reads', async () => {
  await using s = await setup()
  const server = await s.addServer()
  s.up.mode = 'fail'
  const failed = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(failed).toEqual({
    status: 'error',
    text: 'No page matches {"query":"x"}\nsecond line',
    chars: 41,
    error: 'No page matches {"query":"x"}',
  })
  s.up.mode = 'throw'
  const thrown = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(thrown.status).toBe('error')
  expect(thrown.error).toContain('the index is down')
})

test('the caller’s signal ends a call under way, and the server hears of it', async () => {
  await using s = await setup()
  const server = await s.addServer()
  s.up.mode = 'hang'
  const stop = new AbortController()
  const call = s.pool.call(server, 'delete_page', { page: 'Home' }, stop.signal)
  await until(() => s.up.deletes === 1)
  stop.abort(new Error('the answer was cancelled'))
  expect(await call).toMatchObject({
    status: 'unknown',
    error: 'cancelled while running; whether it took effect is unknown',
  })
  await until(() => s.up.cancelled === 1)
  expect(s.up.requests.filter((request) => request.rpc === 'notifications/cancelled')).toHaveLength(1)

  // A signal aborted after its call was answered cancels nothing more.
  s.up.mode = 'normal'
  const later = new AbortController()
  expect((await s.pool.call(server, 'search_docs', { query: 'x' }, later.signal)).status).toBe('ok')
  later.abort()
  expect((await s.pool.call(server, 'search_docs', { query: 'y' }, never())).status).toBe('ok')
  expect(s.up.requests.filter((request) => request.rpc === 'notifications/cancelled')).toHaveLength(1)
})

test('a private address is refused with the switch off, and nothing reaches it', async () => {
  await using s = await setup({ allowPrivateNetworks: false, resolve: async () => ['127.0.0.1'] })
  const server = await s.addServer(`http://upstream.example:${s.up.port}/mcp`)
  const refreshed = await s.pool.refresh(server)
  expect(refreshed).toEqual({
    status: 'error',
    tools: 0,
    error: 'upstream.example resolves to 127.0.0.1, a non-public address',
  })
  expect([(await s.reread(server)).status, (await s.reread(server)).lastError]).toEqual(['error', refreshed.error])
  const called = await s.pool.call(server, 'search_docs', { query: 'x' }, never())
  expect(called).toMatchObject({
    status: 'error',
    error: 'upstream.example resolves to 127.0.0.1, a non-public address',
  })
  expect(s.up.requests).toHaveLength(0)
  expect(s.pool.size).toBe(0)
})

test('a tool list whose session the server forgot is read again once; a call is not sent again but the next opens a new session', async () => {
  await using s = await setup()
  const server = await s.addServer()
  await s.pool.refresh(server)
  await s.up.forgetSessions()
  expect((await s.pool.refresh(server)).status).toBe('ok')
  const opened = () => s.up.requests.filter((request) => request.headers['mcp-session-id'] === undefined)
  expect(opened()).toHaveLength(2)

  // A call is sent at most once: the 404 is its error, and only the call after it opens a session again.
  await s.up.forgetSessions()
  const calls = () => s.up.requests.filter((request) => request.rpc === 'tools/call')
  const lost = await s.pool.call(server, 'delete_page', { page: 'Home' }, never())
  expect(lost).toMatchObject({ status: 'error', error: expect.stringContaining('HTTP 404') })
  expect(calls()).toHaveLength(1)
  expect(opened()).toHaveLength(2)
  expect(s.up.deletes).toBe(0)
  expect(s.pool.size).toBe(0)
  expect((await s.pool.call(server, 'search_docs', { query: 'x' }, never())).status).toBe('ok')
  expect(calls()).toHaveLength(2)
  expect(opened()).toHaveLength(3)

  await s.pool.closeIdle(Date.now() + 1000)
  expect(s.pool.size).toBe(1)
  await s.pool.closeIdle(Date.now() + 60_000)
  expect(s.pool.size).toBe(0)
  expect(s.up.requests.at(-1)?.method).toBe('DELETE')

  // Needed again, a client is opened again; forget drops it at once.
  expect((await s.pool.call(server, 'search_docs', { query: 'x' }, never())).status).toBe('ok')
  s.pool.forget(server.id)
  expect(s.pool.size).toBe(0)
})

test('results become text: images and resources named, structured content as JSON, long text cut with a note', () => {
  expect(
    resultText(
      {
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource_link', uri: 'https://example.com/a', name: 'a' },
          { type: 'resource', resource: { uri: 'file:///b', text: 'inline text' } },
          { type: 'resource', resource: { uri: 'file:///c', blob: 'AAAA' } },
        ],
      },
      1000,
    ).text,
  ).toBe('one\n[image: image/png]\n[resource: https://example.com/a]\ninline text\n[resource: file:///c]')
  expect(resultText({ content: [], structuredContent: { count: 2 } }, 1000).text).toBe('{"count":2}')
  const cut = resultText({ content: [{ type: 'text', text: 'x'.repeat(5000) }] }, 1000)
  expect(cut.chars).toBe(5000)
  expect(cut.text.length).toBeLessThanOrEqual(1000)
  expect(cut.text).toEndWith(
    `…[truncated: the result had 5000 characters; the first ${cut.text.indexOf('\n')} are shown]`,
  )
  expect(resultText({ content: [], isError: true }, 1000)).toMatchObject({
    status: 'error',
    error: 'the tool reported an error without saying why',
  })
})

test('a tool’s name, schema and description are checked; a nameless entry is skipped', () => {
  const good = { name: 'search.docs-2', inputSchema: { type: 'object' } }
  expect(checkTool(good)?.tool.problem).toBeNull()
  expect(checkTool({ ...good, name: 'has space' })?.tool.problem).toContain('its name is not')
  expect(checkTool({ ...good, name: 'n'.repeat(65) })?.tool.problem).toContain('its name is not')
  const big = { type: 'object', properties: { a: { type: 'string', description: 'd'.repeat(17_000) } } }
  expect(checkTool({ ...good, inputSchema: big })?.tool).toMatchObject({
    problem: 'its inputSchema is larger than 16 KiB',
    inputSchema: null,
  })
  expect(checkTool({ ...good, description: 'd'.repeat(4097) })?.tool.problem).toBe(
    'its description is longer than 4096 characters',
  )
  expect(checkTool({ ...good, inputSchema: { type: 'object', properties: 3 } })?.tool.problem).toContain(
    'is not a valid JSON Schema',
  )
  expect(checkTool({ inputSchema: { type: 'object' } })).toBeNull()
})

test('a redirect is not followed, even to the same origin', async () => {
  await using s = await setup()
  const server = await s.addServer(s.up.url.replace('/mcp', '/moved'))
  const refreshed = await s.pool.refresh(server)
  expect(refreshed.status).toBe('error')
  expect(refreshed.error).toContain('redirects are not followed')
  expect(s.up.requests.map((request) => request.path)).toEqual(['/moved'])
})

test('calls at once share one client; a server whose headers changed gets a new one, sending the new headers', async () => {
  await using s = await setup()
  const server = await s.addServer()
  const outcomes = await Promise.all(
    ['a', 'b', 'c'].map((query) => s.pool.call(server, 'search_docs', { query }, never())),
  )
  expect(outcomes.map((outcome) => outcome.text)).toEqual([
    'Found 2 pages for a',
    'Found 2 pages for b',
    'Found 2 pages for c',
  ])
  const initializes = () => s.up.requests.filter((request) => request.headers['mcp-session-id'] === undefined)
  expect(initializes()).toHaveLength(1)

  const changed: McpServerRow = {
    ...server,
    headersSealed: s.box.seal(JSON.stringify({ Authorization: 'Bearer rotated' }), sealedFor.headers(server.id)),
  }
  expect((await s.pool.call(changed, 'search_docs', { query: 'd' }, never())).status).toBe('ok')
  expect(initializes()).toHaveLength(2)
  expect(initializes()[1]?.headers.authorization).toBe('Bearer rotated')
  expect(initializes()[1]?.headers['x-team']).toBeUndefined()
  expect(s.pool.size).toBe(1)
})

test('headers that cannot be opened are the call’s error, and nothing is sent', async () => {
  await using s = await setup()
  const server = await s.addServer()
  const foreign: McpServerRow = {
    ...server,
    headersSealed: secretBox({ current: randomBytes(32).toString('base64') }).seal('{}', sealedFor.headers(server.id)),
  }
  const called = await s.pool.call(foreign, 'search_docs', { query: 'x' }, never())
  expect(called.status).toBe('error')
  expect(called.error).toContain('A stored secret cannot be read')
  expect(s.up.requests).toHaveLength(0)
})
