// The operations behind the settings screens: connected apps for everyone, confidential clients and registration
// tokens for members, and client administration for owners and admins. Session cookie plus CSRF header.
import { expect, test } from 'bun:test'
import { harness } from './support/helpers'
import { approve, Browser, basic, postOAuth, publicGrant, register, settings, signedIn } from './support/oauth-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

test('settings need a session; writes also need the CSRF header and a same-origin request', async () => {
  await using h = await harness()
  const anonymous = Browser.inProcess(h)
  expect((await settings(anonymous, 'GET', '/connected-apps')).status).toBe(401)
  const { browser, user } = await signedIn(h, { org: 'acme', role: 'admin' })
  const session = await settings(browser, 'GET', '/session')
  expect(session.body).toEqual({
    user: { id: user.sub, email: user.email, name: expect.any(String), role: 'admin', organization_slug: 'acme' },
    csrf_token: expect.any(String),
  })
  expect(session.headers.get('cache-control')).toBe('no-store')
  const noCsrf = await browser.request('POST', '/settings/api/registration-tokens')
  expect(noCsrf.status).toBe(403)
  expect(((await noCsrf.json()) as { error: string }).error).toBe('csrf_failed')
  const crossSite = await settings(browser, 'POST', '/registration-tokens', undefined, {
    'sec-fetch-site': 'cross-site',
  })
  expect(crossSite.status).toBe(403)
  // A bearer token is not a session.
  expect((await h.call('GET', '/settings/api/connected-apps', { token: user.token })).status).toBe(401)
})

test('connected apps list each app once with its scopes and last use; revoking kills only my grants', async () => {
  await using h = await harness()
  const app = await register(h, { client_name: 'Notes app' })
  const me = await signedIn(h)
  const colleague = await signedIn(h)
  const read = (await publicGrant(h, me.browser, app.client_id, 'threads:read')).body
  const write = (await publicGrant(h, me.browser, app.client_id, 'threads:write')).body
  const theirs = (await publicGrant(h, colleague.browser, app.client_id)).body
  await h.call('GET', '/api/v1/me', { token: read.access_token })

  const listed = await settings(me.browser, 'GET', '/connected-apps')
  expect(listed.body).toEqual([
    {
      client_id: app.client_id,
      client_name: 'Notes app',
      verified: false,
      scopes: ['threads:read', 'threads:write'],
      connected_at: expect.any(String),
      last_used_at: expect.any(String),
    },
  ])
  expect((await settings(me.browser, 'DELETE', `/connected-apps/${app.client_id}`)).status).toBe(204)
  for (const token of [read.access_token, write.access_token]) {
    expect((await h.call('GET', '/api/v1/me', { token })).status).toBe(401)
  }
  const refresh = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: read.refresh_token,
    client_id: app.client_id,
  })
  expect(refresh.body.error).toBe('invalid_grant')
  expect((await settings(me.browser, 'GET', '/connected-apps')).body).toEqual([])
  expect((await h.call('GET', '/api/v1/me', { token: theirs.access_token })).status).toBe(200)
  expect((await settings(me.browser, 'DELETE', `/connected-apps/${app.client_id}`)).status).toBe(404)
})

test('any member creates confidential clients (secret once) and registration tokens; public clients are refused', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h, { org: 'acme' })
  const created = await settings(browser, 'POST', '/oauth-clients', {
    client_name: 'Team dashboard',
    redirect_uris: ['https://dash.acme.example/oauth/callback'],
    token_endpoint_auth_method: 'client_secret_post',
  })
  expect(created.status).toBe(201)
  // A copy: bun's toMatchObject writes its matchers into the object it checks.
  expect({ ...created.body }).toMatchObject({
    client_id: expect.stringMatching(/^thcl_/),
    client_secret: expect.stringMatching(/^ths_/),
    client_secret_expires_at: 0,
    token_endpoint_auth_method: 'client_secret_post',
  })
  // Verified: no "Not verified" badge on its consent page, and it works end to end.
  const page = await browser.get(
    `/oauth/authorize?response_type=code&client_id=${created.body.client_id}&redirect_uri=${encodeURIComponent('https://dash.acme.example/oauth/callback')}&scope=threads:read`,
  )
  expect(await page.text()).not.toContain('Not verified')
  const { code } = await approve(browser, {
    clientId: created.body.client_id,
    redirectUri: 'https://dash.acme.example/oauth/callback',
    withoutPkce: 'yes',
  })
  const tokens = await postOAuth(h, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: 'https://dash.acme.example/oauth/callback',
    client_id: created.body.client_id,
    client_secret: created.body.client_secret,
  })
  expect(tokens.status).toBe(200)

  const publicClient = await settings(browser, 'POST', '/oauth-clients', {
    client_name: 'CLI',
    redirect_uris: ['http://127.0.0.1/cb'],
    token_endpoint_auth_method: 'none',
  })
  expect(publicClient.status).toBe(400)
  expect(publicClient.body.error).toBe('invalid_client_metadata')
  const badUri = await settings(browser, 'POST', '/oauth-clients', {
    client_name: 'X',
    redirect_uris: ['http://x.example/cb'],
  })
  expect(badUri.body.error).toBe('invalid_redirect_uri')

  const registrationToken = await settings(browser, 'POST', '/registration-tokens')
  expect(registrationToken.status).toBe(201)
  expect(registrationToken.body).toEqual({
    registration_token: expect.stringMatching(/^thrg_/),
    expires_at: expect.any(String),
  })
  await register(h, {}, registrationToken.body.registration_token)
})

