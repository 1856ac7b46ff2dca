// /mcp behind Threadhouse's own OAuth, over real HTTP: an unmodified MCP SDK client finds the authorization server
// from the 401, registers, sends the person through sign-in and consent, and connects; and RFC 8707 audiences
// keep a token asked for one resource (the API or the MCP server) away from the other.
import { expect, test } from 'bun:test'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { eq } from 'drizzle-orm'
import { oauthClients, oauthGrants } from '../src/oauth/oauth.table'
import { type McpTestServer, postMcp, startServer } from './support/mcp-helpers'
import { type Browser, decide, locationOf, McpClientProvider, pkce } from './support/oauth-helpers'

function mcpTransport(origin: string, provider: OAuthClientProvider): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { authProvider: provider })
}

test('an unmodified MCP client connects on its own: 401, discovery, registration, PKCE, consent, token, tools', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const browser = await server.browserOf(ada.email)
  const provider = new McpClientProvider('Desktop assistant')

  const first = new Client({ name: 'desktop', version: '1.0.0' })
  await expect(first.connect(mcpTransport(server.origin, provider))).rejects.toBeInstanceOf(UnauthorizedError)
  const authorizationUrl = provider.authorizationUrl
  if (!authorizationUrl) throw new Error('the client did not ask to open a browser')
  expect(provider.information?.client_id).toMatch(/^thcl_/)
  expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${server.origin}/oauth/authorize`)
  expect(authorizationUrl.searchParams.get('resource')).toBe(`${server.origin}/mcp`)
  expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256')

  // The person approves on the consent page; the client gets the code at its redirect URI.
  const callback = locationOf(await decide(browser, authorizationUrl.href, 'approve'))
  expect(callback.searchParams.get('state')).toBe(provider.state())
  const finishing = mcpTransport(server.origin, provider)
  await finishing.finishAuth(callback.searchParams.get('code') ?? '')
  // The client asks for the scopes the 401 of /mcp named, which are what its tools need.
  expect(authorizationUrl.searchParams.get('scope')).toBe('threads:read threads:write')
  expect(provider.stored?.scope).toBe('threads:read threads:write')

  // Unused so far (the token exchange marks the client), so that the /mcp calls below must be what marks it.
  server.db.update(oauthClients).set({ lastUsedAt: null }).run()
  server.db.update(oauthGrants).set({ lastUsedAt: null }).run()
  const client = new Client({ name: 'desktop', version: '1.0.0' })
  await client.connect(mcpTransport(server.origin, provider))
  await using _closed = { [Symbol.asyncDispose]: () => client.close() }
  expect((await client.listTools()).tools).toHaveLength(11)
  const created = await client.callTool({ name: 'create_thread', arguments: { name: 'From my assistant' } })
  expect(created.structuredContent).toMatchObject({ thread: { name: 'From my assistant', state: 'ready' } })
  // Last use is audited on the connected app, as for the API: read before any other request uses the token.
  const [app] = server.db
    .select({ grantUsed: oauthGrants.lastUsedAt, clientUsed: oauthClients.lastUsedAt, resource: oauthGrants.resource })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .all()
  expect(app).toEqual({ grantUsed: expect.any(Number), clientUsed: expect.any(Number), resource: '/mcp' })

  // A token asked for /mcp is for /mcp only; the API refuses it, pointing at its own metadata.
  const api = await fetch(`${server.origin}/api/v1/me`, {
    headers: { authorization: `Bearer ${provider.stored?.access_token}` },
  })
  expect(api.status).toBe(401)
  expect(api.headers.get('www-authenticate')).toContain(
    `error="invalid_token", resource_metadata="${server.origin}/.well-known/oauth-protected-resource/api/v1"`,
  )
  expect(((await api.json()) as { message: string }).message).toBe(
    `This token was issued for ${server.origin}/mcp, not ${server.origin}/api/v1`,
  )
})

test('protected resource metadata for /mcp (RFC 9728), named by every 401 of /mcp', async () => {
  await using server = await startServer()
  const metadata = await fetch(`${server.origin}/.well-known/oauth-protected-resource/mcp`)
  expect(metadata.headers.get('access-control-allow-origin')).toBe('*')
  expect(await metadata.json()).toEqual({
    resource: `${server.origin}/mcp`,
    authorization_servers: [server.origin],
    scopes_supported: ['threads:read', 'threads:read:own', 'threads:write'],
    bearer_methods_supported: ['header'],
    resource_name: 'Threadhouse MCP server',
  })
  const anonymous = await postMcp(server.origin, '{}')
  expect(anonymous.headers.get('www-authenticate')).toBe(
    `Bearer realm="threadhouse", scope="threads:read threads:write", resource_metadata="${server.origin}/.well-known/oauth-protected-resource/mcp"`,
  )
})

interface Grant {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any
  clientId: string
}

async function tokenRequest(origin: string, fields: Record<string, string>, resources: string[]): Promise<Grant> {
  const form = new URLSearchParams(fields)
  for (const resource of resources) form.append('resource', resource)
  const response = await fetch(`${origin}/oauth/token`, { method: 'POST', body: form })
  return { status: response.status, body: await response.json(), clientId: fields.client_id ?? '' }
}

/**
 * A public client's authorization and code exchange, by hand: `resource` values (RFC 8707) at the authorization
 * request and at the token request.
 */
async function grant(
  server: McpTestServer,
  browser: Browser,
  resources: { authorize?: string[]; token?: string[] },
): Promise<Grant> {
  const redirectUri = 'http://127.0.0.1:40111/callback'
  const registered = await fetch(`${server.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Script', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
  })
  const clientId = ((await registered.json()) as { client_id: string }).client_id
  const { verifier, challenge } = pkce()
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'threads:read threads:write',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  for (const resource of resources.authorize ?? []) query.append('resource', resource)
  const location = locationOf(await decide(browser, `/oauth/authorize?${query}`, 'approve'))
  const code = location.searchParams.get('code') ?? ''
  const fields = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId }
  return tokenRequest(server.origin, { ...fields, code_verifier: verifier }, resources.token ?? [])
}

