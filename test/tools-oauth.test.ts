// A remote MCP server that signs in with OAuth, over real HTTP on loopback: Threadhouse A (on the run's backend, its
// MCP client through the guarded fetch, loopback reached with WEBHOOKS_ALLOW_PRIVATE_NETWORKS on) connects the /mcp
// of Threadhouse B (SQLite), whose own OAuth server is the authorization server. The admin on A adds B with OAuth and
// follows the redirects in test browsers (one per origin: both servers name their cookies alike), signing in and
// consenting on B; A's callback stores the tokens sealed, B's tools are listed on A, and a read-only tool returns B's
// data through A's ToolCaller. Expired, rejected and concurrently refreshed tokens, a revoked grant, and every way
// the callback refuses (a used, foreign or unknown state, denied consent) and a failed discovery follow.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { createMcpConnections, type McpConnections } from '../src/connectors/client'
import { oauthCallbackPath, type StoredTokens } from '../src/connectors/oauth-provider'
import type { ToolCaller } from '../src/connectors/ports'
import { type McpServerRow, sealedFor } from '../src/connectors/repository'
import { oauthClients } from '../src/oauth/oauth.table'
import { silentLogger } from '../src/shared/log'
import { secretBox } from '../src/shared/secret-box'
import { type Harness, harness } from './support/helpers'
import { connect, startServer } from './support/mcp-helpers'
import { Browser, decide, locationOf, password } from './support/oauth-helpers'
import { submit } from './support/web-helpers'

const secretsKey = randomBytes(32).toString('base64')
const box = secretBox({ current: secretsKey })
const outbound = { allowPrivateNetworks: true, timeoutMs: 10_000, maxResponseBytes: 4_000_000 }

/** Another instance of A's MCP client over the same database: what a second server process would hold. */
function mcpClient(h: Harness): McpConnections {
  return createMcpConnections({ servers: h.store.mcpServers, box, outbound, resultMaxChars: 20_000, log: silentLogger })
}

interface ServerA extends AsyncDisposable {
  origin: string
  h: Harness
  pool: McpConnections
}

/** Threadhouse A listening on loopback, with PUBLIC_URL its own origin (the callback's address is built from it). */
async function startA(): Promise<ServerA> {
  let handle: ((request: Request) => Promise<Response>) | null = null
  const listener = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => (handle ? handle(request) : new Response('starting', { status: 503 })),
  })
  const origin = `http://127.0.0.1:${listener.port}`
  // The app is built before the client it is handed, which needs the app's store: calls go through once both are.
  let pool: McpConnections | null = null
  const ready = () => {
    if (!pool) throw new Error('the MCP client is not built yet')
    return pool
  }
  const caller: ToolCaller = {
    call: (server, tool, args, signal) => ready().call(server, tool, args, signal),
    refresh: (server) => ready().refresh(server),
    forget: (serverId) => ready().forget(serverId),
  }
  const h = await harness({
    config: { PUBLIC_URL: origin, SECRETS_KEY: secretsKey, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true },
    toolCaller: caller,
  })
  const built = mcpClient(h)
  pool = built
  handle = (request) => h.app.handle(request)
  return {
    origin,
    h,
    pool: built,
    async [Symbol.asyncDispose]() {
      await built.close()
      await listener.stop(true)
      await h[Symbol.asyncDispose]()
    },
  }
}

async function adminOf(a: ServerA, role: 'admin' | 'owner' = 'admin') {
  const user = await a.h.user({ org: 'acme', role })
  const browser = Browser.overHttp(a.origin)
  const signed = await browser.signIn(user.email, password)
  if (signed.status !== 303) throw new Error(`sign-in on A failed with ${signed.status}`)
  const stored = await a.h.store.users.findByEmail(user.email)
  return { ...user, browser, organizationId: (stored as { organizationId: number }).organizationId }
}

