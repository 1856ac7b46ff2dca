// The authorization endpoint and consent page: error page versus error redirect, exact redirect URI matching
// with the loopback port exception, PKCE, sign-in round trip, consent content and headers, Allow and Deny,
// CSRF, and which organization may use a client.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { harness } from './support/helpers'
import {
  approve,
  authorizeUrl,
  Browser,
  decide,
  formAction,
  hiddenField,
  locationOf,
  pkce,
  postOAuth,
  register,
  settings,
  signedIn,
} from './support/oauth-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

const base = 'http://threadhouse.test'

function request(clientId: string, overrides: Record<string, string | undefined> = {}): string {
  const { challenge } = pkce()
  return authorizeUrl({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: 'http://127.0.0.1:4000/callback',
    scope: 'threads:read',
    state: 'xyz',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  })
}

test('unknown clients and unregistered redirect URIs get an error page, never a redirect', async () => {
  await using h = await harness()
  const client = await register(h, { redirect_uris: ['http://127.0.0.1/callback', 'https://app.example/cb?x=1'] })
  const { browser } = await signedIn(h)
  const cases = [
    request('thcl_unknown'),
    request(client.client_id, { client_id: undefined }),
    request(client.client_id, { redirect_uri: undefined }),
    request(client.client_id, { redirect_uri: 'https://evil.example/callback' }),
    request(client.client_id, { redirect_uri: 'http://127.0.0.1:4000/callback/' }),
    request(client.client_id, { redirect_uri: 'http://127.0.0.1:4000/other' }),
    request(client.client_id, { redirect_uri: 'http://localhost:4000/callback' }),
    request(client.client_id, { redirect_uri: 'https://app.example/cb' }),
    request(client.client_id, { redirect_uri: 'https://app.example/cb?x=1&y=2' }),
    request(client.client_id, { redirect_uri: 'https://app.example:444/cb?x=1' }),
    request(client.client_id, { redirect_uri: 'https://app.example/cb?x=1#frag' }),
    // A loopback URI whose port is out of range is no URL at all (this was a 500).
    request(client.client_id, { redirect_uri: 'http://127.0.0.1:99999/callback' }),
    request(client.client_id, { redirect_uri: 'http://127.0.0.1:65536/callback' }),
    request(client.client_id, { redirect_uri: 'http://127.0.0.1:1e3/callback' }),
    `${request(client.client_id)}&redirect_uri=https://evil.example/callback`,
    `${request(client.client_id)}&client_id=${client.client_id}`,
  ]
  for (const path of cases) {
    for (const visitor of [browser, Browser.inProcess(h)]) {
      const response = await visitor.get(path)
      expect(response.status).toBe(400)
      expect(response.headers.get('location')).toBeNull()
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(await response.text()).toContain('This sign-in request cannot be completed')
    }
  }
})

test('redirect URIs match exactly, except the port of http loopback URIs (RFC 8252)', async () => {
  await using h = await harness()
  const client = await register(h, {
    redirect_uris: ['http://localhost/cb', 'http://127.0.0.1/cb', 'http://[::1]/cb', 'com.example.app:/oauth'],
  })
  const { browser } = await signedIn(h)
  for (const redirectUri of [
    'http://localhost/cb',
    'http://localhost:8080/cb',
    'http://127.0.0.1:49152/cb',
    'http://[::1]:3000/cb',
    'com.example.app:/oauth',
  ]) {
    expect((await browser.get(request(client.client_id, { redirect_uri: redirectUri }))).status).toBe(200)
  }
  const approved = await approve(browser, { clientId: client.client_id, redirectUri: 'http://[::1]:3000/cb' })
  expect(approved.location.origin).toBe('http://[::1]:3000')
  const native = await approve(browser, { clientId: client.client_id, redirectUri: 'com.example.app:/oauth' })
  expect(native.location.protocol).toBe('com.example.app:')
})

test('a redirect URI stored before the scheme rules existed gets the error page, never a redirect', async () => {
  await using h = await harness()
  const client = await register(h)
  const legacy = ['view-source:https://app.example/cb', 'myapp://anysphere/oauth', 'http://127.0.0.1/c\u00e9']
  const { oauthClients } = h.tables
  await h.orm.update(oauthClients).set({ redirectUris: legacy }).where(eq(oauthClients.clientId, client.client_id))
  const { browser } = await signedIn(h)
  for (const redirectUri of legacy) {
    for (const visitor of [browser, Browser.inProcess(h)]) {
      const response = await visitor.get(request(client.client_id, { redirect_uri: redirectUri }))
      expect({ redirectUri, status: response.status, location: response.headers.get('location') }).toEqual({
        redirectUri,
        status: 400,
        location: null,
      })
    }
  }
})

