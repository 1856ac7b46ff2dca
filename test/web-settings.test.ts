// The settings pages through app.handle: who may open them, the strict headers, CSRF on every form, API tokens,
// connected apps, OAuth clients, registration tokens and password changes, with hostile names escaped.
import { expect, test } from 'bun:test'
import { harness, ManualClock } from './support/helpers'
import { Browser, password, publicGrant, register, settings, signedIn } from './support/oauth-helpers'
import { expectEscaped, expectPageHeaders, hostile, post, secretOn, submit } from './support/web-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

const pages = [
  '/settings/tokens',
  '/settings/apps',
  '/settings/clients',
  '/settings/registration-token',
  '/settings/password',
]
const forms = [
  '/settings/tokens',
  '/settings/tokens/1/revoke',
  '/settings/apps/thcl_x/revoke',
  '/settings/clients',
  '/settings/registration-token',
  '/settings/password',
]

test('settings pages send visitors to sign in, and answer members with strict, uncached pages', async () => {
  await using h = await harness()
  const visitor = Browser.inProcess(h)
  for (const path of ['/settings', ...pages]) {
    const response = await visitor.get(path)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`/login?next=${encodeURIComponent(path)}`)
  }
  const expired = await post(visitor, '/settings/tokens/3/revoke', { csrf: 'x' })
  expect(expired.headers.get('location')).toBe(`/login?next=${encodeURIComponent('/settings/tokens')}`)

  const { browser } = await signedIn(h)
  expect((await browser.get('/settings')).headers.get('location')).toBe('/settings/tokens')
  for (const path of pages) {
    const response = await browser.get(path)
    expect(response.status).toBe(200)
    expectPageHeaders(response)
    const html = await response.text()
    expect(html).toContain(`<a href="${path}" aria-current="page">`)
    expect(html).toContain('<main id="main">')
    expect(html).not.toMatch(/<script>|\son[a-z]+=|(src|href)="https?:/)
  }
  const script = await browser.get('/assets/copy.js')
  expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
  expect(await script.text()).toContain('navigator.clipboard.writeText')
})

test('every settings form refuses a missing or forged CSRF token and cross-site posts, changing nothing', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h)
  for (const path of forms) {
    const fields = { name: 'x', scope: 'threads:read', expires_in_days: '' }
    expect((await post(browser, path, fields)).status).toBe(403)
    expect((await post(browser, path, { ...fields, csrf: 'forged' })).status).toBe(403)
    const crossSite = await submit(browser, path, fields, {
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
    })
    expect(crossSite.status).toBe(403)
    expect(await crossSite.text()).toContain('did not come from a Threadhouse page')
  }
  // Only the token the harness made exists; no client, no registration token.
  const tokens = await browser.get('/settings/tokens')
  expect((await tokens.text()).match(/\/revoke"/g)).toHaveLength(1)
  expect((await settings(browser, 'GET', '/oauth-clients')).body).toEqual([])
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(200)
})

