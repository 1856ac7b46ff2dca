// Several instances on one PostgreSQL database and their security state: what one instance does to it, another sees
// at the very next request (answers and streams across instances are in instances.test.ts). Two real server
// processes share one database and one bucket, as behind a load balancer with no sticky sessions; a browser's
// cookies go to whichever it calls. PostgreSQL only: a SQLite file takes one server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { backendEnv, onPostgres } from './support/backend'
import { firstRunToken, type ServerProcess, startServer, until } from './support/helpers'
import { approve, Browser, hiddenField, loopbackRedirect, settings } from './support/oauth-helpers'
import { sharedPostgres } from './support/postgres'
import { submit } from './support/web-helpers'

// Server processes start beside other tests' on a busy machine, and sign-in hashes with argon2 on purpose.

/**
 * Sign-in attempts per address and per email: above the owner's four sign-ins in these tests (one email, counted
 * together), few enough to reach.
 */
const authPerMinute = 6

const owner = { email: 'owner@example.com', password: 'correct horse battery staple' }

/** What every instance of one deployment shares: the database, the bucket, the public URL and the limits. */
function deployment(database: Record<string, string>): Record<string, string> {
  return {
    ...database,
    PUBLIC_URL: 'http://threadhouse.test',
    ADMIN_EMAIL: owner.email,
    ADMIN_PASSWORD: owner.password,
    // Sign-in attempts are counted by the address the trusted proxy names, as behind a load balancer.
    TRUST_PROXY: 'true',
    RATE_LIMIT_AUTH_PER_MINUTE: String(authPerMinute),
  }
}

/** A database and a bucket of the run's backend, both fresh, for one deployment's instances to share. */
function sharedStorage(): Promise<Record<string, string>> {
  return backendEnv({})
}

/** A browser signed in as the owner on `server`, from its own address (each test's limits apart). */
async function signedIn(server: ServerProcess, ip: string): Promise<Browser> {
  const browser = Browser.overHttp(server.url)
  const page = await browser.get('/login', { 'x-forwarded-for': ip })
  const csrf = hiddenField(await page.text(), 'csrf')
  const answer = await browser.postForm('/login', { ...owner, csrf, next: '/' }, { 'x-forwarded-for': ip })
  expect(answer.status).toBe(303)
  return browser
}

function me(server: ServerProcess, token: string): Promise<Response> {
  return fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })
}