/** Presses Authorize on the server's page: where A sends the browser (B's authorization endpoint). */
async function authorize(browser: Browser, serverId: string): Promise<URL> {
  const response = await submit(browser, `/admin/mcp-servers/${serverId}/authorize`)
  if (response.status !== 303) throw new Error(`Authorize answered ${response.status}: ${await response.text()}`)
  return locationOf(response)
}

async function sealedTokens(a: ServerA, serverId: string): Promise<{ sealed: string; tokens: StoredTokens }> {
  const row = await a.h.store.mcpServers.oauth(serverId)
  if (!row?.tokensSealed) throw new Error('no tokens stored')
  return {
    sealed: row.tokensSealed,
    tokens: JSON.parse(box.open(row.tokensSealed, sealedFor.tokens(serverId))) as StoredTokens,
  }
}

/** Rewrites A's stored tokens (sealed, as A would), as time or another party would have changed them. */
async function storeTokens(a: ServerA, serverId: string, change: (tokens: StoredTokens) => StoredTokens) {
  const { sealed, tokens } = await sealedTokens(a, serverId)
  const next = box.seal(JSON.stringify(change(tokens)), sealedFor.tokens(serverId))
  if (!(await a.h.store.mcpServers.swapTokens(serverId, sealed, next))) throw new Error('tokens changed meanwhile')
}