test('other errors redirect with error, error_description, state and iss, even before sign-in', async () => {
  await using h = await harness()
  const client = await register(h, { scope: 'threads:read' })
  const confidential = await register(h, { token_endpoint_auth_method: 'client_secret_basic' })
  const { browser } = await signedIn(h)
  const cases: [string, string][] = [
    [request(client.client_id, { response_type: 'token' }), 'unsupported_response_type'],
    [request(client.client_id, { response_type: undefined }), 'invalid_request'],
    [request(client.client_id, { scope: undefined }), 'invalid_scope'],
    [request(client.client_id, { scope: 'threads:read admin' }), 'invalid_scope'],
    [request(client.client_id, { scope: 'threads:write' }), 'invalid_scope'],
    [request(client.client_id, { code_challenge: undefined, code_challenge_method: undefined }), 'invalid_request'],
    [request(client.client_id, { code_challenge_method: 'plain' }), 'invalid_request'],
    [request(client.client_id, { code_challenge_method: undefined }), 'invalid_request'],
    [request(client.client_id, { code_challenge: 'too-short' }), 'invalid_request'],
    [request(confidential.client_id, { code_challenge: undefined }), 'invalid_request'],
    [request(client.client_id, { response_mode: 'fragment' }), 'invalid_request'],
    [request(client.client_id, { resource: 'https://other.example/api' }), 'invalid_target'],
    [`${request(client.client_id)}&scope=threads:read`, 'invalid_request'],
  ]
  for (const [path, error] of cases) {
    for (const visitor of [browser, Browser.inProcess(h)]) {
      const response = await visitor.get(path)
      expect(response.status).toBe(303)
      const location = locationOf(response)
      expect(location.origin + location.pathname).toBe('http://127.0.0.1:4000/callback')
      expect(location.searchParams.get('error')).toBe(error)
      expect(location.searchParams.get('error_description')).toBeTruthy()
      expect(location.searchParams.get('state')).toBe('xyz')
      expect(location.searchParams.get('iss')).toBe(base)
    }
  }
})

test('resource indicators naming this API are accepted (RFC 8707)', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser } = await signedIn(h)
  for (const resource of [base, `${base}/api/v1`, `${base}/api/v1/`]) {
    expect((await browser.get(request(client.client_id, { resource }))).status).toBe(200)
  }
})

test('a signed-out person is sent to /login?next=… and comes back to the same request', async () => {
  await using h = await harness()
  const client = await register(h)
  const user = await h.user()
  const browser = Browser.inProcess(h)
  const path = request(client.client_id)
  const first = await browser.get(path)
  expect(first.status).toBe(303)
  const login = new URL(first.headers.get('location') ?? '', base)
  expect(login.pathname).toBe('/login')
  expect(login.searchParams.get('next')).toBe(path)
  const loginPage = await browser.get(`${login.pathname}${login.search}`)
  const html = await loginPage.text()
  expect(hiddenField(html, 'next')).toBe(path)
  const signedInResponse = await browser.postForm('/login', {
    email: user.email,
    password: 'correct horse battery',
    csrf: hiddenField(html, 'csrf'),
    next: hiddenField(html, 'next'),
  })
  expect(signedInResponse.status).toBe(303)
  expect(signedInResponse.headers.get('location')).toBe(path)
  expect((await browser.get(path)).status).toBe(200)
})

test('the consent page names the app, marks it unverified, shows logo, links, redirect host and scopes', async () => {
  await using h = await harness()
  const client = await register(h, {
    client_name: 'Evil <script>alert(1)</script> & Co',
    logo_uri: 'https://app.example/logo.png?a=1&b=2',
    client_uri: 'https://app.example/',
    policy_uri: 'https://app.example/privacy',
    tos_uri: 'https://app.example/terms',
    redirect_uris: ['https://app.example/callback'],
  })
  const { browser, user } = await signedIn(h)
  const response = await browser.get(
    request(client.client_id, {
      redirect_uri: 'https://app.example/callback',
      scope: 'threads:read threads:write',
    }),
  )
  expect(response.status).toBe(200)
  expect(response.headers.get('x-frame-options')).toBe('DENY')
  expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  expect(response.headers.get('referrer-policy')).toBe('no-referrer')
  expect(response.headers.get('cache-control')).toBe('no-store')
  const html = await response.text()
  expect(html).not.toContain('<script>')
  expect(html).toContain('Evil &lt;script&gt;alert(1)&lt;/script&gt; &amp; Co')
  expect(html).toContain('Not verified')
  expect(html).toContain('<img src="https://app.example/logo.png?a=1&amp;b=2"')
  expect(html).toContain('href="https://app.example/privacy"')
  expect(html).toContain('href="https://app.example/terms"')
  expect(html).toContain('href="https://app.example/"')
  expect(html).toContain('<strong>app.example</strong>')
  expect(html).toContain('Read every conversation you can see in your organization')
  expect(html).toContain('Start conversations, upload files, send messages and rate AI responses as you')
  expect(html).toMatch(/<button type="submit" name="decision" value="approve"[^>]*>\s*Allow\s*<\/button>/)
  expect(html).toMatch(/<button type="submit" name="decision" value="deny"[^>]*>\s*Deny\s*<\/button>/)
  expect(hiddenField(html.slice(html.indexOf('<main')), 'csrf').length).toBeGreaterThan(20)
  expect(html).toContain(user.email)
  expect(html).toContain('available to your organization <strong>default</strong> only')
})

