// The token endpoint: code exchange bound to client, redirect URI, scope, user and PKCE challenge; single use
// with replay revocation; client authentication methods; refresh rotation with family revocation; scopes;
// lifetimes; and OAuth access tokens on the API.
import { expect, test } from 'bun:test'
import { harness, ManualClock } from './support/helpers'
import { approve, basic, postOAuth, publicGrant, register, signedIn } from './support/oauth-helpers'

const redirectUri = 'http://127.0.0.1:53682/callback'

test('a public client exchanges its code with PKCE for Bearer tokens, never cached', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser, user } = await signedIn(h)
  const reply = await publicGrant(h, browser, client.client_id)
  expect(reply.status).toBe(200)
  expect(reply.body).toEqual({
    access_token: expect.stringMatching(/^tho_[a-z2-7]{39}$/),
    token_type: 'Bearer',
    expires_in: 3600,
    refresh_token: expect.stringMatching(/^thr_[a-z2-7]{39}$/),
    scope: 'threads:read threads:write',
  })
  expect(reply.headers.get('cache-control')).toBe('no-store')
  expect(reply.headers.get('pragma')).toBe('no-cache')
  const me = await h.call('GET', '/api/v1/me', { token: reply.body.access_token })
  expect(me.status).toBe(200)
  expect(me.body.sub).toBe(user.sub)
  // Codes and tokens exist only as hashes.
  const { oauthAccessTokens, oauthAuthorizationCodes, oauthRefreshTokens } = h.tables
  const stored = JSON.stringify([
    await h.orm.select().from(oauthAuthorizationCodes),
    await h.orm.select().from(oauthAccessTokens),
    await h.orm.select().from(oauthRefreshTokens),
  ])
  expect(stored).not.toContain(reply.body.access_token.slice(4))
  expect(stored).not.toContain(reply.body.refresh_token.slice(4))
})

test('a replayed code fails and revokes everything its first use issued', async () => {
  // A fixed clock: the access token, resolved once before the replay, would otherwise be forgotten anyway after
  // a second on a slow machine, and the test would pass without the replay revoking it.
  await using h = await harness({ clock: new ManualClock() })
  const client = await register(h)
  const { browser } = await signedIn(h)
  const { code, verifier } = await approve(browser, { clientId: client.client_id })
  const exchange = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: client.client_id,
    code_verifier: verifier ?? '',
  }
  const first = await postOAuth(h, '/oauth/token', exchange)
  expect(first.status).toBe(200)
  // Used once first, so that the server has it resolved in memory when the replay revokes it.
  expect((await h.call('GET', '/api/v1/me', { token: first.body.access_token })).status).toBe(200)
  const replay = await postOAuth(h, '/oauth/token', exchange)
  expect(replay.status).toBe(400)
  expect(replay.body.error).toBe('invalid_grant')
  expect((await h.call('GET', '/api/v1/me', { token: first.body.access_token })).status).toBe(401)
  const refresh = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: first.body.refresh_token,
    client_id: client.client_id,
  })
  expect(refresh.body.error).toBe('invalid_grant')
})

test('codes expire after 60 seconds', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const client = await register(h)
  const { browser } = await signedIn(h)
  const exchange = async () => {
    const { code, verifier } = await approve(browser, { clientId: client.client_id })
    return (seconds: number) => {
      clock.advance(seconds * 1000)
      return postOAuth(h, '/oauth/token', {
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: client.client_id,
        code_verifier: verifier ?? '',
      })
    }
  }
  expect((await (await exchange())(59)).status).toBe(200)
  const late = await (await exchange())(60)
  expect(late.body).toEqual({ error: 'invalid_grant', error_description: 'The authorization code has expired' })
})

test('codes are bound to their client, redirect URI and PKCE verifier', async () => {
  await using h = await harness()
  const client = await register(h)
  const other = await register(h)
  const { browser } = await signedIn(h)
  const attempt = async (overrides: Record<string, string | undefined>) => {
    const { code, verifier } = await approve(browser, { clientId: client.client_id })
    const fields: Record<string, string> = {}
    const all = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: client.client_id,
      code_verifier: verifier,
      ...overrides,
    }
    for (const [name, value] of Object.entries(all)) if (value !== undefined) fields[name] = value
    return postOAuth(h, '/oauth/token', fields)
  }
  expect((await attempt({ client_id: other.client_id })).body.error).toBe('invalid_grant')
  expect((await attempt({ redirect_uri: 'http://127.0.0.1:1111/callback' })).body.error).toBe('invalid_grant')
  expect((await attempt({ redirect_uri: undefined })).body.error).toBe('invalid_request')
  expect((await attempt({ code_verifier: undefined })).body.error).toBe('invalid_grant')
  expect((await attempt({ code_verifier: 'x'.repeat(43) })).body.error).toBe('invalid_grant')
  expect((await attempt({ code: 'thc_nonsense' })).body.error).toBe('invalid_grant')
  expect((await attempt({})).status).toBe(200)
})

