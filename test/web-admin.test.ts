// The administration pages through app.handle: only owners and admins get in; OAuth clients (list, detail, logo
// rules, rotation, deletion after confirmation); members (one-time passwords, roles, removal) with every rule.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { harness } from './support/helpers'
import { Browser, basic, postOAuth, publicGrant, register, settings, signedIn } from './support/oauth-helpers'
import {
  expectErrorPageHeaders,
  expectEscaped,
  expectPageHeaders,
  hostile,
  post,
  secretOn,
  submit,
} from './support/web-helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

const adminPages = ['/admin/clients', '/admin/members', '/admin/registration-token', '/admin/retention', '/admin/usage']

test('administration is for owners and admins: visitors sign in first, members get a 403 page', async () => {
  await using h = await harness()
  expect((await Browser.inProcess(h).get('/admin/members')).headers.get('location')).toBe(
    `/login?next=${encodeURIComponent('/admin/members')}`,
  )
  const member = await signedIn(h)
  const client = await register(h)
  const paths = [...adminPages, `/admin/clients/${client.client_id}`, `/admin/clients/${client.client_id}/delete`]
  for (const path of ['/admin', ...paths]) {
    const response = await member.browser.get(path)
    expect(response.status).toBe(403)
    expectErrorPageHeaders(response)
    const html = await response.text()
    expect(html).toContain('Only owners and admins of your organization can open this page.')
    // The navigation offers no Administration link to members.
    expect(html).not.toContain('href="/admin"')
  }
  const posts = [
    '/admin/members',
    '/admin/registration-token',
    '/admin/retention',
    `/admin/clients/${client.client_id}/secret`,
    `/admin/clients/${client.client_id}/delete`,
    `/admin/members/${member.user.sub}/role`,
    `/admin/members/${member.user.sub}/remove`,
  ]
  for (const path of posts) {
    expect((await submit(member.browser, path, { email: 'x@example.com', role: 'owner' })).status).toBe(403)
  }
  const admin = await signedIn(h, { role: 'admin' })
  expect((await admin.browser.get('/admin')).headers.get('location')).toBe('/admin/clients')
  for (const path of adminPages) {
    const response = await admin.browser.get(path)
    expect(response.status).toBe(200)
    expectPageHeaders(response)
    expect(await response.text()).toContain('<a href="/admin">Administration</a>')
  }
  // CSRF and origin checks on every administration form.
  for (const path of posts) {
    expect((await post(admin.browser, path, { role: 'member' })).status).toBe(403)
    const crossSite = await submit(admin.browser, path, { role: 'member' }, { 'sec-fetch-site': 'cross-site' })
    expect(crossSite.status).toBe(403)
  }
  expect((await settings(admin.browser, 'GET', `/oauth-clients/${client.client_id}`)).status).toBe(404)
})

test('clients: list with owner, redirect URIs and last use; detail panel; only https or local logos', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { org: 'acme', role: 'owner', name: `Olga ${hostile}` })
  const member = await signedIn(h, { org: 'acme', name: 'Max' })
  await submit(member.browser, '/settings/clients', {
    client_name: `Internal ${hostile}`,
    redirect_uris: 'https://internal.example/cb?x="><script>window.pwned=1</script>',
  })
  const registrationToken = secretOn(
    await (await submit(admin.browser, '/admin/registration-token')).text(),
    'registration-token',
  )
  const registered = await register(
    h,
    {
      client_name: 'Logo app',
      logo_uri: 'https://cdn.example/logo.png?a=1&b="><script>window.pwned=1</script>',
      client_uri: 'https://app.example/?q="onmouseover="window.pwned=1',
    },
    registrationToken,
  )
  await publicGrant(h, admin.browser, registered.client_id)
  const elsewhere = await register(h, { client_name: 'Globex app' })
  await publicGrant(h, (await signedIn(h, { org: 'globex' })).browser, elsewhere.client_id)

  const list = await admin.browser.get('/admin/clients')
  const html = await list.text()
  expectEscaped(html)
  expect(html).not.toContain('Globex app')
  expect(html).toContain('Internal &lt;script&gt;')
  expect(html).toMatch(/Max \(user\d+@example\.com\)/)
  expect(html).toContain('https://internal.example/cb?x=&quot;&gt;&lt;script&gt;')
  expect(html).toContain('Never used')

  const detail = await admin.browser.get(`/admin/clients/${registered.client_id}`)
  expect(detail.status).toBe(200)
  const panel = await detail.text()
  expectEscaped(panel)
  expect(panel).toContain(`<code>${registered.client_id}</code>`)
  expect(panel).toContain(
    '<img class="logo" src="https://cdn.example/logo.png?a=1&amp;b=%22%3E%3Cscript%3Ewindow.pwned=1%3C/script%3E"',
  )
  expect(panel).toContain(
    'href="https://app.example/?q=%22onmouseover=%22window.pwned=1" rel="noopener noreferrer nofollow"',
  )
  expect(panel).toContain('Registered with a registration token')
  expect(panel).not.toContain('onmouseover="')

  // Whatever is stored, a logo that is not https or from this server is never shown.
  for (const [logo, shown] of [
    ['javascript:alert(1)', null],
    ['data:image/svg+xml,<svg onload=alert(1)>', null],
    ['http://tracker.example/logo.png', null],
    ['/assets/logo.png', '/assets/logo.png'],
    ['http://threadhouse.test/assets/logo.png', '/assets/logo.png'],
  ] as const) {
    await h.orm
      .update(h.tables.oauthClients)
      .set({ logoUri: logo })
      .where(eq(h.tables.oauthClients.clientId, registered.client_id))
    const page = await (await admin.browser.get(`/admin/clients/${registered.client_id}`)).text()
    const img = /<img class="logo" src="([^"]*)"/.exec(page)?.[1] ?? null
    expect(img).toBe(shown)
    expect(page).not.toContain('<svg')
  }
  expect((await admin.browser.get(`/admin/clients/${elsewhere.client_id}`)).status).toBe(404)
  expect((await admin.browser.get('/admin/clients/thcl_nope')).status).toBe(404)
})