test('admins list and view their organization’s clients; members list their own; other organizations are invisible', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { org: 'acme', role: 'admin', name: 'Ada' })
  const member = await signedIn(h, { org: 'acme' })
  const stranger = await signedIn(h, { org: 'globex', role: 'owner' })
  const created = (
    await settings(member.browser, 'POST', '/oauth-clients', {
      client_name: 'Internal',
      redirect_uris: ['https://internal.example/cb'],
    })
  ).body
  const open = await register(h, { client_name: 'Open app' })
  await publicGrant(h, admin.browser, open.client_id)
  await register(h, { client_name: 'Never approved' })

  // A member lists only the clients they created; the detail panel stays with owners and admins.
  const own = await settings(member.browser, 'GET', '/oauth-clients')
  expect(own.body.map((client: { client_id: string }) => client.client_id)).toEqual([created.client_id])
  expect((await settings(member.browser, 'GET', `/oauth-clients/${created.client_id}`)).status).toBe(403)
  const list = await settings(admin.browser, 'GET', '/oauth-clients')
  expect(list.status).toBe(200)
  expect(list.body.map((client: { client_name: string }) => client.client_name).sort()).toEqual([
    'Internal',
    'Open app',
  ])
  const internal = list.body.find((client: { client_id: string }) => client.client_id === created.client_id)
  expect(internal).toEqual({
    client_id: created.client_id,
    client_name: 'Internal',
    owner: { id: member.user.sub, name: expect.any(String), email: member.user.email },
    redirect_uris: ['https://internal.example/cb'],
    token_endpoint_auth_method: 'client_secret_basic',
    verified: true,
    registered_via: 'settings',
    created_at: expect.any(String),
    last_used_at: null,
  })
  const openListed = list.body.find((client: { client_id: string }) => client.client_id === open.client_id)
  expect(openListed).toMatchObject({
    owner: null,
    registered_via: 'open_registration',
    last_used_at: expect.any(String),
  })

  const detail = await settings(admin.browser, 'GET', `/oauth-clients/${created.client_id}`)
  expect(detail.body).toMatchObject({
    client_id: created.client_id,
    scope: 'threads:read threads:read:own threads:write',
    grant_types: ['authorization_code', 'refresh_token'],
    logo_uri: null,
  })
  expect((await settings(stranger.browser, 'GET', `/oauth-clients/${created.client_id}`)).status).toBe(404)
  expect((await settings(stranger.browser, 'GET', '/oauth-clients')).body).toEqual([])
})

test('rotating a secret fails the old one at once and shows the new one once', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { org: 'acme', role: 'owner' })
  const client = (
    await settings(admin.browser, 'POST', '/oauth-clients', {
      client_name: 'Svc',
      redirect_uris: ['https://svc.example/cb'],
    })
  ).body
  const revokeWith = (secret: string) =>
    postOAuth(h, '/oauth/token/revoke', { token: 'tho_x' }, { authorization: basic(client.client_id, secret) })
  expect((await revokeWith(client.client_secret)).status).toBe(200)
  const member = await signedIn(h, { org: 'acme' })
  expect((await settings(member.browser, 'POST', `/oauth-clients/${client.client_id}/secret`)).status).toBe(403)
  const rotated = await settings(admin.browser, 'POST', `/oauth-clients/${client.client_id}/secret`)
  expect(rotated.status).toBe(200)
  expect(rotated.body).toEqual({ client_id: client.client_id, client_secret: expect.stringMatching(/^ths_/) })
  expect((await revokeWith(client.client_secret)).status).toBe(401)
  expect((await revokeWith(rotated.body.client_secret)).status).toBe(200)
  const open = await register(h)
  await publicGrant(h, admin.browser, open.client_id)
  expect((await settings(admin.browser, 'POST', `/oauth-clients/${open.client_id}/secret`)).status).toBe(409)
})

test('deleting a client kills all its tokens at once', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { org: 'acme', role: 'admin' })
  const colleague = await signedIn(h, { org: 'acme' })
  const app = await register(h)
  const mine = (await publicGrant(h, admin.browser, app.client_id)).body
  const theirs = (await publicGrant(h, colleague.browser, app.client_id)).body
  expect((await settings(colleague.browser, 'DELETE', `/oauth-clients/${app.client_id}`)).status).toBe(403)
  expect((await settings(admin.browser, 'DELETE', `/oauth-clients/${app.client_id}`)).status).toBe(204)
  for (const token of [mine.access_token, theirs.access_token]) {
    expect((await h.call('GET', '/api/v1/me', { token })).status).toBe(401)
  }
  const refresh = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: mine.refresh_token,
    client_id: app.client_id,
  })
  expect(refresh.status).toBe(401)
  expect(refresh.body.error).toBe('invalid_client')
  expect((await settings(admin.browser, 'GET', `/oauth-clients/${app.client_id}`)).status).toBe(404)
})
