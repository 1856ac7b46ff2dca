// The stored OAuthClientProvider (connectors/oauth-provider.ts) in the background, as the MCP client uses it, over the
// run's backend and a scripted authorization server on loopback: an expired access token is refreshed once however
// many requests find it so, two instances refreshing at once keep one pair, a refusal defers to a pair another
// instance stored, and what cannot be refreshed marks the server `needs_authorization` without any request to the
// authorization server's registration. Tokens and registrations go only to the authorization server they came from:
// an Authorize begun after the resource moved to another one changes nothing the server holds until its code is
// exchanged. The whole browser flow against a real Threadhouse is tools-oauth.test.ts.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { beginAuthorization, completeAuthorization } from '../src/connectors/authorization'
import {
  NeedsAuthorization,
  oauthCallbackPath,
  type StoredTokens,
  storedOAuthProvider,
} from '../src/connectors/oauth-provider'
import { type McpServerRow, sealedFor } from '../src/connectors/repository'
import { guardedFetch } from '../src/shared/outbound/guarded-fetch'
import { secretBox } from '../src/shared/secret-box'
import { testEvent } from './support/audit'
import { harness, until } from './support/helpers'

const box = secretBox({ current: randomBytes(32).toString('base64') })
const fetchFn = guardedFetch({
  allowPrivateNetworks: true,
  timeoutMs: 10_000,
  maxResponseBytes: 1_000_000,
  userAgent: 't',
})

interface TokenRequest {
  form: URLSearchParams
  answer: (response: Response) => void
}

/**
 * An authorization server whose token endpoint the test answers, request by request; its metadata and dynamic
 * registration (client `clientId`) answer by themselves.
 */
function authorizationServer(clientId = 'client-1') {
  const requests: TokenRequest[] = []
  const paths: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request): Promise<Response> {
      const path = new URL(request.url).pathname
      paths.push(path)
      if (path === '/.well-known/oauth-authorization-server') return Response.json(metadataOf(origin))
      if (path === '/register')
        return Response.json({ ...((await request.json()) as object), client_id: clientId }, { status: 201 })
      if (path !== '/token') return new Response('no', { status: 404 })
      const form = new URLSearchParams(await request.text())
      return new Promise<Response>((answer) => requests.push({ form, answer }))
    },
  })
  const origin: string = `http://127.0.0.1:${server.port}`
  return {
    origin,
    requests,
    paths,
    [Symbol.asyncDispose]: () => server.stop(true),
  }
}

function metadataOf(origin: string) {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}/authorize`,
    token_endpoint: `${origin}/token`,
    registration_endpoint: `${origin}/register`,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
  }
}

/** A remote MCP server's protected-resource metadata (RFC 9728), naming the authorization server `at.origin`. */
function protectedResource(at: { origin: string }) {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request): Response =>
      new URL(request.url).pathname === '/.well-known/oauth-protected-resource/mcp'
        ? Response.json({ resource: url, authorization_servers: [at.origin] })
        : new Response('no', { status: 404 }),
  })
  const url: string = `http://127.0.0.1:${server.port}/mcp`
  return { url, [Symbol.asyncDispose]: () => server.stop(true) }
}

function tokenResponse(access: string, refresh: string): Response {
  return Response.json({ access_token: access, token_type: 'bearer', expires_in: 3600, refresh_token: refresh })
}

