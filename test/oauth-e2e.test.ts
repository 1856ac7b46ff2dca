// End-to-end OAuth flows over real HTTP on loopback, driven by independent client libraries (oauth4webapi, the
// MCP TypeScript SDK's auth(), arctic) while a person signs in and approves through the real pages.
import { expect, test } from 'bun:test'
import { auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { CodeChallengeMethod, generateCodeVerifier, generateState, OAuth2Client } from 'arctic'
import * as oauth from 'oauth4webapi'
import { type App, createApp } from '../src/app'
import { createFileInspector } from '../src/attachments/inspector'
import { createUser } from '../src/auth/users'
import { loadConfig } from '../src/config'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { silentLogger } from '../src/shared/log'
import { sqliteStore } from '../src/store'
import { testOrigin } from './support/audit'
import { ScriptedRunner } from './support/helpers'
import { Browser, decide, locationOf, McpClientProvider, password, settings } from './support/oauth-helpers'

interface Server extends AsyncDisposable {
  origin: string
  browser: Browser
}

/**
 * A real listening server on 127.0.0.1. The issuer must equal the origin clients fetch from, and the port is
 * known only once the socket listens, so the app is built right after, with that origin as PUBLIC_URL.
 */
async function startServer(): Promise<Server> {
  const db = openDatabase(':memory:')
  migrateDatabase(db)
  await createUser(
    sqliteStore(db).users,
    { email: 'ada@example.com', password, organizationSlug: 'acme', role: 'member' },
    Date.now(),
    testOrigin,
  )
  let app: App | undefined
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => (app ? app.handle(request) : new Response('starting', { status: 503 })),
  })
  const origin = `http://127.0.0.1:${server.port}`
  app = createApp({
    store: sqliteStore(db),
    config: { ...loadConfig({}), PUBLIC_URL: origin, GENERATION_CONCURRENCY: 1 },
    runner: new ScriptedRunner(),
    // Never started: no test here uploads a file.
    inspector: createFileInspector(silentLogger),
    clock: { now: () => Date.now() },
    log: silentLogger,
  })
  const browser = Browser.overHttp(origin)
  const signedIn = await browser.signIn('ada@example.com')
  if (signedIn.status !== 303) throw new Error(`sign-in failed with ${signedIn.status}`)
  const running = app
  return {
    origin,
    browser,
    async [Symbol.asyncDispose]() {
      await server.stop(true)
      await running.decorator.engine.close()
      db.$client.close()
    },
  }
}

/** The person's part: open the authorization URL in the signed-in browser and press Allow. */
async function personApproves(browser: Browser, authorizationUrl: URL): Promise<URL> {
  return locationOf(await decide(browser, authorizationUrl.href, 'approve'))
}

async function me(origin: string, accessToken: string): Promise<Response> {
  return fetch(`${origin}/api/v1/me`, { headers: { authorization: `Bearer ${accessToken}` } })
}

const insecure = { [oauth.allowInsecureRequests]: true }

test('oauth4webapi: discovery, open registration, PKCE public client, refresh, revocation', async () => {
  await using server = await startServer()
  const issuer = new URL(server.origin)
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
  )
  expect(as.issuer).toBe(server.origin)
  expect(as.authorization_response_iss_parameter_supported).toBe(true)
  const resource = new URL(`${server.origin}/api/v1`)
  const rs = await oauth.processResourceDiscoveryResponse(
    resource,
    await oauth.resourceDiscoveryRequest(resource, insecure),
  )
  expect(rs.authorization_servers).toEqual([server.origin])

  const redirectUri = 'http://127.0.0.1:43110/callback'
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: 'oauth4webapi public client',
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
      insecure,
    ),
  )
  const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' }
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint ?? '')
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    scope: 'threads:read threads:write',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString()
  // validateAuthResponse checks iss (RFC 9207) and state.
  const callback = oauth.validateAuthResponse(as, client, await personApproves(server.browser, url), state)
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), callback, redirectUri, verifier, insecure),
  )
  expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'threads:read threads:write' })
  expect((await me(server.origin, tokens.access_token)).status).toBe(200)

  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token ?? '', insecure),
  )
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
  expect((await me(server.origin, refreshed.access_token)).status).toBe(200)

  await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token ?? '', insecure),
  )
  expect((await me(server.origin, refreshed.access_token)).status).toBe(401)

  // A denial comes back as an error the library recognises, after it has checked iss and state.
  const denied = locationOf(await decide(server.browser, url.href, 'deny'))
  expect(() => oauth.validateAuthResponse(as, client, denied, state)).toThrow(
    expect.objectContaining({ error: 'access_denied' }),
  )
})