test('API tokens: created with chosen scopes and expiry, shown once, listed, usable, then revoked', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h)
  const created = await submit(browser, '/settings/tokens', {
    name: `Laptop ${hostile}`,
    scope: ['threads:read', 'threads:write'],
    expires_in_days: '30',
  })
  expect(created.status).toBe(200)
  expectPageHeaders(created)
  const page = await created.text()
  expectEscaped(page)
  const token = secretOn(page, 'new-token')
  expect(token).toStartWith('thp_')
  expect(page).toContain('<script src="/assets/copy.js" defer></script>')

  const me = await h.call('GET', '/api/v1/me', { token })
  expect(me.status).toBe(200)
  const readOnly = await submit(browser, '/settings/tokens', {
    name: 'Reader',
    scope: 'threads:read:own',
    expires_in_days: '',
  })
  const reader = secretOn(await readOnly.text(), 'new-token')
  const write = await h.call('POST', '/api/v1/threads', { token: reader, body: { name: 'x' } })
  expect(write.status).toBe(403)

  const listing = await (await browser.get('/settings/tokens')).text()
  expect(listing).not.toContain(token)
  expect(listing).not.toContain(reader)
  expect(listing).not.toContain('class="secret"')
  expectEscaped(listing)
  expect(listing).toContain('<code class="scope">threads:read:own</code>')
  expect(listing).toMatch(/Laptop &lt;script&gt;.*?<\/th>.*?threads:read.*?threads:write.*?<time datetime="[^"]+">/)

  const id = /action="\/settings\/tokens\/(\d+)\/revoke"[^>]*><input[^>]*\/><button[^>]*"Revoke token Laptop/.exec(
    listing,
  )?.[1]
  const revoked = await submit(browser, `/settings/tokens/${id}/revoke`)
  expect(revoked.status).toBe(303)
  expect(revoked.headers.get('location')).toBe('/settings/tokens?notice=token-revoked')
  expect((await h.call('GET', '/api/v1/me', { token })).status).toBe(401)
  const after = await (await browser.get('/settings/tokens?notice=token-revoked')).text()
  expect(after).toContain('The token was revoked. It no longer works.')
  expect(after).not.toContain('Laptop &lt;')
  // Notices come from a fixed list: a URL cannot put words on the page.
  expect(await (await browser.get(`/settings/tokens?notice=${encodeURIComponent(hostile)}`)).text()).not.toContain(
    'pwned',
  )

  // Someone else's token, or one already revoked, is not found.
  const other = await signedIn(h)
  expect((await submit(other.browser, `/settings/tokens/${id}/revoke`)).status).toBe(404)
  expect((await submit(browser, '/settings/tokens/abc/revoke')).status).toBe(404)
})

test('API token form errors keep what was typed and say what is wrong', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h)
  const cases: [Record<string, string | string[]>, string][] = [
    [{ name: 'CI', expires_in_days: '30' }, 'Choose at least one scope.'],
    [{ name: 'CI', scope: ['threads:read', 'admin'], expires_in_days: '30' }, 'Choose scopes from the list.'],
    [{ name: ' ', scope: 'threads:read', expires_in_days: '30' }, 'Give the token a name.'],
    [{ name: 'CI', scope: 'threads:read', expires_in_days: '5000' }, 'Choose an expiry from the list.'],
  ]
  for (const [fields, message] of cases) {
    const response = await submit(browser, '/settings/tokens', fields)
    expect(response.status).toBe(400)
    const html = await response.text()
    expect(html).toContain(`role="alert">${message}</p>`)
    expect(html).not.toContain('class="secret"')
  }
  const kept = await (await submit(browser, '/settings/tokens', { name: hostile, expires_in_days: '7' })).text()
  expectEscaped(kept)
  expect(kept).toContain('<option value="7" selected>')
})

test('connected apps list the app with its scopes and last use; Revoke stops its tokens at once', async () => {
  await using h = await harness()
  const app = await register(h, { client_name: `Notes ${hostile}` })
  const { browser } = await signedIn(h)
  const tokens = (await publicGrant(h, browser, app.client_id, 'threads:read')).body
  await h.call('GET', '/api/v1/me', { token: tokens.access_token })
  const page = await (await browser.get('/settings/apps')).text()
  expectEscaped(page)
  expect(page).toContain('Not verified')
  expect(page).toContain('<code class="scope">threads:read</code>')
  expect(page).not.toContain('Never used')

  const revoked = await submit(browser, `/settings/apps/${app.client_id}/revoke`)
  expect(revoked.headers.get('location')).toBe('/settings/apps?notice=app-revoked')
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(401)
  const after = await (await browser.get('/settings/apps?notice=app-revoked')).text()
  expect(after).toContain('No app holds tokens for you.')
  expect((await submit(browser, `/settings/apps/${app.client_id}/revoke`)).status).toBe(404)
})