test('the code carries the approved scope and user', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser, user } = await signedIn(h)
  const reply = await publicGrant(h, browser, client.client_id, 'threads:read:own')
  expect(reply.body.scope).toBe('threads:read:own')
  expect((await h.call('GET', '/api/v1/me', { token: reply.body.access_token })).body.email).toBe(user.email)
  expect((await h.call('GET', '/api/v1/threads', { token: reply.body.access_token })).status).toBe(200)
  const write = await h.call('POST', '/api/v1/threads', { token: reply.body.access_token, body: {} })
  expect(write.status).toBe(403)
  expect(write.body.required_scope).toBe('threads:write')
})

test('confidential clients: the secret in a Basic header or the form, PKCE optional but binding when sent', async () => {
  await using h = await harness()
  const basicClient = await register(h, { token_endpoint_auth_method: 'client_secret_basic' })
  const postClient = await register(h, { token_endpoint_auth_method: 'client_secret_post' })
  const { browser } = await signedIn(h)
  const code = async (clientId: string, pkce: 'with' | 'without') =>
    approve(browser, { clientId, withoutPkce: pkce === 'without' ? 'yes' : undefined })

  // client_secret_basic, without PKCE.
  let grant = await code(basicClient.client_id, 'without')
  let reply = await postOAuth(
    h,
    '/oauth/token',
    { grant_type: 'authorization_code', code: grant.code, redirect_uri: redirectUri },
    { authorization: basic(basicClient.client_id, basicClient.client_secret) },
  )
  expect(reply.status).toBe(200)

  // A wrong secret over Basic: 401 with a Basic challenge.
  grant = await code(basicClient.client_id, 'without')
  reply = await postOAuth(
    h,
    '/oauth/token',
    { grant_type: 'authorization_code', code: grant.code, redirect_uri: redirectUri },
    { authorization: basic(basicClient.client_id, 'ths_wrong') },
  )
  expect(reply.status).toBe(401)
  expect(reply.body.error).toBe('invalid_client')
  expect(reply.headers.get('www-authenticate')).toStartWith('Basic realm="threadhouse"')
  expect(reply.headers.get('cache-control')).toBe('no-store')

  // client_secret_post with PKCE: the verifier is then required.
  grant = await code(postClient.client_id, 'with')
  const post = {
    grant_type: 'authorization_code',
    code: grant.code,
    redirect_uri: redirectUri,
    client_id: postClient.client_id,
    client_secret: postClient.client_secret,
  }
  expect((await postOAuth(h, '/oauth/token', post)).body.error).toBe('invalid_grant')
  expect((await postOAuth(h, '/oauth/token', { ...post, code_verifier: grant.verifier ?? '' })).status).toBe(200)

  // A wrong secret in the form: 401 without a Basic challenge.
  grant = await code(postClient.client_id, 'without')
  reply = await postOAuth(h, '/oauth/token', { ...post, code: grant.code, client_secret: 'ths_wrong' })
  expect(reply.status).toBe(401)
  expect(reply.body.error).toBe('invalid_client')
  expect(reply.headers.get('www-authenticate')).toBeNull()

  // A verifier for a code issued without a challenge is a downgrade attempt.
  expect(
    (await postOAuth(h, '/oauth/token', { ...post, code: grant.code, code_verifier: 'v'.repeat(43) })).body.error,
  ).toBe('invalid_grant')

  // Confidential clients must authenticate: client_id alone is not enough.
  grant = await code(postClient.client_id, 'without')
  reply = await postOAuth(h, '/oauth/token', { ...post, code: grant.code, client_secret: '' })
  expect(reply.status).toBe(401)
  // Two methods at once is a malformed request.
  reply = await postOAuth(h, '/oauth/token', post, {
    authorization: basic(postClient.client_id, postClient.client_secret),
  })
  expect(reply.body.error).toBe('invalid_request')
  // The code was never consumed by any of those failures.
  expect((await postOAuth(h, '/oauth/token', { ...post, code: grant.code })).status).toBe(200)
})

