// Rate limits on authentication: sign-in per client address and per email, and the OAuth token and revocation
// endpoints per address, all counted by the shared RateLimiter with RATE_LIMIT_AUTH_PER_MINUTE.
import { expect, test } from 'bun:test'
import { harness, ManualClock } from './support/helpers'
import { Browser, hiddenField, password, postOAuth } from './support/oauth-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

async function attempt(browser: Browser, email: string, ip: string, secret = 'wrong password'): Promise<Response> {
  const page = await browser.get('/login')
  const csrf = hiddenField(await page.text(), 'csrf')
  return browser.postForm('/login', { email, password: secret, csrf, next: '/' }, { 'x-forwarded-for': ip })
}

test('sign-in is limited per address and per email, with a readable 429 page and Retry-After', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock, config: { RATE_LIMIT_AUTH_PER_MINUTE: 3, TRUST_PROXY: true } })
  const user = await h.user()
  const browser = Browser.inProcess(h)
  for (let i = 0; i < 3; i++) expect((await attempt(browser, `nobody${i}@example.com`, '192.0.2.1')).status).toBe(401)
  // The fourth attempt from that address is refused before the password is even checked.
  const limited = await attempt(browser, user.email, '192.0.2.1', password)
  expect(limited.status).toBe(429)
  expect(limited.headers.get('retry-after')).toBe('60')
  expect(limited.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(limited.headers.get('cache-control')).toBe('no-store')
  const page = await limited.text()
  expect(page).toContain('Too many sign-in attempts. Wait 60 seconds, then try again.')
  expect(page).toContain('role="alert"')
  // The page still holds a working form for later.
  expect(hiddenField(page, 'csrf').length).toBeGreaterThan(20)
  expect(limited.headers.getSetCookie().some((line) => line.startsWith('threadhouse_session='))).toBe(false)

  // Another address may still sign in; every attempt also counts for the email (that refused one included), so
  // a guesser spreading over many addresses is stopped at the same pace.
  expect((await attempt(browser, user.email, '192.0.2.2', password)).status).toBe(303)
  const guesser = Browser.inProcess(h)
  expect((await attempt(guesser, user.email, '198.51.100.1')).status).toBe(401)
  expect((await attempt(guesser, user.email, '198.51.100.2')).status).toBe(429)

  clock.advance(60_000)
  expect((await attempt(guesser, user.email, '198.51.100.3', password)).status).toBe(303)
})

test('the token and revocation endpoints share one per-address limit; 0 turns the limits off', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock, config: { RATE_LIMIT_AUTH_PER_MINUTE: 2, TRUST_PROXY: true } })
  const from = (path: string, ip: string) =>
    postOAuth(h, path, { grant_type: 'authorization_code', code: 'x', client_id: 'nope' }, { 'x-forwarded-for': ip })
  expect((await from('/oauth/token', '192.0.2.1')).status).toBe(401)
  expect((await from('/oauth/token/revoke', '192.0.2.1')).status).toBe(401)
  const limited = await from('/oauth/token', '192.0.2.1')
  expect(limited.status).toBe(429)
  expect(limited.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) })
  expect(limited.headers.get('retry-after')).toBe('60')
  expect((await from('/oauth/token', '192.0.2.2')).status).toBe(401)
  clock.advance(60_000)
  expect((await from('/oauth/token', '192.0.2.1')).status).toBe(401)

  await using unlimited = await harness({ config: { RATE_LIMIT_AUTH_PER_MINUTE: 0, TRUST_PROXY: true } })
  const user = await unlimited.user()
  const browser = Browser.inProcess(unlimited)
  for (let i = 0; i < 5; i++) expect((await attempt(browser, user.email, '192.0.2.1')).status).toBe(401)
})