test('Allow redirects with a single-use code, state and iss; Deny with access_denied', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser } = await signedIn(h)
  const path = request(client.client_id)
  const allowed = await decide(browser, path, 'approve')
  expect(allowed.status).toBe(303)
  const location = locationOf(allowed)
  expect(location.origin + location.pathname).toBe('http://127.0.0.1:4000/callback')
  expect(location.searchParams.get('code')).toMatch(/^thc_[a-z2-7]{39}$/)
  expect(location.searchParams.get('state')).toBe('xyz')
  expect(location.searchParams.get('iss')).toBe(base)

  const denied = locationOf(await decide(browser, path, 'deny'))
  expect(Object.fromEntries(denied.searchParams)).toEqual({
    error: 'access_denied',
    error_description: expect.any(String),
    state: 'xyz',
    iss: base,
  })
})

test('redirect URIs keep their own query when the response is added', async () => {
  await using h = await harness()
  const client = await register(h, { redirect_uris: ['https://app.example/cb?tenant=a%20b'] })
  const { browser } = await signedIn(h)
  const approved = await approve(browser, {
    clientId: client.client_id,
    redirectUri: 'https://app.example/cb?tenant=a%20b',
  })
  expect(approved.location.href).toStartWith('https://app.example/cb?tenant=a%20b&code=')
})

