// Dynamic client registration (RFC 7591): open or with a single-use 60-minute registration token, metadata
// validation, the response, the operator switch and the rate limit.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createRegistrationToken } from '../src/oauth/registration'
import { testOrigin } from './support/audit'
import { type Harness, harness, ManualClock } from './support/helpers'

test('open registration of a public client answers 201 with every registered field', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const reply = await h.call('POST', '/oauth/register', {
    body: {
      client_name: 'Desktop app',
      redirect_uris: ['http://127.0.0.1/callback', 'com.example.desktop:/oauth'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'threads:read threads:write',
      client_uri: 'https://desktop.example/',
      logo_uri: 'https://desktop.example/logo.png',
      tos_uri: 'https://desktop.example/tos',
      policy_uri: 'https://desktop.example/privacy',
      software_id: 'ignored',
      contacts: ['ignored@example.com'],
      made_up_field: { nested: true },
    },
  })
  expect(reply.status).toBe(201)
  expect(reply.headers.get('cache-control')).toBe('no-store')
  expect(reply.body).toEqual({
    client_id: expect.stringMatching(/^thcl_/),
    client_id_issued_at: Math.floor(clock.now() / 1000),
    client_name: 'Desktop app',
    redirect_uris: ['http://127.0.0.1/callback', 'com.example.desktop:/oauth'],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'threads:read threads:write',
    client_uri: 'https://desktop.example/',
    logo_uri: 'https://desktop.example/logo.png',
    tos_uri: 'https://desktop.example/tos',
    policy_uri: 'https://desktop.example/privacy',
  })
  const stored = await storedClient(h, reply.body.client_id)
  expect(stored).toMatchObject({ origin: 'open_registration', organizationId: null, ownerId: null, secretHash: null })
})

test('confidential clients get a secret once, kept only as a hash; defaults fill the rest', async () => {
  await using h = await harness()
  const reply = await h.call('POST', '/oauth/register', {
    body: { client_name: 'Web app', redirect_uris: ['https://web.example/cb'] },
  })
  expect(reply.status).toBe(201)
  expect(reply.body).toEqual({
    client_id: expect.any(String),
    client_id_issued_at: expect.any(Number),
    client_name: 'Web app',
    redirect_uris: ['https://web.example/cb'],
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'threads:read threads:read:own threads:write',
    client_secret: expect.stringMatching(/^ths_[a-z2-7]{39}$/),
    client_secret_expires_at: 0,
  })
  const stored = await storedClient(h, reply.body.client_id)
  expect(JSON.stringify(stored)).not.toContain(reply.body.client_secret.slice(4))
  expect(stored?.secretHash).toMatch(/^[0-9a-f]{64}$/)
})