describe.skipIf(!onPostgres)('two instances on one database', () => {
  let a: ServerProcess
  let b: ServerProcess
  let firstToken: string

  beforeAll(async () => {
    const env = deployment(await sharedStorage())
    ;[a, b] = await Promise.all([startServer(env), startServer(env)])
    // Both ran the first run; exactly one of them made the owner and printed the token.
    firstToken = await Promise.any([firstRunToken(a), firstRunToken(b)])
  })

  afterAll(async () => {
    await Promise.all([a?.[Symbol.asyncDispose](), b?.[Symbol.asyncDispose]()])
  })

  test('a personal access token revoked on one instance is refused by the other at its next request', async () => {
    const browser = await signedIn(a, '192.0.2.10')
    const created = await submit(browser, '/settings/tokens', {
      name: 'laptop',
      scope: 'threads:read',
      expires_in_days: '',
    })
    const page = await created.text()
    const token = page.match(/thp_[a-z0-9]+/)?.[0] ?? ''
    expect(token).not.toBe('')
    // Each instance has just resolved the token: had either kept it in memory, it would answer from there.
    expect((await me(a, token)).status).toBe(200)
    expect((await me(b, token)).status).toBe(200)

    const list = await (await browser.get('/settings/tokens')).text()
    const ids = [...list.matchAll(/\/settings\/tokens\/(\d+)\/revoke/g)].map((match) => match[1])
    // Newest first: the laptop's, then the first run's.
    expect(ids).toHaveLength(2)
    const revoke = ids[0] ?? ''
    expect((await submit(browser, `/settings/tokens/${revoke}/revoke`)).status).toBe(303)
    expect((await me(b, token)).status).toBe(401)
    expect((await me(a, token)).status).toBe(401)
    // The first run's token, another of the owner's, still works on both.
    expect((await me(b, firstToken)).status).toBe(200)
  })

  test('an app disconnected on one instance loses its access token on the other at its next request', async () => {
    const onA = await signedIn(a, '192.0.2.50')
    // The same browser, its requests now sent to B.
    const onB = Browser.overHttp(b.url)
    for (const [name, value] of onA.cookies) onB.cookies.set(name, value)
    const issued = await settings(onA, 'POST', '/registration-tokens')
    const registered = await fetch(`${b.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${issued.body.registration_token}` },
      body: JSON.stringify({
        client_name: 'Desktop app',
        redirect_uris: [loopbackRedirect],
        token_endpoint_auth_method: 'none',
      }),
    })
    expect(registered.status).toBe(201)
    const clientId = ((await registered.json()) as { client_id: string }).client_id
    // Consent on B, the code exchanged on A.
    const { code, verifier } = await approve(onB, { clientId, redirectUri: loopbackRedirect, scope: 'threads:read' })
    const exchanged = await fetch(`${a.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: loopbackRedirect,
        client_id: clientId,
        code_verifier: verifier ?? '',
      }),
    })
    expect(exchanged.status).toBe(200)
    const token = ((await exchanged.json()) as { access_token: string }).access_token
    expect((await me(a, token)).status).toBe(200)
    expect((await me(b, token)).status).toBe(200)

    expect((await settings(onB, 'DELETE', `/connected-apps/${clientId}`)).status).toBe(204)
    expect((await me(a, token)).status).toBe(401)
    expect((await me(b, token)).status).toBe(401)
  })

  test('sign-in attempts on either instance count against one limit', async () => {
    const ip = '192.0.2.20'
    const attempt = async (server: ServerProcess, email: string) => {
      const browser = Browser.overHttp(server.url)
      const csrf = hiddenField(await (await browser.get('/login', { 'x-forwarded-for': ip })).text(), 'csrf')
      return browser.postForm('/login', { email, password: 'wrong password', csrf }, { 'x-forwarded-for': ip })
    }
    // Alternating instances, the address's attempts add up: the one after the limit is refused on either.
    const statuses: number[] = []
    for (let i = 0; i <= authPerMinute; i++)
      statuses.push((await attempt(i % 2 ? b : a, `nobody${i}@example.com`)).status)
    expect(statuses).toEqual([...Array(authPerMinute).fill(401), 429])
    const refused = await attempt(a, 'someone@example.com')
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)

    // The token endpoint's per-address limit is shared the same way.
    const tokenIp = '192.0.2.21'
    const exchange = (server: ServerProcess) =>
      fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': tokenIp },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', client_id: 'nobody' }),
      })
    const answers: number[] = []
    for (let i = 0; i <= authPerMinute; i++) answers.push((await exchange(i % 2 ? b : a)).status)
    expect(answers).toEqual([...Array(authPerMinute).fill(401), 429])
  })

  test('a sign-in form served by one instance is accepted by the other, and signing out there ends it here', async () => {
    const ip = '192.0.2.30'
    const browser = Browser.overHttp(a.url)
    const form = await browser.get('/login', { 'x-forwarded-for': ip })
    const csrf = hiddenField(await form.text(), 'csrf')
    const posted = await browser.postForm(
      `${b.url}/login`,
      { ...owner, csrf, next: '/settings/tokens' },
      { 'x-forwarded-for': ip },
    )
    expect(posted.status).toBe(303)
    expect(posted.headers.get('location')).toBe('/settings/tokens')
    // The session opened on B is good on A.
    expect((await browser.get('/settings/tokens')).status).toBe(200)

    // Signed out on B, the session is refused on A at its next request.
    const sessionCsrf = hiddenField(await (await browser.get(`${b.url}/settings/password`)).text(), 'csrf')
    const out = await browser.postForm(
      `${b.url}/logout`,
      { csrf: sessionCsrf },
      { origin: browser.origin, 'sec-fetch-site': 'same-origin' },
    )
    expect(out.status).toBe(303)
    const after = await Browser.overHttp(a.url).get('/settings/tokens', {
      cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    })
    expect(after.status).toBe(303)
    expect(after.headers.get('location')).toStartWith('/login')
  })

  test('a registration token registers one client, however many instances race to use it', async () => {
    const browser = await signedIn(b, '192.0.2.40')
    for (let round = 0; round < 5; round++) {
      const issued = await settings(browser, 'POST', '/registration-tokens')
      expect(issued.status).toBe(201)
      const token = issued.body.registration_token as string
      const registration = (server: ServerProcess) =>
        fetch(`${server.url}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({
            client_name: `Racer ${round}`,
            redirect_uris: [loopbackRedirect],
            token_endpoint_auth_method: 'none',
          }),
        })
      const answers = await Promise.all([registration(a), registration(b), registration(a), registration(b)])
      expect(answers.map((answer) => answer.status).sort()).toEqual([201, 401, 401, 401])
    }
  })
})

test.skipIf(!onPostgres)('two instances started at once on an empty database make one owner', async () => {
  const cluster = await sharedPostgres()
  const name = `empty_${process.pid}_${Date.now()}`
  await cluster.admin(`create database ${name}`)
  const storage = await sharedStorage()
  const env = deployment({ ...storage, DATABASE_URL: cluster.url(name) })
  // Both migrate the empty database and run the first run at the same moment.
  const [started, other] = await Promise.all([startServer(env), startServer(env)])
  await using first = started
  await using second = other
  const token = await Promise.any([firstRunToken(first), firstRunToken(second)])
  // Whichever made the owner, the other has finished its first run too once it answers with that owner's token.
  await until(async () => (await me(first, token)).status === 200 && (await me(second, token)).status === 200)
  const printed = [first, second].filter((server) => server.stdout().includes('Threadhouse is set up.'))
  expect(printed).toHaveLength(1)

  const sql = new Bun.SQL(cluster.url(name), { max: 1 })
  try {
    const [counts] = await sql`
      select (select count(*) from users)::int as users,
             (select count(*) from organizations)::int as organizations,
             (select count(*) from personal_access_tokens)::int as tokens`
    expect(counts).toEqual({ users: 1, organizations: 1, tokens: 1 })
  } finally {
    await sql.close()
  }
})