async function setUp(as: { origin: string }, registered = true, url = 'https://mcp.example.com/mcp') {
  const h = await harness()
  const user = await h.user({ org: 'acme', role: 'owner' })
  const organizationId = ((await h.store.users.findByEmail(user.email)) as { organizationId: number }).organizationId
  const servers = h.store.mcpServers
  const id = Bun.randomUUIDv7()
  const server = (await servers.add(
    {
      id,
      organizationId,
      name: 'remote',
      url,
      auth: 'oauth',
      headersSealed: null,
      headerNames: [],
      trusted: false,
      createdBy: user.id,
      now: Date.now(),
    },
    () => testEvent('mcp_server.added'),
  )) as McpServerRow
  await servers.saveOAuth(id, {
    discoveryState: {
      authorizationServerUrl: as.origin,
      authorizationServerMetadata: metadataOf(as.origin),
      resourceMetadata: { resource: server.url, authorization_servers: [as.origin] },
    },
    clientInformationSealed: registered
      ? box.seal(JSON.stringify({ client_id: 'client-1', issuer: as.origin }), sealedFor.client(id))
      : null,
  })
  const seal = (tokens: StoredTokens) => box.seal(JSON.stringify(tokens), sealedFor.tokens(id))
  const stored = async () => {
    const row = await servers.oauth(id)
    return row?.tokensSealed ? (JSON.parse(box.open(row.tokensSealed, sealedFor.tokens(id))) as StoredTokens) : null
  }
  const expiredPair = (access = 'access-0', refresh = 'refresh-0'): StoredTokens => ({
    access_token: access,
    token_type: 'bearer',
    refresh_token: refresh,
    expires_at: Date.now() - 1000,
    issuer: as.origin,
  })
  /** A provider as one instance's MCP client holds it: its own map of refreshes under way. */
  const provider = (refreshing = new Map()) =>
    storedOAuthProvider(
      server,
      { servers, box, fetch: fetchFn, now: Date.now, refreshing },
      { kind: 'background', redirectUrl: 'http://127.0.0.1/admin/mcp-servers/oauth/callback' },
    )
  const status = async () => servers.get(organizationId, id)
  const admin = { id: user.id, organizationId }
  return { h, server, servers, seal, stored, expiredPair, provider, status, admin }
}

test('an expired token is refreshed once for every request that finds it so, and the new pair is stored', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider } = await setUp(as)
  await using _ = h
  await servers.swapTokens(server.id, null, seal(expiredPair()))
  const one = provider()
  const all = Promise.all([1, 2, 3, 4, 5].map(() => one.tokens()))
  const request = await until(() => as.requests[0])
  expect(Object.fromEntries(request.form)).toEqual({
    grant_type: 'refresh_token',
    refresh_token: 'refresh-0',
    client_id: 'client-1',
    resource: server.url,
  })
  request.answer(tokenResponse('access-1', 'refresh-1'))
  const tokens = await all
  expect(tokens.map((pair) => pair?.access_token)).toEqual(Array(5).fill('access-1'))
  expect(as.requests).toHaveLength(1)
  expect(await stored()).toMatchObject({ access_token: 'access-1', refresh_token: 'refresh-1', issuer: as.origin })
  // Fresh now: the next request sends it as it is.
  expect((await provider().tokens())?.access_token).toBe('access-1')
  expect(as.requests).toHaveLength(1)
})

test('two instances refreshing at once both go on with one stored pair: the first stored', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider } = await setUp(as)
  await using _ = h
  await servers.swapTokens(server.id, null, seal(expiredPair()))
  const both = Promise.all([provider().tokens(), provider().tokens()])
  // The server rotates the refresh token for both (a grace window), as Threadhouse's does.
  await until(() => as.requests.length === 2)
  as.requests[0]?.answer(tokenResponse('access-a', 'refresh-a'))
  await until(async () => (await stored())?.access_token === 'access-a')
  as.requests[1]?.answer(tokenResponse('access-b', 'refresh-b'))
  const [first, second] = await both
  expect([first?.access_token, second?.access_token]).toEqual(['access-a', 'access-a'])
  expect(await stored()).toMatchObject({ access_token: 'access-a', refresh_token: 'refresh-a' })
})

test('a refusal after another instance stored a new pair takes that pair; a refusal alone needs an admin', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider, status } = await setUp(as)
  await using _ = h
  const old = seal(expiredPair())
  await servers.swapTokens(server.id, null, old)
  const refreshing = provider().tokens()
  const request = await until(() => as.requests[0])
  // Meanwhile another instance refreshed first, so this refresh token is spent.
  const theirs = { ...expiredPair('access-theirs', 'refresh-theirs'), expires_at: Date.now() + 3_600_000 }
  expect(await servers.swapTokens(server.id, old, seal(theirs))).toBe(true)
  request.answer(Response.json({ error: 'invalid_grant', error_description: 'reused' }, { status: 400 }))
  expect((await refreshing)?.access_token).toBe('access-theirs')
  expect(await status()).toMatchObject({ status: 'pending' })

  // Nobody refreshed: the server waits for an admin, and its page says why.
  await servers.saveOAuth(server.id, { tokensSealed: seal(expiredPair('access-theirs', 'refresh-theirs')) })
  const refused = provider().tokens()
  const second = await until(() => as.requests[1])
  second.answer(Response.json({ error: 'invalid_grant', error_description: 'revoked' }, { status: 400 }))
  await expect(refused).rejects.toBeInstanceOf(NeedsAuthorization)
  expect(await status()).toMatchObject({
    status: 'needs_authorization',
    lastError: expect.stringContaining('refused to refresh the token'),
  })
  // The stored pair is left for an admin's new authorization to replace.
  expect((await stored())?.refresh_token).toBe('refresh-theirs')
})