test('invalid metadata is refused with invalid_redirect_uri or invalid_client_metadata', async () => {
  await using h = await harness()
  const valid = { client_name: 'App', redirect_uris: ['https://app.example/cb'] }
  const cases: [unknown, string][] = [
    [{ client_name: 'App' }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: [] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: 'https://app.example/cb' }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: [42] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['/relative'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['http://192.168.1.10/cb'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['https://app.example/cb#fragment'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['https://user:pass@app.example/cb'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri'],
    [{ ...valid, redirect_uris: ['com.example.app:/cb'] }, 'invalid_redirect_uri'],
    [
      { ...valid, redirect_uris: ['com.example.app:/cb'], token_endpoint_auth_method: 'client_secret_post' },
      'invalid_redirect_uri',
    ],
    [{ redirect_uris: ['https://app.example/cb'] }, 'invalid_client_metadata'],
    [{ ...valid, client_name: '   ' }, 'invalid_client_metadata'],
    [{ ...valid, client_name: 7 }, 'invalid_client_metadata'],
    [{ ...valid, client_name: 'x'.repeat(101) }, 'invalid_client_metadata'],
    [{ ...valid, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    [{ ...valid, scope: 'threads:read admin' }, 'invalid_client_metadata'],
    [{ ...valid, grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    [{ ...valid, grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
    [{ ...valid, response_types: ['token'] }, 'invalid_client_metadata'],
    [{ ...valid, logo_uri: 'http://app.example/logo.png' }, 'invalid_client_metadata'],
    [{ ...valid, client_uri: 'javascript:alert(1)' }, 'invalid_client_metadata'],
    [{ ...valid, policy_uri: 'not a url' }, 'invalid_client_metadata'],
    [[valid], 'invalid_client_metadata'],
    ['{not json', 'invalid_client_metadata'],
  ]
  for (const [body, error] of cases) {
    const reply = await h.call('POST', '/oauth/register', { body })
    expect({ body, status: reply.status, error: reply.body.error }).toEqual({ body, status: 400, error })
    expect(reply.body.error_description).toEqual(expect.any(String))
  }
  // Private-use schemes are fine for public clients, in the reverse domain form RFC 8252 §7.1 asks for.
  const native = await h.call('POST', '/oauth/register', {
    body: {
      ...valid,
      redirect_uris: ['com.example.app:/cb', 'com.example.app://callback', 'io.github.some-app.dev:/oauth'],
      token_endpoint_auth_method: 'none',
    },
  })
  expect(native.status).toBe(201)
})

test('redirect URIs: private-use schemes only as reverse domain names, dangerous schemes never, ASCII only', async () => {
  await using h = await harness()
  const attempt = async (uri: string, method: 'none' | 'client_secret_basic') => {
    const reply = await h.call('POST', '/oauth/register', {
      body: { client_name: 'App', redirect_uris: [uri], token_endpoint_auth_method: method },
    })
    return reply.status === 201 ? 'accepted' : reply.body.error
  }
  const refused = [
    'view-source:https://app.example/cb',
    'jar:https://app.example/app.jar!/cb',
    'x-javascript:alert(1)',
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'data:text/html,hi',
    'file:///etc/passwd',
    'blob:https://app.example/1',
    'about:blank',
    'myapp:/cb',
    'cursorx://anysphere/oauth',
    'urn:ietf:wg:oauth:2.0:oob',
    'com.:/cb',
    // Not URLs at all, or not ASCII: nothing a Location header could carry as it is.
    'http://127.0.0.1:99999/callback',
    'https://app.example:65536/cb',
    'https://app.example/cb\u0000',
    'https://app.example/c b',
    'https://app.example/😀',
  ]
  for (const uri of refused) {
    for (const method of ['none', 'client_secret_basic'] as const) {
      expect({ uri, method, result: await attempt(uri, method) }).toEqual({
        uri,
        method,
        result: 'invalid_redirect_uri',
      })
    }
  }
  // The assistants' own schemes that predate RFC 8252's advice, so that they connect unaided; public clients only.
  for (const uri of ['cursor://anysphere.cursor-mcp/oauth/callback', 'vscode://vscode.dev/redirect']) {
    expect({ uri, result: await attempt(uri, 'none') }).toEqual({ uri, result: 'accepted' })
    expect({ uri, result: await attempt(uri, 'client_secret_basic') }).toEqual({ uri, result: 'invalid_redirect_uri' })
  }
  // https and the http loopback forms still work for every client.
  for (const uri of ['https://app.example/cb', 'http://127.0.0.1:65535/cb', 'http://localhost/cb', 'http://[::1]/cb']) {
    for (const method of ['none', 'client_secret_basic'] as const) {
      expect({ uri, method, result: await attempt(uri, method) }).toEqual({ uri, method, result: 'accepted' })
    }
  }
})

test('a registration token ties the client to its organization and works once, for 60 minutes', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const clients = h.store.oauthClients
  const member = await h.user({ org: 'acme' })
  const issue = async () =>
    (
      await createRegistrationToken(
        clients,
        { id: member.id, organizationId: await orgOf(h, member.id) },
        clock.now(),
        testOrigin,
      )
    ).token
  const token = await issue()
  expect(token).toMatch(/^thrg_[a-z2-7]{39}$/)
  const body = { client_name: 'Team tool', redirect_uris: ['https://tool.example/cb'] }
  const registerWith = (bearer: string, payload: unknown = body) =>
    h.call('POST', '/oauth/register', { body: payload, headers: { authorization: `Bearer ${bearer}` } })

  // Invalid metadata does not use the token up.
  expect((await registerWith(token, { client_name: 'x' })).status).toBe(400)
  const first = await registerWith(token)
  expect(first.status).toBe(201)
  const stored = await storedClient(h, first.body.client_id)
  expect(stored).toMatchObject({
    origin: 'token_registration',
    organizationId: await orgOf(h, member.id),
    ownerId: member.id,
  })

  const used = await registerWith(token)
  expect(used.status).toBe(401)
  expect(used.body.error).toBe('invalid_token')
  expect(used.headers.get('www-authenticate')).toStartWith('Bearer realm="threadhouse", error="invalid_token"')

  const expiring = await issue()
  clock.advance(60 * 60_000)
  expect((await registerWith(expiring)).status).toBe(401)
  expect((await registerWith('thrg_made_up')).status).toBe(401)
  const malformed = await h.call('POST', '/oauth/register', { body, headers: { authorization: 'Basic abc' } })
  expect(malformed.status).toBe(401)
  expect(JSON.stringify(await h.orm.select().from(h.tables.oauthRegistrationTokens))).not.toContain(token.slice(5))
})

test('with OAUTH_OPEN_REGISTRATION=false only registration tokens work', async () => {
  await using h = await harness({ config: { OAUTH_OPEN_REGISTRATION: false } })
  const member = await h.user()
  const body = { client_name: 'App', redirect_uris: ['https://app.example/cb'] }
  const open = await h.call('POST', '/oauth/register', { body })
  expect(open.status).toBe(401)
  expect(open.body.error).toBe('invalid_token')
  // No token was sent, so the challenge names no error (RFC 6750 §3.1).
  expect(open.headers.get('www-authenticate')).toBe('Bearer realm="threadhouse"')
  const { token } = await createRegistrationToken(
    h.store.oauthClients,
    { id: member.id, organizationId: await orgOf(h, member.id) },
    Date.now(),
    testOrigin,
  )
  const withToken = await h.call('POST', '/oauth/register', { body, headers: { authorization: `Bearer ${token}` } })
  expect(withToken.status).toBe(201)
})

test('registration is rate-limited to 30 requests per address per hour', async () => {
  const clock = new ManualClock()
  // The address comes from the shared resolution, so behind a trusted proxy it is X-Forwarded-For's.
  await using h = await harness({ clock, config: { TRUST_PROXY: true } })
  const body = { client_name: 'App', redirect_uris: ['https://app.example/cb'] }
  const from = (ip: string) => h.call('POST', '/oauth/register', { body, headers: { 'x-forwarded-for': ip } })
  for (let i = 0; i < 30; i++) expect((await from('192.0.2.1')).status).toBe(201)
  const limited = await from('192.0.2.1')
  expect(limited.status).toBe(429)
  expect(limited.body.error).toBe('temporarily_unavailable')
  expect(limited.headers.get('retry-after')).toBe('3600')
  expect((await from('192.0.2.2')).status).toBe(201)
  clock.advance(60 * 60_000)
  expect((await from('192.0.2.1')).status).toBe(201)
})

async function orgOf(h: Harness, userId: number): Promise<number> {
  const { users } = h.tables
  const [user] = await h.orm.select().from(users).where(eq(users.id, userId))
  if (!user) throw new Error('no such user')
  return user.organizationId
}

async function storedClient(h: Harness, clientId: string) {
  const { oauthClients } = h.tables
  return (await h.orm.select().from(oauthClients).where(eq(oauthClients.clientId, clientId)))[0]
}