/** Which resources accept an access token: [the API, the MCP server]. */
async function acceptedBy(origin: string, token: string): Promise<[number, number]> {
  const authorization = `Bearer ${token}`
  const api = await fetch(`${origin}/api/v1/me`, { headers: { authorization } })
  const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  const mcp = await postMcp(origin, list, { authorization })
  await Promise.all([api.arrayBuffer(), mcp.arrayBuffer()])
  return [api.status, mcp.status]
}

test('RFC 8707 audiences: a token asked for one resource is accepted there only; one asked for none, by both', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const browser = await server.browserOf(ada.email)
  const { origin } = server
  const accepted = async (resources: { authorize?: string[]; token?: string[] }) => {
    const granted = await grant(server, browser, resources)
    expect(granted.status).toBe(200)
    return acceptedBy(origin, granted.body.access_token)
  }
  expect(await accepted({})).toEqual([200, 200])
  expect(await accepted({ authorize: [origin], token: [`${origin}/`] })).toEqual([200, 200])
  expect(await accepted({ authorize: [`${origin}/mcp`], token: [`${origin}/mcp`] })).toEqual([401, 200])
  expect(await accepted({ authorize: [`${origin}/api/v1`] })).toEqual([200, 401])
  expect(await accepted({ authorize: [`${origin}/api/v1`, `${origin}/mcp/`] })).toEqual([200, 200])
  // The token request may narrow an authorization that named no resource.
  expect(await accepted({ token: [`${origin}/mcp/`] })).toEqual([401, 200])

  // It may not change one that named a resource, and no request may name another server.
  const changed = await grant(server, browser, { authorize: [`${origin}/mcp`], token: [`${origin}/api/v1`] })
  expect({ status: changed.status, error: changed.body.error }).toEqual({ status: 400, error: 'invalid_target' })
  const query = new URLSearchParams({ response_type: 'code', client_id: changed.clientId, scope: 'threads:read' })
  query.set('redirect_uri', 'http://127.0.0.1:40111/callback')
  query.set('code_challenge', pkce().challenge)
  query.set('code_challenge_method', 'S256')
  query.set('resource', `${origin}/mcp/other`)
  const elsewhere = locationOf(await browser.get(`/oauth/authorize?${query}`))
  expect(elsewhere.searchParams.get('error')).toBe('invalid_target')
})

test('refresh keeps a token’s audience and cannot change it', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const browser = await server.browserOf(ada.email)
  const { origin } = server
  const granted = await grant(server, browser, { authorize: [`${origin}/mcp`] })
  const refresh = (refreshToken: string, resources: string[]) =>
    tokenRequest(
      origin,
      { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: granted.clientId },
      resources,
    )
  const plain = await refresh(granted.body.refresh_token, [])
  expect(plain.status).toBe(200)
  expect(await acceptedBy(origin, plain.body.access_token)).toEqual([401, 200])
  const widened = await refresh(plain.body.refresh_token, [origin])
  expect(widened.status).toBe(200)
  expect(await acceptedBy(origin, widened.body.access_token)).toEqual([401, 200])
  const moved = await refresh(widened.body.refresh_token, [`${origin}/api/v1`])
  expect({ status: moved.status, error: moved.body.error }).toEqual({ status: 400, error: 'invalid_target' })
})