test('oauth4webapi: confidential clients with client_secret_basic (registration token) and client_secret_post', async () => {
  await using server = await startServer()
  const issuer = new URL(server.origin)
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
  )
  const registrationToken = (await settings(server.browser, 'POST', '/registration-tokens')).body.registration_token
  const redirectUri = 'https://app.example/callback'

  for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { client_name: `oauth4webapi ${method}`, redirect_uris: [redirectUri], token_endpoint_auth_method: method },
        method === 'client_secret_basic' ? { ...insecure, initialAccessToken: registrationToken } : insecure,
      ),
    )
    const secret = String(registered.client_secret)
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: method }
    const clientAuth =
      method === 'client_secret_basic' ? oauth.ClientSecretBasic(secret) : oauth.ClientSecretPost(secret)
    const state = oauth.generateRandomState()
    const verifier = oauth.generateRandomCodeVerifier()
    const url = new URL(as.authorization_endpoint ?? '')
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'threads:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()
    const callback = oauth.validateAuthResponse(as, client, await personApproves(server.browser, url), state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, clientAuth, callback, redirectUri, verifier, insecure),
    )
    expect(tokens.scope).toBe('threads:read')
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token ?? '', insecure),
    )
    expect((await me(server.origin, refreshed.access_token)).status).toBe(200)
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, clientAuth, refreshed.access_token, insecure),
    )
    expect((await me(server.origin, refreshed.access_token)).status).toBe(401)
  }
  // The registration token was used up by the first registration.
  const reuse = await oauth.dynamicClientRegistrationRequest(
    as,
    { client_name: 'again', redirect_uris: [redirectUri] },
    { ...insecure, initialAccessToken: registrationToken },
  )
  expect(reuse.status).toBe(401)
})

test('MCP TypeScript SDK auth(): discovery from the API URL, registration, authorization, tokens, refresh', async () => {
  await using server = await startServer()
  const provider = new McpClientProvider()
  const serverUrl = `${server.origin}/api/v1`

  expect(await auth(provider, { serverUrl })).toBe('REDIRECT')
  expect(provider.information?.client_id).toMatch(/^thcl_/)
  const authorizationUrl = provider.authorizationUrl
  if (!authorizationUrl) throw new Error('the SDK did not ask to open a browser')
  expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${server.origin}/oauth/authorize`)
  expect(authorizationUrl.searchParams.get('resource')).toBe(serverUrl)

  const callback = await personApproves(server.browser, authorizationUrl)
  expect(callback.searchParams.get('state')).toBe(provider.state())
  expect(callback.searchParams.get('iss')).toBe(server.origin)
  const code = callback.searchParams.get('code') ?? ''
  expect(await auth(provider, { serverUrl, authorizationCode: code })).toBe('AUTHORIZED')
  const first = provider.stored
  expect(first?.scope).toBe('threads:read threads:read:own threads:write')
  expect((await me(server.origin, first?.access_token ?? '')).status).toBe(200)

  // With tokens stored, auth() refreshes instead of sending the person to the browser again.
  expect(await auth(provider, { serverUrl })).toBe('AUTHORIZED')
  expect(provider.stored?.refresh_token).not.toBe(first?.refresh_token)
  expect((await me(server.origin, provider.stored?.access_token ?? '')).status).toBe(200)

  // The API's own 401 tells an MCP client where to start (RFC 9728 §5.1).
  const unauthorized = await fetch(`${serverUrl}/threads`)
  expect(unauthorized.headers.get('www-authenticate')).toContain(
    `resource_metadata="${server.origin}/.well-known/oauth-protected-resource/api/v1"`,
  )
})

test('arctic: a confidential client created in settings, with PKCE, refresh and revocation', async () => {
  await using server = await startServer()
  const redirectUri = 'https://dashboard.example/callback'
  const created = await settings(server.browser, 'POST', '/oauth-clients', {
    client_name: 'Dashboard',
    redirect_uris: [redirectUri],
  })
  expect(created.status).toBe(201)
  const client = new OAuth2Client(created.body.client_id, created.body.client_secret, redirectUri)
  const state = generateState()
  const verifier = generateCodeVerifier()
  const url = client.createAuthorizationURLWithPKCE(
    `${server.origin}/oauth/authorize`,
    state,
    CodeChallengeMethod.S256,
    verifier,
    ['threads:read', 'threads:write'],
  )
  const callback = await personApproves(server.browser, url)
  expect(callback.searchParams.get('state')).toBe(state)
  const tokens = await client.validateAuthorizationCode(
    `${server.origin}/oauth/token`,
    callback.searchParams.get('code') ?? '',
    verifier,
  )
  expect(tokens.accessTokenExpiresInSeconds()).toBe(3600)
  expect((await me(server.origin, tokens.accessToken())).status).toBe(200)
  const narrowed = await client.refreshAccessToken(`${server.origin}/oauth/token`, tokens.refreshToken(), [
    'threads:read',
  ])
  expect(narrowed.scopes()).toEqual(['threads:read'])
  await client.revokeToken(`${server.origin}/oauth/token/revoke`, narrowed.refreshToken())
  expect((await me(server.origin, narrowed.accessToken())).status).toBe(401)
})