test('rotating a confidential secret shows the new one once and fails the old one; public clients have none', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { role: 'admin' })
  const created = await (
    await submit(admin.browser, '/settings/clients', { client_name: 'Svc', redirect_uris: 'https://svc.example/cb' })
  ).text()
  const clientId = /Client ID: <code>(thcl_[a-z0-9]+)<\/code>/.exec(created)?.[1] ?? ''
  const oldSecret = secretOn(created, 'new-client-secret')
  const revokeWith = (secret: string) =>
    postOAuth(h, '/oauth/token/revoke', { token: 'tho_x' }, { authorization: basic(clientId, secret) })
  expect((await revokeWith(oldSecret)).status).toBe(200)

  const rotated = await submit(admin.browser, `/admin/clients/${clientId}/secret`)
  expect(rotated.status).toBe(200)
  const page = await rotated.text()
  const newSecret = secretOn(page, 'rotated-secret')
  expect(newSecret).not.toBe(oldSecret)
  expect((await revokeWith(oldSecret)).status).toBe(401)
  expect((await revokeWith(newSecret)).status).toBe(200)
  expect(await (await admin.browser.get(`/admin/clients/${clientId}`)).text()).not.toContain(newSecret)

  const open = await register(h)
  await publicGrant(h, admin.browser, open.client_id)
  const detail = await (await admin.browser.get(`/admin/clients/${open.client_id}`)).text()
  expect(detail).toContain('Public clients have no secret to rotate.')
  expect(detail).not.toContain('/secret"')
  const refused = await submit(admin.browser, `/admin/clients/${open.client_id}/secret`)
  expect(refused.status).toBe(409)
  expect(await refused.text()).toContain('role="alert">Public clients have no secret to rotate</p>')
})

test('deleting a client goes through a confirmation page, then revokes every token at once', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { role: 'owner' })
  const app = await register(h, { client_name: `Doomed ${hostile}` })
  const tokens = (await publicGrant(h, admin.browser, app.client_id)).body
  const confirm = await admin.browser.get(`/admin/clients/${app.client_id}/delete`)
  expect(confirm.status).toBe(200)
  const page = await confirm.text()
  expectEscaped(page)
  expect(page).toContain(`<form method="post" action="/admin/clients/${app.client_id}/delete">`)
  expect(page).toContain(`<a class="button" href="/admin/clients/${app.client_id}">`)
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(200)

  const deleted = await submit(admin.browser, `/admin/clients/${app.client_id}/delete`)
  expect(deleted.status).toBe(303)
  expect(deleted.headers.get('location')).toBe('/admin/clients?notice=client-deleted')
  expect((await h.call('GET', '/api/v1/me', { token: tokens.access_token })).status).toBe(401)
  expect(await (await admin.browser.get('/admin/clients?notice=client-deleted')).text()).toContain(
    'The client was deleted',
  )
  expect((await submit(admin.browser, `/admin/clients/${app.client_id}/delete`)).status).toBe(404)
})