test('in the background nothing is registered and nobody is sent anywhere: the server waits for an admin', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider, status } = await setUp(as, false)
  await using _ = h
  // No tokens yet: the MCP client's request fails at once.
  await expect(provider().tokens()).rejects.toBeInstanceOf(NeedsAuthorization)
  expect(await status()).toMatchObject({ status: 'needs_authorization' })
  // The SDK's own flow (after a 401) stops before registering, as it would before sending anyone to sign in.
  await servers.swapTokens(server.id, null, seal({ ...expiredPair(), refresh_token: undefined }))
  await expect(auth(provider(), { serverUrl: server.url, fetchFn })).rejects.toBeInstanceOf(NeedsAuthorization)
  expect((await status())?.lastError).toContain('it has not been authorized')
  expect(as.paths).toEqual([])
  expect((await stored())?.access_token).toBe('access-0')
})

test('tokens found wanting are cleared only if no other instance has stored a pair since', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider } = await setUp(as)
  await using _ = h
  const fresh = { ...expiredPair('access-1', 'refresh-1'), expires_at: Date.now() + 3_600_000 }
  await servers.swapTokens(server.id, null, seal(fresh))
  const one = provider()
  expect((await one.tokens())?.access_token).toBe('access-1')
  const newer = seal({ ...fresh, access_token: 'access-2' })
  await servers.saveOAuth(server.id, { tokensSealed: newer })
  await one.invalidateCredentials?.('tokens')
  expect((await stored())?.access_token).toBe('access-2')
  // The provider that read the newer pair clears it.
  expect((await one.tokens())?.access_token).toBe('access-2')
  await one.invalidateCredentials?.('tokens')
  expect(await stored()).toBeNull()
})

test('after a 401, a refresh that fails for a passing reason fails the request only; a refused one needs an admin', async () => {
  await using as = authorizationServer()
  const { h, servers, server, seal, stored, expiredPair, provider, status } = await setUp(as)
  await using _ = h
  const live = { ...expiredPair('access-1', 'refresh-1'), expires_at: Date.now() + 3_600_000 }
  await servers.swapTokens(server.id, null, seal(live))
  // What the SDK's transport does when the server answers 401: auth(), which refreshes.
  const down = auth(provider(), { serverUrl: server.url, fetchFn })
  ;(await until(() => as.requests[0])).answer(new Response('unavailable', { status: 503 }))
  await expect(down).rejects.toThrow('refreshing it failed')
  expect(await status()).toMatchObject({ status: 'pending' })
  expect((await stored())?.refresh_token).toBe('refresh-1')

  const revoked = auth(provider(), { serverUrl: server.url, fetchFn })
  ;(await until(() => as.requests[1])).answer(Response.json({ error: 'invalid_grant' }, { status: 400 }))
  await expect(revoked).rejects.toBeInstanceOf(NeedsAuthorization)
  expect(await status()).toMatchObject({ status: 'needs_authorization' })
  expect(await stored()).toBeNull()
  expect(as.paths.filter((path) => path !== '/token')).toEqual([])
})

