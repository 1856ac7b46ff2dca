// Sign-in through an OpenID Connect provider, against a real provider on loopback: PKCE, state and nonce, a
// verified ID token, and matching to an existing user by verified email only.
import { expect, test } from 'bun:test'
import { createUser } from '../src/auth/users'
import { type Config, ConfigError, loadConfig } from '../src/config'
import { noOrganization } from '../src/shared/audit'
import { eventsNamed, eventsOf, testOrigin } from './support/audit'
import { type Harness, harness, ScriptedRunner } from './support/helpers'
import { Browser, hiddenField, password } from './support/oauth-helpers'
import { type FakeOidcProvider, startFakeOidcProvider } from './support/oidc-provider'

async function withProvider(provider: FakeOidcProvider, config: Partial<Config> = {}): Promise<Harness> {
  const h = await harness({
    runner: new ScriptedRunner(),
    config: {
      ...config,
      OIDC_ISSUER: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_CLIENT_SECRET: provider.clientSecret,
      OIDC_NAME: 'Example ID',
    },
  })
  await createUser(
    h.store.users,
    { email: 'ada@example.com', password, organizationSlug: 'default', role: 'member' },
    0,
    testOrigin,
  )
  return h
}

/** The browser's round trip: Threadhouse → the provider (which signs in at once) → back to the callback. */
async function roundTrip(browser: Browser, next = '/threads'): Promise<Response> {
  const leave = await browser.get(`/login/oidc?next=${encodeURIComponent(next)}`)
  expect(leave.status).toBe(302)
  const atProvider = await fetch(leave.headers.get('location') ?? '', { redirect: 'manual' })
  return browser.get(atProvider.headers.get('location') ?? '')
}

test('the sign-in page offers the provider; a verified email opens a session and goes on to next', async () => {
  await using provider = await startFakeOidcProvider()
  await using h = await withProvider(provider)
  const browser = Browser.inProcess(h)
  const login = await (await browser.get('/login?next=/threads/x')).text()
  expect(login).toContain('<a class="button" href="/login/oidc?next=%2Fthreads%2Fx">Sign in with Example ID</a>')

  const back = await roundTrip(browser, '/threads?q=lyon')
  expect(back.status).toBe(303)
  expect(back.headers.get('location')).toBe('/threads?q=lyon')
  expect(browser.cookies.get('threadhouse_session')).toStartWith('thss_')
  expect(browser.cookies.has('threadhouse_oidc')).toBe(false)
  expect((await browser.get('/threads')).status).toBe(200)

  const [request] = provider.authorizations
  expect(request?.get('response_type')).toBe('code')
  expect(request?.get('scope')).toBe('openid email profile')
  expect(request?.get('code_challenge_method')).toBe('S256')
  expect(request?.get('redirect_uri')).toBe('http://threadhouse.test/login/oidc/callback')
  expect(request?.get('state')?.length).toBeGreaterThan(20)
  expect(request?.get('nonce')?.length).toBeGreaterThan(20)
  // Recorded as any sign-in, saying how.
  const ada = await h.store.users.findByEmail('ada@example.com')
  const [signedIn] = await eventsNamed(h, ada?.organizationId ?? 0, 'signin.succeeded')
  expect(signedIn).toMatchObject({ actorKind: 'session', actorUserId: ada?.id, targetId: String(ada?.id) })
  expect(JSON.parse(signedIn?.detail ?? '{}')).toMatchObject({ method: 'oidc' })
})

test('a sign-in form locked by the attempt limit still offers the provider', async () => {
  await using provider = await startFakeOidcProvider()
  await using h = await withProvider(provider, { RATE_LIMIT_AUTH_PER_MINUTE: 1 })
  const browser = Browser.inProcess(h)
  const csrf = hiddenField(await (await browser.get('/login')).text(), 'csrf')
  const form = { email: 'ada@example.com', password: 'wrong password', csrf, next: '/threads' }
  expect((await browser.postForm('/login', form)).status).toBe(401)
  const limited = await browser.postForm('/login', form)
  expect(limited.status).toBe(429)
  expect(await limited.text()).toContain('href="/login/oidc?next=%2Fthreads">Sign in with Example ID</a>')
})

test('an email given only by userinfo counts when verified; a hostile next stays on this server', async () => {
  await using provider = await startFakeOidcProvider()
  await using h = await withProvider(provider)
  provider.person = { sub: 'p2', email: 'ADA@example.com', emailVerified: true, emailOnlyInUserinfo: true }
  const back = await roundTrip(Browser.inProcess(h), '//evil.example/')
  expect(back.status).toBe(303)
  expect(back.headers.get('location')).toBe('/')
})