test('a new member gets a one-time password shown once and must choose their own before anything else', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { role: 'admin' })
  const added = await submit(admin.browser, '/admin/members', {
    email: 'New@Example.com',
    name: hostile,
    role: 'member',
  })
  expect(added.status).toBe(200)
  const page = await added.text()
  expectEscaped(page)
  const oneTime = secretOn(page, 'one-time-password')
  expect(oneTime).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/)
  expect(page).toContain('<code>http://threadhouse.test/login</code>')
  const listing = await (await admin.browser.get('/admin/members')).text()
  expect(listing).not.toContain(oneTime)
  expect(listing).toContain('One-time password')
  expectEscaped(listing)

  const newcomer = Browser.inProcess(h)
  const signIn = await newcomer.signIn('new@example.com', oneTime, '/settings/apps')
  expect(signIn.status).toBe(303)
  expect(signIn.headers.get('location')).toBe(`/settings/password?next=${encodeURIComponent('/settings/apps')}`)
  // Every other page, the consent page and the JSON settings operations wait for the new password.
  for (const path of ['/settings/tokens', '/admin/members', '/oauth/authorize?client_id=x', '/login']) {
    const response = await newcomer.get(path)
    expect(response.status).toBe(303)
    expect(response.headers.get('location')).toBe(`/settings/password?next=${encodeURIComponent(path)}`)
  }
  expect(
    (await submit(newcomer, '/settings/tokens', { name: 'x', scope: 'threads:read' })).headers.get('location'),
  ).toBe('/settings/password')
  expect((await settings(newcomer, 'GET', '/connected-apps')).body.error).toBe('password_change_required')
  const form = await (await newcomer.get('/settings/password?next=/settings/apps')).text()
  expect(form).toContain('Choose your own password')
  expect(form).toContain('<label for="current-password">One-time password</label>')

  const changed = await submit(newcomer, '/settings/password', {
    current_password: oneTime,
    new_password: 'my own password',
    confirm_password: 'my own password',
    next: '/settings/apps',
  })
  expect(changed.status).toBe(303)
  expect(changed.headers.get('location')).toBe('/settings/apps')
  expect((await newcomer.get('/settings/apps')).status).toBe(200)
  expect((await Browser.inProcess(h).signIn('new@example.com', oneTime)).status).toBe(401)
  expect(await (await admin.browser.get('/admin/members')).text()).not.toContain('One-time password')

  const duplicate = await submit(admin.browser, '/admin/members', { email: 'new@example.com', role: 'member' })
  expect(duplicate.status).toBe(409)
  const invalid = await submit(admin.browser, '/admin/members', { email: hostile, role: 'member' })
  expect(invalid.status).toBe(400)
  expectEscaped(await invalid.text())
})

test('roles: admins never make or touch owners, the last owner stays, nobody removes themselves', async () => {
  await using h = await harness()
  const owner = await signedIn(h, { role: 'owner' })
  const admin = await signedIn(h, { role: 'admin' })
  const member = await signedIn(h)
  const role = (who: Browser, sub: string, value: string) => submit(who, `/admin/members/${sub}/role`, { role: value })

  const adminPage = await (await admin.browser.get('/admin/members')).text()
  expect(adminPage).not.toContain('<option value="owner"')
  expect(adminPage).not.toContain(`/admin/members/${owner.user.sub}/role`)
  expect((await role(admin.browser, member.user.sub, 'owner')).status).toBe(403)
  expect((await role(admin.browser, owner.user.sub, 'member')).status).toBe(403)
  expect((await submit(admin.browser, `/admin/members/${owner.user.sub}/remove`)).status).toBe(403)
  expect((await submit(admin.browser, '/admin/members', { email: 'boss@example.com', role: 'owner' })).status).toBe(403)
  const promoted = await role(admin.browser, member.user.sub, 'admin')
  expect(promoted.headers.get('location')).toBe('/admin/members?notice=role-changed')
  expect((await member.browser.get('/admin/members')).status).toBe(200)

  const lastOwner = await role(owner.browser, owner.user.sub, 'admin')
  expect(lastOwner.status).toBe(409)
  expect(await lastOwner.text()).toContain('An organization needs at least one owner')
  expect((await role(owner.browser, admin.user.sub, 'owner')).status).toBe(303)
  expect((await role(owner.browser, owner.user.sub, 'admin')).status).toBe(303)
  expect((await submit(admin.browser, `/admin/members/${admin.user.sub}/remove`)).status).toBe(409)
  expect((await role(owner.browser, admin.user.sub, 'wizard')).status).toBe(400)
  // An admin who steps down leaves administration.
  expect((await role(member.browser, member.user.sub, 'member')).headers.get('location')).toBe('/settings')
  // Other organizations' people are not found.
  const stranger = await signedIn(h, { org: 'globex', role: 'owner' })
  expect((await role(stranger.browser, member.user.sub, 'admin')).status).toBe(404)
  expect((await stranger.browser.get(`/admin/members/${member.user.sub}/remove`)).status).toBe(404)
})