test('an Authorize begun after the resource moved to another authorization server changes nothing until consented', async () => {
  await using first = authorizationServer()
  await using second = authorizationServer('client-2')
  await using resource = protectedResource(second)
  const { h, servers, server, seal, stored, expiredPair, provider, status, admin } = await setUp(
    first,
    true,
    resource.url,
  )
  await using _ = h
  await servers.swapTokens(server.id, null, seal(expiredPair()))
  const before = await servers.oauth(server.id)
  const deps = { servers, box, fetch: fetchFn, redirectUrl: `http://127.0.0.1${oauthCallbackPath}` }

  // The admin presses Authorize, is sent to the second server, and goes no further.
  const abandoned = await beginAuthorization(deps, server, admin.id, Date.now())
  expect(abandoned.origin).toBe(second.origin)
  expect(second.paths).toContain('/register')
  expect(await servers.oauth(server.id)).toEqual(before)

  // The server's own refresh still goes where its tokens came from; the second server sees none.
  const refreshed = provider().tokens()
  const request = await until(() => first.requests[0])
  expect(request.form.get('refresh_token')).toBe('refresh-0')
  request.answer(tokenResponse('access-1', 'refresh-1'))
  expect((await refreshed)?.access_token).toBe('access-1')
  expect(second.requests).toHaveLength(0)

  // The admin completes another Authorize: the second server's discovery, registration and tokens become the server's.
  const url = await beginAuthorization(deps, server, admin.id, Date.now())
  const done = completeAuthorization(
    deps,
    { state: url.searchParams.get('state') ?? '', code: 'code-2', iss: second.origin },
    admin,
    Date.now(),
  )
  const exchange = await until(() => second.requests[0])
  expect(exchange.form.get('grant_type')).toBe('authorization_code')
  expect(exchange.form.get('client_id')).toBe('client-2')
  exchange.answer(tokenResponse('access-2', 'refresh-2'))
  await done
  const row = await servers.oauth(server.id)
  expect(row?.discoveryState).toMatchObject({ authorizationServerUrl: second.origin })
  expect(JSON.parse(box.open(row?.clientInformationSealed ?? '', sealedFor.client(server.id)))).toMatchObject({
    client_id: 'client-2',
    issuer: second.origin,
  })
  expect(await stored()).toMatchObject({ access_token: 'access-2', issuer: second.origin })
  expect(await status()).toMatchObject({ status: 'pending' })

  // Its next refresh goes to the second server, with the second registration.
  await servers.saveOAuth(server.id, {
    tokensSealed: seal({ ...expiredPair('access-2', 'refresh-2'), issuer: second.origin }),
  })
  const again = provider().tokens()
  const next = await until(() => second.requests[1])
  expect(Object.fromEntries(next.form)).toMatchObject({ refresh_token: 'refresh-2', client_id: 'client-2' })
  next.answer(tokenResponse('access-3', 'refresh-3'))
  expect((await again)?.access_token).toBe('access-3')
  expect(first.requests).toHaveLength(1)
})

test('tokens or a registration from another authorization server than the stored discovery are never sent', async () => {
  await using first = authorizationServer()
  await using second = authorizationServer('client-2')
  const { h, servers, server, seal, expiredPair, provider, status } = await setUp(first)
  await using _ = h
  // What an earlier version's abandoned Authorize left: the discovery moved, the tokens and registration did not.
  await servers.swapTokens(server.id, null, seal(expiredPair()))
  const moved = { authorizationServerUrl: second.origin, authorizationServerMetadata: metadataOf(second.origin) }
  await servers.saveOAuth(server.id, { discoveryState: moved })
  await expect(provider().tokens()).rejects.toBeInstanceOf(NeedsAuthorization)
  expect(await status()).toMatchObject({
    status: 'needs_authorization',
    lastError: 'Authorize it again: its authorization server changed.',
  })
  // Nor through the SDK's own refresh after a 401.
  await expect(auth(provider(), { serverUrl: server.url, fetchFn })).rejects.toBeInstanceOf(NeedsAuthorization)

  // Tokens stamped by nobody are refused alike, and so is a registration made elsewhere.
  const unstamped = { ...expiredPair(), issuer: undefined }
  await servers.saveOAuth(server.id, {
    tokensSealed: seal(unstamped),
    discoveryState: { ...moved, authorizationServerUrl: first.origin },
  })
  await expect(provider().tokens()).rejects.toBeInstanceOf(NeedsAuthorization)
  await servers.saveOAuth(server.id, {
    tokensSealed: seal(expiredPair()),
    clientInformationSealed: box.seal(
      JSON.stringify({ client_id: 'client-2', issuer: second.origin }),
      sealedFor.client(server.id),
    ),
  })
  await expect(provider().tokens()).rejects.toBeInstanceOf(NeedsAuthorization)
  expect(await status()).toMatchObject({ lastError: 'Authorize it again: its authorization server changed.' })
  expect(second.paths).toEqual([])
  expect(first.paths).toEqual([])
})