test('OAuth clients: members create confidential clients (ID and secret once) and list only their own', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h, { org: 'acme' })
  const colleague = await signedIn(h, { org: 'acme' })
  const created = await submit(browser, '/settings/clients', {
    client_name: `Dashboard ${hostile}`,
    redirect_uris: 'https://dash.example/cb\r\n\r\n  http://127.0.0.1/cb  \n',
  })
  expect(created.status).toBe(200)
  const page = await created.text()
  expectEscaped(page)
  const secret = secretOn(page, 'new-client-secret')
  expect(secret).toStartWith('ths_')
  const clientId = /Client ID: <code>(thcl_[a-z0-9]+)<\/code>/.exec(page)?.[1] ?? ''
  const mine = await settings(browser, 'GET', '/oauth-clients')
  expect(mine.body).toEqual([
    expect.objectContaining({
      client_id: clientId,
      redirect_uris: ['https://dash.example/cb', 'http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
      registered_via: 'settings',
    }),
  ])
  const listing = await (await browser.get('/settings/clients')).text()
  expect(listing).toContain(clientId)
  expect(listing).not.toContain(secret)
  // A colleague sees none of it, on the page or through the JSON list.
  expect(await (await colleague.browser.get('/settings/clients')).text()).not.toContain(clientId)
  expect((await settings(colleague.browser, 'GET', '/oauth-clients')).body).toEqual([])

  const refused = await submit(browser, '/settings/clients', {
    client_name: hostile,
    redirect_uris: 'http://x.example/cb',
  })
  expect(refused.status).toBe(400)
  const refusal = await refused.text()
  expect(refusal).toContain('uses http: only http://localhost')
  expectEscaped(refusal)
  expect(refusal).toContain('>http://x.example/cb</textarea>')
  expect((await submit(browser, '/settings/clients', { client_name: 'X', redirect_uris: '' })).status).toBe(400)
})

test('any member generates a registration token, shown once with its expiry, that registers a client', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h)
  const response = await submit(browser, '/settings/registration-token')
  expect(response.status).toBe(200)
  const page = await response.text()
  const token = secretOn(page, 'registration-token')
  expect(token).toStartWith('thrg_')
  expect(page).toMatch(/Valid until <time datetime="[^"]+">[^<]+ UTC<\/time>/)
  expect(await (await browser.get('/settings/registration-token')).text()).not.toContain(token)
  const client = await register(h, { client_name: 'Registered' }, token)
  expect(client.client_id).toStartWith('thcl_')
})

test('password changes share the sign-in attempt limit, so a session cannot guess the password', async () => {
  await using h = await harness({ clock: new ManualClock(), config: { RATE_LIMIT_AUTH_PER_MINUTE: 3 } })
  // Signing in through the page is the first attempt for this email.
  const user = await h.user()
  const browser = Browser.inProcess(h)
  expect((await browser.signIn(user.email)).status).toBe(303)
  const guess = (current: string) =>
    submit(browser, '/settings/password', {
      current_password: current,
      new_password: 'a new secret',
      confirm_password: 'a new secret',
    })
  expect((await guess('nope')).status).toBe(400)
  expect((await guess('nope again')).status).toBe(400)
  const limited = await guess(password)
  expect(limited.status).toBe(429)
  expect(limited.headers.get('retry-after')).toBe('60')
  expect(await limited.text()).toContain('Too many attempts. Wait 60 seconds, then try again.')
})

test('changing the password needs the current one, signs out other sessions and keeps this one', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h)
  const elsewhere = Browser.inProcess(h)
  await elsewhere.signIn(user.email)
  const change = (fields: Record<string, string>) => submit(browser, '/settings/password', fields)
  const wrong = await change({
    current_password: 'nope',
    new_password: 'a new secret',
    confirm_password: 'a new secret',
  })
  expect(wrong.status).toBe(400)
  expect(await wrong.text()).toContain('The current password is not correct.')
  const mismatch = await change({ current_password: password, new_password: 'a new secret', confirm_password: 'other' })
  expect(await mismatch.text()).toContain('The two new passwords do not match.')
  const short = await change({ current_password: password, new_password: 'short', confirm_password: 'short' })
  expect(await short.text()).toContain('at least 8 characters')

  const done = await change({
    current_password: password,
    new_password: 'a new secret',
    confirm_password: 'a new secret',
  })
  expect(done.status).toBe(303)
  expect(done.headers.get('location')).toBe('/settings/password?notice=password-changed')
  expect(await (await browser.get('/settings/password?notice=password-changed')).text()).toContain(
    'Your password was changed',
  )
  expect((await elsewhere.get('/settings/tokens')).status).toBe(303)
  expect(await h.orm.select().from(h.tables.sessions)).toHaveLength(1)
  expect((await Browser.inProcess(h).signIn(user.email)).status).toBe(401)
  expect((await Browser.inProcess(h).signIn(user.email, 'a new secret')).status).toBe(303)
  // API tokens are separate credentials and keep working.
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(200)
})