test('the consent form needs its CSRF token and a same-origin request, and is re-validated in full', async () => {
  await using h = await harness()
  const client = await register(h, { scope: 'threads:read' })
  const { browser } = await signedIn(h)
  const html = await (await browser.get(request(client.client_id))).text()
  const action = formAction(html)
  const csrf = hiddenField(html.slice(html.indexOf('<main')), 'csrf')
  expect((await browser.postForm(action, { decision: 'approve' })).status).toBe(403)
  expect((await browser.postForm(action, { decision: 'approve', csrf: 'forged' })).status).toBe(403)
  const crossSite = await browser.postForm(
    action,
    { decision: 'approve', csrf },
    { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  )
  expect(crossSite.status).toBe(403)
  expect(crossSite.headers.get('location')).toBeNull()
  // Another person's browser cannot use this person's token.
  const other = await signedIn(h)
  expect((await other.browser.postForm(action, { decision: 'approve', csrf })).status).toBe(403)
  // A tampered query is checked like a new request.
  const widened = action.replace('scope=threads%3Aread', 'scope=threads%3Awrite')
  const tampered = await browser.postForm(widened, { decision: 'approve', csrf })
  expect(locationOf(tampered).searchParams.get('error')).toBe('invalid_scope')
  expect((await browser.postForm(action, { decision: 'maybe', csrf })).status).toBe(400)
  const ok = await browser.postForm(
    action,
    { decision: 'approve', csrf },
    { origin: base, 'sec-fetch-site': 'same-origin' },
  )
  expect(locationOf(ok).searchParams.get('code')).toBeTruthy()
})

test('an openly registered client belongs to the first organization that approves it', async () => {
  await using h = await harness()
  const client = await register(h)
  const acme = await signedIn(h, { org: 'acme' })
  const globex = await signedIn(h, { org: 'globex' })
  const { oauthClients } = h.tables
  const stored = async () =>
    (await h.orm.select().from(oauthClients).where(eq(oauthClients.clientId, client.client_id)))[0]
  expect((await stored())?.organizationId).toBeNull()
  // Seeing the consent page, or denying, claims nothing.
  await decide(globex.browser, request(client.client_id), 'deny')
  expect((await stored())?.organizationId).toBeNull()
  await approve(acme.browser, { clientId: client.client_id })
  expect((await stored())?.organizationId).not.toBeNull()

  const refused = await globex.browser.get(request(client.client_id))
  expect(refused.status).toBe(403)
  const html = await refused.text()
  expect(html).toContain('This app belongs to another organization')
  expect(html).toContain('Return to Test app')
  expect(html).toContain('error=access_denied')
  // The colleague in the same organization sees the consent page as usual.
  const colleague = await signedIn(h, { org: 'acme' })
  expect((await colleague.browser.get(request(client.client_id))).status).toBe(200)
})

test('a client registered with a registration token serves only that organization', async () => {
  await using h = await harness()
  const acme = await signedIn(h, { org: 'acme' })
  const tokenReply = await settings(acme.browser, 'POST', '/registration-tokens')
  const client = await register(h, {}, tokenReply.body.registration_token)
  const globex = await signedIn(h, { org: 'globex' })
  const refused = await globex.browser.get(request(client.client_id))
  expect(refused.status).toBe(403)
  // Even a consent form posted anyway does not issue a code.
  const csrf = hiddenField(await refused.text(), 'csrf')
  const posted = await globex.browser.postForm(request(client.client_id), { decision: 'approve', csrf })
  expect(posted.status).toBe(403)
  expect(posted.headers.get('location')).toBeNull()
  expect((await acme.browser.get(request(client.client_id))).status).toBe(200)
})

test('the built-in documentation client works for every organization with the Swagger UI redirect', async () => {
  await using h = await harness()
  const redirectUri = `${base}/swagger/assets/oauth2-redirect.html`
  for (const org of ['acme', 'globex']) {
    const { browser } = await signedIn(h, { org })
    const page = await browser.get(request('threadhouse-docs', { redirect_uri: redirectUri }))
    expect(page.status).toBe(200)
    expect(await page.text()).not.toContain('Not verified')
    const approved = await approve(browser, { clientId: 'threadhouse-docs', redirectUri })
    expect(approved.location.href).toStartWith(`${redirectUri}?code=`)
  }
})

test('offline_access is granted implicitly: MCP clients that add it are served, and it is never stored', async () => {
  await using h = await harness()
  // Registration with offline_access, as clients that copy an OIDC scope list send it.
  const client = await register(h, { scope: 'threads:read offline_access' })
  expect(client.scope).toBe('threads:read')
  const { browser } = await signedIn(h)
  // Claude Code before SEP-2207 appends it; Claude connectors send it with a leading space.
  for (const scope of ['threads:read offline_access', 'offline_access  threads:read']) {
    const { code, verifier } = await approve(browser, { clientId: client.client_id, scope })
    const tokens = await postOAuth(h, '/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:53682/callback',
      client_id: client.client_id,
      code_verifier: verifier ?? '',
    })
    expect(tokens.body.scope).toBe('threads:read')
    expect(tokens.body.refresh_token).toEqual(expect.any(String))
    const refreshed = await postOAuth(h, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
      client_id: client.client_id,
      scope: 'threads:read offline_access',
    })
    expect({ status: refreshed.status, scope: refreshed.body.scope }).toEqual({ status: 200, scope: 'threads:read' })
  }
  // It grants nothing by itself, and other unknown scopes are still refused.
  for (const scope of ['offline_access', 'threads:read openid']) {
    const location = locationOf(await browser.get(request(client.client_id, { scope })))
    expect(location.searchParams.get('error')).toBe('invalid_scope')
  }
})

test('a scope the client did not register for is left out, not refused, unless nothing else was asked', async () => {
  await using h = await harness()
  // Registered without `scope`, as every client before the audit log: it asks for all the metadata advertises.
  const client = await register(h)
  const advertised: string[] = (await h.call('GET', '/.well-known/oauth-authorization-server')).body.scopes_supported
  expect(advertised).toContain('audit:read')
  const { browser } = await signedIn(h, { role: 'owner' })
  const page = await browser.get(request(client.client_id, { scope: advertised.join(' ') }))
  expect(page.status).toBe(200)
  expect(await page.text()).not.toContain('audit log')
  const { code, verifier } = await approve(browser, { clientId: client.client_id, scope: advertised.join(' ') })
  const tokens = await postOAuth(h, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: 'http://127.0.0.1:53682/callback',
    client_id: client.client_id,
    code_verifier: verifier ?? '',
  })
  expect(tokens.body.scope).toBe('threads:read threads:read:own threads:write')
  // Asking only for what it did not register for, or for a scope that does not exist, is still refused.
  for (const scope of ['audit:read', 'threads:read audit:write']) {
    const location = locationOf(await browser.get(request(client.client_id, { scope })))
    expect(location.searchParams.get('error')).toBe('invalid_scope')
  }
})