test('unknown and unverified emails are refused, and nobody is created', async () => {
  await using provider = await startFakeOidcProvider()
  await using h = await withProvider(provider)
  provider.person = { sub: 'p3', email: 'stranger@example.com', emailVerified: true }
  const refusedBrowser = Browser.inProcess(h)
  const unknown = await roundTrip(refusedBrowser)
  expect(unknown.status).toBe(403)
  expect(await unknown.text()).toContain('No Threadhouse account uses stranger@example.com.')
  // The refusal page is the shared error page, and the flow's cookie is spent with it.
  expect(unknown.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(refusedBrowser.cookies.has('threadhouse_oidc')).toBe(false)
  provider.person = { sub: 'p4', email: 'ada@example.com', emailVerified: false }
  const unverified = await roundTrip(Browser.inProcess(h))
  expect(unverified.status).toBe(403)
  expect(await unverified.text()).toContain('Example ID has not verified your email address ada@example.com.')
  expect(await h.orm.select().from(h.tables.sessions)).toEqual([])
  // Both refusals are recorded in no organization's log, without the emails the provider gave.
  const refusals = await eventsOf(h, noOrganization)
  expect(refusals.map((event) => [event.action, event.outcome, JSON.parse(event.detail)])).toEqual([
    ['signin.failed', 'failure', { method: 'oidc', reason: 'refused_403' }],
    ['signin.failed', 'failure', { method: 'oidc', reason: 'refused_403' }],
  ])
  expect(JSON.stringify(refusals)).not.toContain('stranger@example.com')
})

test('a wrong state, a replayed nonce, a forged signature or a refusal at the provider opens no session', async () => {
  await using provider = await startFakeOidcProvider()
  await using h = await withProvider(provider)

  // State: a callback this browser did not start (login CSRF), or one whose flow cookie is gone.
  const victim = Browser.inProcess(h)
  const attacker = Browser.inProcess(h)
  const leave = await attacker.get('/login/oidc')
  const callback = (await fetch(leave.headers.get('location') ?? '', { redirect: 'manual' })).headers.get('location')
  const forged = await victim.get(callback ?? '')
  expect(forged.status).toBe(400)
  expect(await forged.text()).toContain('This sign-in has expired or was not started here.')
  // Nor a bare request without any flow: none of these is recorded, or anyone could fill the log.
  expect((await Browser.inProcess(h).get('/login/oidc/callback')).status).toBe(400)
  expect((await Browser.inProcess(h).get('/login/oidc/callback?state=x&code=y')).status).toBe(400)
  expect(await eventsNamed(h, noOrganization, 'signin.failed')).toEqual([])

  provider.misbehaviour = { wrongNonce: true }
  const replayed = await roundTrip(Browser.inProcess(h))
  expect(replayed.status).toBe(400)
  expect(await replayed.text()).toContain('belongs to another sign-in')

  provider.misbehaviour = { foreignKey: true }
  const unsigned = await roundTrip(Browser.inProcess(h))
  expect(unsigned.status).toBe(400)
  expect(await unsigned.text()).toContain('could not be verified')

  provider.misbehaviour = { error: 'access_denied' }
  const denied = await roundTrip(Browser.inProcess(h))
  expect(denied.status).toBe(400)
  expect(await denied.text()).toContain('Example ID did not sign you in (access_denied).')
  expect(await h.orm.select().from(h.tables.sessions)).toEqual([])
})

test('without configuration there is no button and no route; the variables are checked together', async () => {
  await using h = await harness({ runner: new ScriptedRunner() })
  const browser = Browser.inProcess(h)
  expect(await (await browser.get('/login')).text()).not.toContain('/login/oidc')
  expect((await browser.get('/login/oidc')).status).toBe(404)
  expect(() => loadConfig({ OIDC_ISSUER: 'https://id.example' })).toThrow(ConfigError)
  expect(() => loadConfig({ OIDC_CLIENT_SECRET: 's' })).toThrow(
    'OIDC_CLIENT_SECRET is set but OIDC_ISSUER and OIDC_CLIENT_ID are not',
  )
  expect(() => loadConfig({ OIDC_ISSUER: 'id.example', OIDC_CLIENT_ID: 'x' })).toThrow('OIDC_ISSUER is invalid')
  expect(() =>
    loadConfig({ OIDC_ISSUER: 'https://id.example', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'hunter2' }),
  ).not.toThrow()
})