test('removing a member ends their sessions, tokens and grants; their threads stay; re-adding restores them', async () => {
  await using h = await harness()
  const owner = await signedIn(h, { role: 'owner' })
  const leaver = await signedIn(h, { name: hostile })
  const app = await register(h)
  const grant = (await publicGrant(h, leaver.browser, app.client_id)).body
  const publicThread = await h.call('POST', '/api/v1/threads', {
    token: leaver.user.token,
    body: { name: 'Shared notes' },
  })
  expect(publicThread.status).toBe(201)
  const privateThread = await h.call('POST', '/api/v1/threads', {
    token: leaver.user.token,
    body: { name: 'Diary', is_private: true },
  })

  const confirm = await owner.browser.get(`/admin/members/${leaver.user.sub}/remove`)
  const page = await confirm.text()
  expectEscaped(page)
  expect(page).toContain('Their threads stay')
  expect((await h.call('GET', '/api/v1/me', { token: leaver.user.token })).status).toBe(200)
  const removed = await submit(owner.browser, `/admin/members/${leaver.user.sub}/remove`)
  expect(removed.headers.get('location')).toBe('/admin/members?notice=member-removed')

  expect((await leaver.browser.get('/settings/tokens')).status).toBe(303)
  expect((await h.call('GET', '/api/v1/me', { token: leaver.user.token })).status).toBe(401)
  expect((await h.call('GET', '/api/v1/me', { token: grant.access_token })).status).toBe(401)
  const refresh = await postOAuth(h, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: grant.refresh_token,
    client_id: app.client_id,
  })
  expect(refresh.body.error).toBe('invalid_grant')
  expect((await Browser.inProcess(h).signIn(leaver.user.email)).status).toBe(401)
  expect(await (await owner.browser.get('/admin/members')).text()).not.toContain(leaver.user.email)

  const colleague = await h.user()
  const visible = await h.call('GET', '/api/v1/threads', { token: colleague.token })
  expect(
    visible.body.data.map((thread: { id: string; owner: { id: string } }) => [thread.id, thread.owner.id]),
  ).toEqual([[publicThread.body.thread_id, leaver.user.sub]])
  const seen = await h.call('GET', `/api/v1/threads/${privateThread.body.thread_id}`, { token: owner.user.token })
  expect(seen.status).toBe(404)

  const readded = await submit(owner.browser, '/admin/members', { email: leaver.user.email, role: 'member' })
  expect(readded.status).toBe(200)
  const oneTime = secretOn(await readded.text(), 'one-time-password')
  const row = await h.store.users.findByEmail(leaver.user.email)
  expect({ id: row?.id, removedAt: row?.removedAt, mustChangePassword: row?.mustChangePassword }).toEqual({
    id: leaver.user.id,
    removedAt: null,
    mustChangePassword: true,
  })
  expect((await Browser.inProcess(h).signIn(leaver.user.email, oneTime)).status).toBe(303)
  // Old credentials stay dead.
  expect((await h.call('GET', '/api/v1/me', { token: leaver.user.token })).status).toBe(401)
})

test('retention: off by default; admins set whole days from 1 to 3650 or clear the field; members cannot', async () => {
  await using h = await harness()
  const admin = await signedIn(h, { role: 'admin' })
  const page = async () => (await admin.browser.get('/admin/retention')).text()
  expect(await page()).toContain('Threads are kept until someone deletes them.')
  const organizationId = (await h.orm.select().from(h.tables.organizations))[0]?.id as number
  for (const bad of ['0', '3651', '1.5', 'ten', '-3']) {
    const refused = await submit(admin.browser, '/admin/retention', { days: bad })
    expect(refused.status).toBe(400)
    const html = await refused.text()
    expect(html).toContain('Enter a whole number of days from 1 to 3650')
    expect(await h.store.users.retentionOf(organizationId)).toBeNull()
  }
  const saved = await submit(admin.browser, '/admin/retention', { days: ' 90 ' })
  expect({ status: saved.status, location: saved.headers.get('location') }).toEqual({
    status: 303,
    location: '/admin/retention?notice=retention-saved',
  })
  expect(await h.store.users.retentionOf(organizationId)).toBe(90)
  const shown = await page()
  expect(shown).toContain('Threads not updated for 90 days are deleted')
  expect(shown).toContain('value="90"')
  // Another organization's setting is its own.
  const elsewhere = await signedIn(h, { role: 'owner', org: 'elsewhere' })
  expect(await (await elsewhere.browser.get('/admin/retention')).text()).toContain('Threads are kept until')
  expect((await submit(admin.browser, '/admin/retention', { days: '' })).status).toBe(303)
  expect(await h.store.users.retentionOf(organizationId)).toBeNull()
  const member = await signedIn(h)
  expect((await submit(member.browser, '/admin/retention', { days: '1' })).status).toBe(403)
  expect(await h.store.users.retentionOf(organizationId)).toBeNull()
})