test('an admin connects another Threadhouse’s /mcp with OAuth: consent on B, sealed tokens on A, B’s tools called and refreshed', async () => {
  await using b = await startServer()
  await using a = await startA()
  const ada = await b.member()
  // B's data: a thread of Ada's, which A will read through B's get_thread once Ada has authorized A.
  await using mcpB = await connect(b.origin, ada.token)
  const created = await mcpB.callTool({ name: 'create_thread', arguments: { name: 'Roadmap kept on B' } })
  const threadId = (created.structuredContent as { thread: { id: string } }).thread.id

  const admin = await adminOf(a)
  const addedResponse = await submit(admin.browser, '/admin/mcp-servers', {
    name: 'threads-b',
    url: `${b.origin}/mcp`,
    oauth: 'true',
  })
  expect(addedResponse.status).toBe(303)
  const added = /^\/admin\/mcp-servers\/([^/?]+)\?notice=added-oauth$/.exec(addedResponse.headers.get('location') ?? '')
  const serverId = added?.[1] ?? ''
  const server = (await a.h.store.mcpServers.get(admin.organizationId, serverId)) as McpServerRow
  expect(server).toMatchObject({ auth: 'oauth', status: 'needs_authorization', headersSealed: null })
  // Until authorized, no request reaches B's tools: the call fails saying what to do.
  const early = await a.pool.call(server, 'get_thread', { thread_id: threadId }, AbortSignal.timeout(10_000))
  expect(early.status).toBe('error')
  expect(early.error).toContain('Authorize it again')
  const page = await admin.browser.get(`/admin/mcp-servers/${serverId}?notice=added-oauth`)
  const html = await page.text()
  expect(html).toContain('Authorize it to fetch its tools')
  expect(html).toContain('>Authorize</button>')
  // Authorize's redirect leaves for another origin, which a page's form-action 'self' would stop.
  expect(page.headers.get('content-security-policy')).not.toContain('form-action')

  const authorizationUrl = await authorize(admin.browser, serverId)
  expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${b.origin}/oauth/authorize`)
  const param = (name: string) => authorizationUrl.searchParams.get(name) ?? ''
  expect(Object.fromEntries(authorizationUrl.searchParams)).toMatchObject({
    response_type: 'code',
    client_id: expect.stringMatching(/^thcl_/),
    redirect_uri: `${a.origin}${oauthCallbackPath}`,
    code_challenge_method: 'S256',
    resource: `${b.origin}/mcp`,
    // What B's protected-resource metadata lists for /mcp, and nothing else.
    scope: 'threads:read threads:read:own threads:write',
  })
  const state = param('state')
  expect(state).toMatch(/^[A-Za-z0-9_-]{27}$/)
  // Registered dynamically as "Threadhouse"; the flow keeps only the state's hash and the sealed verifier.
  const clients = b.db.select({ name: oauthClients.name, clientId: oauthClients.clientId }).from(oauthClients).all()
  expect(clients).toEqual([{ name: 'Threadhouse', clientId: param('client_id') }])
  const clientId = param('client_id')
  const flows = await a.h.orm.select().from(a.h.tables.mcpOauthFlows)
  expect(flows).toHaveLength(1)
  expect(flows[0]?.stateHash).not.toContain(state)
  expect(flows[0]?.codeVerifierSealed).toStartWith('v1.')

  // On B: not signed in, so to the sign-in page first, then back to consent, where Ada allows.
  const browserB = Browser.overHttp(b.origin)
  const toSignIn = await browserB.get(authorizationUrl.href)
  expect(toSignIn.status).toBe(303)
  const next = new URL(toSignIn.headers.get('location') ?? '', b.origin).searchParams.get('next') ?? ''
  expect((await browserB.signIn(ada.email, password, next)).status).toBe(303)
  const callback = locationOf(await decide(browserB, next, 'approve'))
  expect(callback.origin + callback.pathname).toBe(`${a.origin}${oauthCallbackPath}`)
  expect(callback.searchParams.get('state')).toBe(state)

  const back = await admin.browser.get(callback.href)
  expect(back.status).toBe(303)
  expect((await a.h.store.mcpServers.get(admin.organizationId, serverId))?.lastError ?? null).toBeNull()
  expect(back.headers.get('location')).toBe(`/admin/mcp-servers/${serverId}?notice=authorized`)
  const authorizedPage = await (await admin.browser.get(back.headers.get('location') ?? '')).text()
  expect(authorizedPage).toContain('The server is authorized, and its tool list was fetched.')
  expect(authorizedPage).toContain('>Authorize again</button>')

  // A holds the tokens and the registration sealed, for this server's row only, and nothing of them in the clear.
  const oauthRows = await a.h.orm.select().from(a.h.tables.mcpServerOauth)
  expect(oauthRows).toHaveLength(1)
  const row = oauthRows[0] as (typeof oauthRows)[number]
  expect(row.tokensSealed).toStartWith('v1.')
  expect(row.clientInformationSealed).toStartWith('v1.')
  expect(row.authorizedBy).toBe(admin.id)
  const { tokens } = await sealedTokens(a, serverId)
  expect(tokens.access_token).toMatch(/^tho_/)
  expect(tokens.refresh_token).toMatch(/^thr_/)
  expect(tokens.expires_at).toBeGreaterThan(Date.now())
  expect(tokens.scope).toBe('threads:read threads:read:own threads:write')
  const everything = JSON.stringify({
    oauth: oauthRows,
    servers: await a.h.orm.select().from(a.h.tables.mcpServers),
    flows: await a.h.orm.select().from(a.h.tables.mcpOauthFlows),
  })
  expect(everything).not.toContain(tokens.access_token)
  expect(everything).not.toContain(tokens.refresh_token as string)
  expect(everything).not.toContain(clientId)
  expect(() => box.open(row.tokensSealed as string, sealedFor.tokens('another-server'))).toThrow()
  // The flow was used up.
  expect(await a.h.orm.select().from(a.h.tables.mcpOauthFlows)).toEqual([])

  // B's tools are listed on A (all on, as a first fetch), and a read-only one returns B's data.
  const listed = await a.h.store.mcpServers.tools(serverId)
  expect(listed.map((tool) => tool.name)).toContain('get_thread')
  expect(listed.find((tool) => tool.name === 'get_thread')).toMatchObject({ readOnly: true, enabled: true })
  expect(listed.find((tool) => tool.name === 'send_message')).toMatchObject({ readOnly: false })
  const authorized = (await a.h.store.mcpServers.get(admin.organizationId, serverId)) as McpServerRow
  expect(authorized).toMatchObject({ status: 'ok', lastError: null })
  const read = () => a.pool.call(authorized, 'get_thread', { thread_id: threadId }, AbortSignal.timeout(10_000))
  const first = await read()
  expect(first).toMatchObject({ status: 'ok', error: null })
  expect(first.text).toContain('Roadmap kept on B')

  // The access token expired: it is refreshed before the call, and the new pair is stored (sealed) for the next.
  await storeTokens(a, serverId, (stored) => ({ ...stored, expires_at: Date.now() - 1000 }))
  const expired = await read()
  expect(expired).toMatchObject({ status: 'ok', error: null })
  const refreshed = (await sealedTokens(a, serverId)).tokens
  expect(refreshed.access_token).not.toBe(tokens.access_token)
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
  expect(refreshed.expires_at).toBeGreaterThan(Date.now())

  // B refuses an access token it does not know (revoked, or its expiry unknown to A): the 401 refreshes it.
  await storeTokens(a, serverId, (stored) => ({
    ...stored,
    access_token: 'tho_not-a-token-b-issued',
    expires_at: null,
  }))
  expect(await read()).toMatchObject({ status: 'ok', error: null })
  const afterRejection = (await sealedTokens(a, serverId)).tokens
  expect(afterRejection.access_token).not.toBe('tho_not-a-token-b-issued')
  expect(afterRejection.refresh_token).not.toBe(refreshed.refresh_token)

  // Two instances find the token expired at once: both calls go through, and one valid pair is kept.
  await storeTokens(a, serverId, (stored) => ({ ...stored, expires_at: Date.now() - 1000 }))
  await using other = { pool: mcpClient(a.h), [Symbol.asyncDispose]: () => other.pool.close() }
  const both = await Promise.all([
    read(),
    other.pool.call(authorized, 'get_thread', { thread_id: threadId }, AbortSignal.timeout(10_000)),
  ])
  expect(both.map((outcome) => outcome.status)).toEqual(['ok', 'ok'])
  const kept = (await sealedTokens(a, serverId)).tokens
  expect(kept.expires_at).toBeGreaterThan(Date.now())
  await using third = { pool: mcpClient(a.h), [Symbol.asyncDispose]: () => third.pool.close() }
  const withKept = await third.pool.call(authorized, 'get_thread', { thread_id: threadId }, AbortSignal.timeout(10_000))
  expect(withKept.status).toBe('ok')
  expect((await sealedTokens(a, serverId)).tokens.access_token).toBe(kept.access_token)

  // The callback's address used again (a reload, a replay) finds no flow: its state is spent.
  const replayed = await admin.browser.get(callback.href)
  expect(replayed.status).toBe(400)
  expect(await replayed.text()).toContain('Authorization expired')

  // B's grant is revoked: the refresh is refused, and the server waits for an admin to authorize it again.
  const revoked = await fetch(`${b.origin}/oauth/token/revoke`, {
    method: 'POST',
    body: new URLSearchParams({ token: kept.refresh_token as string, client_id: clientId }),
  })
  expect(revoked.status).toBe(200)
  await storeTokens(a, serverId, (stored) => ({ ...stored, expires_at: Date.now() - 1000 }))
  const refused = await read()
  expect(refused.status).toBe('error')
  expect(refused.error).toContain('Authorize it again')
  expect(await a.h.store.mcpServers.get(admin.organizationId, serverId)).toMatchObject({
    status: 'needs_authorization',
    lastError: expect.stringContaining('refused to refresh the token'),
  })
  const refusedPage = await (await admin.browser.get(`/admin/mcp-servers/${serverId}`)).text()
  expect(refusedPage).toContain('Needs authorization')
})

test('the callback refuses a foreign or unknown state and reports denied consent; a failed discovery is shown', async () => {
  await using b = await startServer()
  await using a = await startA()
  const ada = await b.member()
  const browserB = await b.browserOf(ada.email)
  const admin = await adminOf(a)
  const colleague = await adminOf(a, 'owner')
  const addedResponse = await submit(admin.browser, '/admin/mcp-servers', {
    name: 'threads-b',
    url: `${b.origin}/mcp`,
    oauth: 'true',
  })
  const serverId = /\/admin\/mcp-servers\/([^/?]+)/.exec(addedResponse.headers.get('location') ?? '')?.[1] ?? ''

  // The colleague started this one: the admin's browser cannot complete it, and it is spent for both.
  const theirs = await authorize(colleague.browser, serverId)
  const theirCallback = locationOf(await decide(browserB, theirs.href, 'approve'))
  const foreign = await admin.browser.get(theirCallback.href)
  expect(foreign.status).toBe(403)
  expect(await foreign.text()).toContain('Not your authorization')
  expect((await colleague.browser.get(theirCallback.href)).status).toBe(400)

  // A state A never issued.
  const unknown = new URL(oauthCallbackPath, a.origin)
  unknown.search = new URLSearchParams({ state: 'made-up', code: 'tho_code' }).toString()
  const made = await admin.browser.get(unknown.href)
  expect(made.status).toBe(400)
  expect(await made.text()).toContain('This authorization has expired or was already used.')

  // Ada denies consent on B: A says so, and stores no tokens.
  const mine = await authorize(admin.browser, serverId)
  const denied = locationOf(await decide(browserB, mine.href, 'deny'))
  expect(denied.searchParams.get('error')).toBe('access_denied')
  const deniedPage = await admin.browser.get(denied.href)
  expect(deniedPage.status).toBe(400)
  const deniedHtml = await deniedPage.text()
  expect(deniedHtml).toContain('Authorization not given')
  expect(deniedHtml).toContain('access_denied')
  expect((await a.h.store.mcpServers.oauth(serverId))?.tokensSealed ?? null).toBeNull()
  expect(await a.h.store.mcpServers.get(admin.organizationId, serverId)).toMatchObject({
    status: 'needs_authorization',
  })

  // A server with no OAuth metadata anywhere: Authorize shows why on the server's page, and no flow is left.
  await using bare = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => new Response('nothing', { status: 404 }),
  })
  const bareAdded = await submit(admin.browser, '/admin/mcp-servers', {
    name: 'bare',
    url: `http://127.0.0.1:${bare.port}/mcp`,
    oauth: 'true',
  })
  const bareId = /\/admin\/mcp-servers\/([^/?]+)/.exec(bareAdded.headers.get('location') ?? '')?.[1] ?? ''
  const failed = await submit(admin.browser, `/admin/mcp-servers/${bareId}/authorize`)
  expect(failed.status).toBe(502)
  expect(await failed.text()).toContain('The authorization of bare could not be started')
  const flows = await a.h.orm.select().from(a.h.tables.mcpOauthFlows)
  expect(flows.filter((flow) => flow.serverId === bareId)).toEqual([])

  // OAuth servers take no headers, and the CLI-less page refuses both at once.
  const both = await submit(admin.browser, '/admin/mcp-servers', {
    name: 'mixed',
    url: `${b.origin}/mcp`,
    oauth: 'true',
    headers: 'X-Key: secret-value',
  })
  expect(both.status).toBe(400)
  expect(await both.text()).toContain('takes no headers')
})

test('without SECRETS_KEY a server with OAuth is refused with the reason', async () => {
  await using h = await harness({ config: { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true } })
  const user = await h.user({ org: 'acme', role: 'admin' })
  const browser = Browser.inProcess(h)
  expect((await browser.signIn(user.email, password)).status).toBe(303)
  const refused = await submit(browser, '/admin/mcp-servers', {
    name: 'docs',
    url: 'https://mcp.example.com/mcp',
    oauth: 'true',
  })
  expect(refused.status).toBe(400)
  expect(await refused.text()).toContain('no SECRETS_KEY')
})
