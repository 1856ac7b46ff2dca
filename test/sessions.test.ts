// Sign-in, sessions and CSRF: the contract's form fields, cookie attributes, sliding expiry and same-origin rules.
import { expect, test } from 'bun:test'
import { safeNextPath } from '../src/web/index'
import { harness, ManualClock } from './support/helpers'
import { Browser, hiddenField, password } from './support/oauth-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

test('the sign-in page has the contract fields, landmarks, labels and the local stylesheet only', async () => {
  await using h = await harness()
  const browser = Browser.inProcess(h)
  const response = await browser.get('/login?next=/somewhere')
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
  const html = await response.text()
  expect(html).toStartWith('<!doctype html>')
  expect(html).toContain('<input id="email" name="email" type="email"')
  expect(html).toContain('<input id="password" name="password" type="password"')
  expect(html).toContain('<label for="email">')
  expect(html).toContain('<label for="password">')
  expect(html).toMatch(/<button type="submit" class="primary">\s*Sign in\s*<\/button>/)
  expect(hiddenField(html, 'next')).toBe('/somewhere')
  expect(hiddenField(html, 'csrf').length).toBeGreaterThan(20)
  expect(html).toContain('<main id="main">')
  expect(html).toContain('<header')
  expect(html).not.toMatch(/(src|href)="https?:/)
  const css = await browser.get('/assets/threadhouse.css')
  expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8')
  expect(await css.text()).toContain('color-scheme: light dark')
  expect(response.headers.get('x-frame-options')).toBe('DENY')
  expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
})

test('signing in sets an HttpOnly, SameSite=Lax session cookie and 303s to next', async () => {
  await using h = await harness()
  const user = await h.user()
  const browser = Browser.inProcess(h)
  const response = await browser.signIn(user.email, password, '/oauth/authorize?client_id=x&state=a%26b')
  expect(response.status).toBe(303)
  expect(response.headers.get('location')).toBe('/oauth/authorize?client_id=x&state=a%26b')
  const cookie = response.headers.getSetCookie().find((line) => line.startsWith('threadhouse_session='))
  expect(cookie).toBeDefined()
  expect(cookie).toContain('HttpOnly')
  expect(cookie).toContain('SameSite=Lax')
  expect(cookie).toContain('Path=/')
  expect(cookie).not.toContain('Secure')
  const token = browser.cookies.get('threadhouse_session') ?? ''
  expect(token).toStartWith('thss_')
  // Stored only as a hash.
  const rows = await h.orm.select().from(h.tables.sessions)
  expect(rows).toHaveLength(1)
  expect(JSON.stringify(rows)).not.toContain(token)
  // A signed-in visit to /login goes straight on.
  const again = await browser.get('/login?next=/elsewhere')
  expect(again.status).toBe(303)
  expect(again.headers.get('location')).toBe('/elsewhere')
})

test('wrong passwords and unknown emails get the same 401 answer', async () => {
  await using h = await harness()
  const user = await h.user()
  const wrong = await Browser.inProcess(h).signIn(user.email, 'not the password')
  const unknown = await Browser.inProcess(h).signIn('nobody@example.com', password)
  expect(wrong.status).toBe(401)
  expect(unknown.status).toBe(401)
  const text = await wrong.text()
  expect(text).toContain('The email or password is not correct.')
  expect(text).toContain(`value="${user.email}"`)
  expect(wrong.headers.getSetCookie().some((line) => line.includes('threadhouse_session='))).toBe(false)
})

test('next only ever leads to a path on this server', () => {
  const base = 'http://threadhouse.test'
  expect(safeNextPath('/oauth/authorize?a=1#x', base)).toBe('/oauth/authorize?a=1#x')
  for (const hostile of [
    'https://evil.example/',
    '//evil.example/path',
    '/\\evil.example',
    '\\\\evil.example',
    'javascript:alert(1)',
    '/ok\n/evil',
    // Dot segments that collapse into a leading // once resolved.
    '/.//evil.example',
    '/a/..//evil.example',
    '/%2e//evil.example',
    '/..//evil.example/x',
    '',
    undefined,
  ]) {
    expect(safeNextPath(hostile, base)).toBe('/')
  }
})

test('a hostile next is replaced by / after sign-in', async () => {
  await using h = await harness()
  const user = await h.user()
  const response = await Browser.inProcess(h).signIn(user.email, password, '//evil.example/')
  expect(response.status).toBe(303)
  expect(response.headers.get('location')).toBe('/')
})

test('a script posting to /login?next=… without the hidden next field still lands on next', async () => {
  await using h = await harness()
  const user = await h.user()
  const browser = Browser.inProcess(h)
  const csrf = hiddenField(await (await browser.get('/login?next=/settings/tokens')).text(), 'csrf')
  const response = await browser.postForm('/login?next=/settings/tokens', { email: user.email, password, csrf })
  expect(response.status).toBe(303)
  expect(response.headers.get('location')).toBe('/settings/tokens')
  // The query is held to the same rule as the field.
  const hostile = Browser.inProcess(h)
  const token = hiddenField(await (await hostile.get('/login')).text(), 'csrf')
  const refused = await hostile.postForm('/login?next=/a/..//evil.example', {
    email: user.email,
    password,
    csrf: token,
  })
  expect(refused.headers.get('location')).toBe('/')
})

test('the sign-in form needs its CSRF token and a same-origin request', async () => {
  await using h = await harness()
  const user = await h.user()
  const browser = Browser.inProcess(h)
  const html = await (await browser.get('/login')).text()
  const csrf = hiddenField(html, 'csrf')
  const missing = await browser.postForm('/login', { email: user.email, password, next: '/' })
  expect(missing.status).toBe(403)
  const forged = await browser.postForm('/login', { email: user.email, password, next: '/', csrf: 'x'.repeat(43) })
  expect(forged.status).toBe(403)
  const crossSite = await browser.postForm(
    '/login',
    { email: user.email, password, next: '/', csrf },
    { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  )
  expect(crossSite.status).toBe(403)
  // Without the cookie the token means nothing.
  const stranger = Browser.inProcess(h)
  expect((await stranger.postForm('/login', { email: user.email, password, next: '/', csrf })).status).toBe(403)
  const sameOrigin = await browser.postForm(
    '/login',
    { email: user.email, password, next: '/', csrf },
    { origin: 'http://threadhouse.test', 'sec-fetch-site': 'same-origin' },
  )
  expect(sameOrigin.status).toBe(303)
})

test('sessions slide: used sessions live on, idle ones expire after 30 days', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const user = await h.user()
  const browser = Browser.inProcess(h)
  await browser.signIn(user.email)
  const day = 24 * 60 * 60 * 1000
  const signedIn = async () => (await browser.get('/login?next=/x')).status === 303
  clock.advance(20 * day)
  const renewal = await browser.get('/login?next=/x')
  expect(renewal.status).toBe(303)
  expect(renewal.headers.getSetCookie().some((line) => line.startsWith('threadhouse_session=thss_'))).toBe(true)
  clock.advance(29 * day)
  expect(await signedIn()).toBe(true)
  clock.advance(30 * day)
  expect(await signedIn()).toBe(false)
  expect(await h.orm.select().from(h.tables.sessions)).toHaveLength(0)
})

test('sign-out needs the session CSRF token and ends the session', async () => {
  await using h = await harness()
  const user = await h.user()
  const browser = Browser.inProcess(h)
  await browser.signIn(user.email)
  const refused = await browser.postForm('/logout', { csrf: 'wrong' })
  expect(refused.status).toBe(403)
  // The refusal page is itself signed in, so its sign-out form carries the right token.
  const csrf = hiddenField(await refused.text(), 'csrf')
  const out = await browser.postForm('/logout', { csrf })
  expect(out.status).toBe(303)
  expect(out.headers.get('location')).toBe('/login')
  expect(browser.cookies.has('threadhouse_session')).toBe(false)
  expect(await h.orm.select().from(h.tables.sessions)).toHaveLength(0)
})

test('under https the cookies are Secure and __Host- prefixed', async () => {
  await using h = await harness({ config: { PUBLIC_URL: 'https://threadhouse.example' } })
  const user = await h.user()
  const browser = new Browser((request) => h.app.handle(request), 'https://threadhouse.example')
  const page = await browser.get('/login')
  expect(page.headers.getSetCookie()[0]).toMatch(/^__Host-threadhouse_csrf=.*; Secure/)
  const response = await browser.signIn(user.email)
  expect(response.status).toBe(303)
  const cookie = response.headers.getSetCookie().find((line) => line.startsWith('__Host-threadhouse_session='))
  expect(cookie).toContain('Secure')
  expect(cookie).toContain('HttpOnly')
})