test('a client that declared its authentication method must use it; one that took the default may use either', async () => {
  await using h = await harness()
  const basicClient = await register(h, { token_endpoint_auth_method: 'client_secret_basic' })
  const postClient = await register(h, { token_endpoint_auth_method: 'client_secret_post' })
  // The specification's registration: no method named, so client_secret_basic by default (RFC 7591 §2).
  const defaultClient = await register(h, { token_endpoint_auth_method: undefined })
  expect(defaultClient.token_endpoint_auth_method).toBe('client_secret_basic')
  const { browser } = await signedIn(h)
  const exchange = async (
    client: { client_id: string; client_secret: string },
    method: 'client_secret_basic' | 'client_secret_post',
  ) => {
    const { code } = await approve(browser, { clientId: client.client_id, withoutPkce: 'yes' })
    const fields = { grant_type: 'authorization_code', code, redirect_uri: redirectUri }
    const reply =
      method === 'client_secret_basic'
        ? await postOAuth(h, '/oauth/token', fields, { authorization: basic(client.client_id, client.client_secret) })
        : await postOAuth(h, '/oauth/token', {
            ...fields,
            client_id: client.client_id,
            client_secret: client.client_secret,
          })
    return {
      status: reply.status,
      error: reply.body?.error,
      challenge: reply.headers.get('www-authenticate')?.split(' ')[0] ?? null,
    }
  }
  const ok = { status: 200, error: undefined, challenge: null }
  const refused = { status: 401, error: 'invalid_client', challenge: 'Basic' }
  expect(await exchange(basicClient, 'client_secret_basic')).toEqual(ok)
  // The right secret in the form: refused, and the Basic challenge says how to authenticate instead.
  expect(await exchange(basicClient, 'client_secret_post')).toEqual(refused)
  expect(await exchange(postClient, 'client_secret_post')).toEqual(ok)
  // The right secret in a Basic header: refused, with the challenge RFC 6749 §5.2 requires for a Basic attempt.
  expect(await exchange(postClient, 'client_secret_basic')).toEqual(refused)
  // The request shape the specification shows (client_id and client_secret as fields), and Basic, both work.
  expect(await exchange(defaultClient, 'client_secret_post')).toEqual(ok)
  expect(await exchange(defaultClient, 'client_secret_basic')).toEqual(ok)

  // The same rule at the revocation endpoint.
  const revoke = async (client: { client_id: string; client_secret: string }, method: 'basic' | 'form') =>
    (method === 'basic'
      ? await postOAuth(
          h,
          '/oauth/token/revoke',
          { token: 'tho_x' },
          {
            authorization: basic(client.client_id, client.client_secret),
          },
        )
      : await postOAuth(h, '/oauth/token/revoke', {
          token: 'tho_x',
          client_id: client.client_id,
          client_secret: client.client_secret,
        })
    ).status
  expect([await revoke(basicClient, 'basic'), await revoke(basicClient, 'form')]).toEqual([200, 401])
  expect([await revoke(postClient, 'basic'), await revoke(postClient, 'form')]).toEqual([401, 200])
  expect([await revoke(defaultClient, 'basic'), await revoke(defaultClient, 'form')]).toEqual([200, 200])
})

test('token endpoint errors use the RFC 6749 §5.2 codes', async () => {
  await using h = await harness()
  const client = await register(h)
  const codeOnly = await register(h, { grant_types: ['authorization_code'] })
  const { browser } = await signedIn(h)
  const cases: [Record<string, string>, number, string][] = [
    [{ client_id: client.client_id }, 400, 'invalid_request'],
    [{ grant_type: 'password', client_id: client.client_id }, 400, 'unsupported_grant_type'],
    [{ grant_type: 'client_credentials', client_id: client.client_id }, 400, 'unsupported_grant_type'],
    [
      { grant_type: 'authorization_code', client_id: 'thcl_unknown', code: 'x', redirect_uri: redirectUri },
      401,
      'invalid_client',
    ],
    [{ grant_type: 'authorization_code', code: 'x', redirect_uri: redirectUri }, 401, 'invalid_client'],
    // A public client has no secret to send.
    [
      { grant_type: 'authorization_code', client_id: client.client_id, client_secret: 'ths_x', code: 'x' },
      401,
      'invalid_client',
    ],
    [
      { grant_type: 'authorization_code', client_id: client.client_id, redirect_uri: redirectUri },
      400,
      'invalid_request',
    ],
    [{ grant_type: 'refresh_token', client_id: client.client_id }, 400, 'invalid_request'],
    [
      { grant_type: 'refresh_token', client_id: codeOnly.client_id, refresh_token: 'thr_x' },
      400,
      'unauthorized_client',
    ],
  ]
  for (const [fields, status, error] of cases) {
    const reply = await postOAuth(h, '/oauth/token', fields)
    expect({ status: reply.status, error: reply.body.error }).toEqual({ status, error })
    expect(reply.body.error_description).toEqual(expect.any(String))
  }
  const json = await h.call('POST', '/oauth/token', { body: { grant_type: 'authorization_code' } })
  expect(json.body.error).toBe('invalid_request')
  const repeated = await h.app.handle(
    new Request('http://threadhouse.test/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=refresh_token&grant_type=refresh_token&client_id=${client.client_id}`,
    }),
  )
  expect(((await repeated.json()) as { error: string }).error).toBe('invalid_request')
  // A client registered without refresh_token gets no refresh token.
  const codeOnlyTokens = await publicGrant(h, browser, codeOnly.client_id)
  expect(codeOnlyTokens.status).toBe(200)
  expect(codeOnlyTokens.body.refresh_token).toBeUndefined()
})

