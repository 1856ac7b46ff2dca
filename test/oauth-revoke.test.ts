// Token revocation (RFC 7009): access or refresh tokens, 200 whatever the token, other clients' tokens kept,
// and client authentication still enforced.
import { expect, test } from 'bun:test'
import { harness } from './support/helpers'
import { approve, basic, postOAuth, publicGrant, register, signedIn } from './support/oauth-helpers'

test('revoking an access token kills that token at once; its refresh token still works', async () => {
  await using h = await harness()
  const client = await register(h)
  const { browser } = await signedIn(h)
  const tokens = (await publicGrant(h, browser, client.client_id)).body
  const reply = await postOAuth(h, '/oauth/token/revoke', {
    token: tokens.access_token,
    token_type_hint: 'access_token',
    client_id: client.client_id,
  })
  expect(reply.status).toBe(200)
  expect(reply.body).toBeNull()
  expect(reply.headers.get('cache-control')).toBe('no-store')
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(401)
  const refreshed = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
    client_id: client.client_id,
  })
  expect(refreshed.status).toBe(200)
})

test('revoking a refresh token also kills the access tokens of its authorization', async () => {
  await using h = await harness()
  const client = await register(h, { token_endpoint_auth_method: 'client_secret_basic' })
  const { browser } = await signedIn(h)
  const { code } = await approve(browser, { clientId: client.client_id, withoutPkce: 'yes' })
  const auth = { authorization: basic(client.client_id, client.client_secret) }
  const tokens = (
    await postOAuth(
      h,
      '/oauth/token',
      { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:53682/callback' },
      auth,
    )
  ).body
  // The hint is only a hint: a wrong one changes nothing.
  const reply = await postOAuth(
    h,
    '/oauth/token/revoke',
    { token: tokens.refresh_token, token_type_hint: 'access_token' },
    auth,
  )
  expect(reply.status).toBe(200)
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(401)
  const refreshed = await postOAuth(
    h,
    '/oauth/token',
    { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
    auth,
  )
  expect(refreshed.body.error).toBe('invalid_grant')
})

test('unknown, already revoked and other clients’ tokens all get 200; the other client keeps its token', async () => {
  await using h = await harness()
  const mine = await register(h)
  const theirs = await register(h)
  const { browser } = await signedIn(h)
  const myTokens = (await publicGrant(h, browser, mine.client_id)).body
  const theirTokens = (await publicGrant(h, browser, theirs.client_id)).body
  for (const token of ['tho_unknown', 'thr_unknown', 'garbage', theirTokens.access_token, theirTokens.refresh_token]) {
    expect((await postOAuth(h, '/oauth/token/revoke', { token, client_id: mine.client_id })).status).toBe(200)
  }
  expect((await h.call('GET', '/api/v1/me', { token: theirTokens.access_token })).status).toBe(200)
  const revoke = () => postOAuth(h, '/oauth/token/revoke', { token: myTokens.refresh_token, client_id: mine.client_id })
  expect((await revoke()).status).toBe(200)
  expect((await revoke()).status).toBe(200)
})

test('failed client authentication is still 401 invalid_client; a missing token is invalid_request', async () => {
  await using h = await harness()
  const confidential = await register(h, { token_endpoint_auth_method: 'client_secret_basic' })
  const wrong = await postOAuth(
    h,
    '/oauth/token/revoke',
    { token: 'tho_x' },
    { authorization: basic(confidential.client_id, 'ths_wrong') },
  )
  expect(wrong.status).toBe(401)
  expect(wrong.body.error).toBe('invalid_client')
  expect(wrong.headers.get('www-authenticate')).toStartWith('Basic')
  expect((await postOAuth(h, '/oauth/token/revoke', { token: 'tho_x' })).status).toBe(401)
  const unknown = await postOAuth(h, '/oauth/token/revoke', { token: 'tho_x', client_id: 'thcl_unknown' })
  expect(unknown.status).toBe(401)
  const missing = await postOAuth(
    h,
    '/oauth/token/revoke',
    {},
    { authorization: basic(confidential.client_id, confidential.client_secret) },
  )
  expect(missing.status).toBe(400)
  expect(missing.body.error).toBe('invalid_request')
  // The fields the specification shows work for a client that took the default method, not for one that declared
  // client_secret_basic.
  const inForm = { token: 'tho_x', client_id: confidential.client_id, client_secret: confidential.client_secret }
  expect((await postOAuth(h, '/oauth/token/revoke', inForm)).status).toBe(401)
  const byDefault = await register(h, { token_endpoint_auth_method: undefined })
  const defaultForm = { token: 'tho_x', client_id: byDefault.client_id, client_secret: byDefault.client_secret }
  expect((await postOAuth(h, '/oauth/token/revoke', defaultForm)).status).toBe(200)
})