test('refresh tokens rotate; reusing a rotated one revokes the whole family', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const client = await register(h)
  const { browser } = await signedIn(h)
  const first = (await publicGrant(h, browser, client.client_id)).body
  const refresh = (token: string) =>
    postOAuth(h, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id })
  const second = await refresh(first.refresh_token)
  expect(second.status).toBe(200)
  expect(second.headers.get('cache-control')).toBe('no-store')
  expect(second.body.refresh_token).not.toBe(first.refresh_token)
  expect(second.body.scope).toBe('threads:read threads:write')
  const third = await refresh(second.body.refresh_token)
  expect(third.status).toBe(200)
  // Both older access tokens still work until they expire; rotation does not revoke them.
  expect((await h.call('GET', '/api/v1/me', { token: first.access_token })).status).toBe(200)

  // Concurrent refreshes from one stored token: within a minute of its rotation, the loser is served too,
  // and serving it does not move the minute on.
  clock.advance(50_000)
  const racing = await refresh(second.body.refresh_token)
  expect(racing.status).toBe(200)
  clock.advance(10_001)
  // Reuse of a rotated token after that: theft is assumed, and every token of the family dies at once.
  const reuse = await refresh(second.body.refresh_token)
  expect(reuse.body.error).toBe('invalid_grant')
  for (const token of [first.access_token, second.body.access_token, third.body.access_token]) {
    expect((await h.call('GET', '/api/v1/me', { token })).status).toBe(401)
  }
  expect((await refresh(third.body.refresh_token)).body.error).toBe('invalid_grant')
  expect((await refresh(racing.body.refresh_token)).body.error).toBe('invalid_grant')

  // Another approval is a separate family and is untouched.
  const other = (await publicGrant(h, browser, client.client_id)).body
  expect((await h.call('GET', '/api/v1/me', { token: other.access_token })).status).toBe(200)
})

test('refresh may narrow the scope but never widen it', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser } = await signedIn(h)
  const tokens = (await publicGrant(h, browser, client.client_id, 'threads:read threads:write')).body
  const refresh = (token: string, scope: string) =>
    postOAuth(h, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: token,
      client_id: client.client_id,
      scope,
    })
  const narrow = await refresh(tokens.refresh_token, 'threads:read')
  expect(narrow.body.scope).toBe('threads:read')
  expect((await h.call('POST', '/api/v1/threads', { token: narrow.body.access_token, body: {} })).status).toBe(403)
  const wider = await refresh(narrow.body.refresh_token, 'threads:read threads:read:own')
  expect(wider.status).toBe(400)
  expect(wider.body.error).toBe('invalid_scope')
  // A failed widening does not use up the refresh token, and the original grant can be asked for again.
  const back = await refresh(narrow.body.refresh_token, 'threads:write threads:read')
  expect(back.status).toBe(200)
  expect(back.body.scope).toBe('threads:write threads:read')
  expect((await refresh(back.body.refresh_token, 'nonsense')).body.error).toBe('invalid_scope')
})

test('refresh tokens belong to their client and expire 30 days after issue', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const client = await register(h)
  const other = await register(h)
  const { browser } = await signedIn(h)
  const tokens = (await publicGrant(h, browser, client.client_id)).body
  const stolen = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
    client_id: other.client_id,
  })
  expect(stolen.body.error).toBe('invalid_grant')
  clock.advance(30 * 24 * 60 * 60 * 1000)
  const late = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
    client_id: client.client_id,
  })
  expect(late.body).toEqual({ error: 'invalid_grant', error_description: 'The refresh token has expired' })
})

test('access tokens last 3600 seconds; an expired one is refused at once', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const client = await register(h)
  const { browser } = await signedIn(h)
  const tokens = (await publicGrant(h, browser, client.client_id)).body
  clock.advance(3599_000)
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(200)
  clock.advance(1000)
  const expired = await h.call('GET', '/api/v1/me', { token: tokens.access_token })
  expect(expired.status).toBe(401)
  expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"')
})
