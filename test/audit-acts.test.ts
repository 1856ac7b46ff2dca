// Every act issue 41 lists leaves its audit event, made the way people make them (the pages, the API, the OAuth
// endpoints, the operator's services), on whichever backend THREADHOUSE_TEST_BACKEND names: who, from where, on what,
// with its detail, and never a secret. A refused act records nothing, and an act whose event cannot be written does
// not happen: both are one transaction.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { StoredEvent } from '../src/audit/chain'
import { resetPassword } from '../src/operations/users'
import { auditEntry, noOrganization, systemOrigin } from '../src/shared/audit'
import { eventsNamed, eventsOf } from './support/audit'
import { type Harness, harness, listening, testPassword } from './support/helpers'
import { approve, Browser, postOAuth, publicGrant, register, settings, signedIn } from './support/oauth-helpers'
import { secretOn, submit } from './support/web-helpers'

async function organizationOf(h: Harness, userId: number): Promise<number> {
  const member = await h.store.users.findMemberById(userId)
  if (!member) throw new Error(`no user ${userId}`)
  return member.organizationId
}

/** The one event of `action` in the organization, checked to be the only one. */
async function only(h: Harness, organizationId: number, action: StoredEvent['action']): Promise<StoredEvent> {
  const events = await eventsNamed(h, organizationId, action as never)
  expect(events.map((event) => event.action)).toEqual([action])
  return events[0] as StoredEvent
}

/** Every stored event's text, for checking that a secret appears nowhere in the log. */
async function everything(h: Harness): Promise<string> {
  return JSON.stringify(await h.orm.select().from(h.tables.auditEvents))
}

/** A signed-in browser's session ID, as its page acts' events name it. */
async function sessionIdOf(h: Harness, userId: number): Promise<string> {
  const { sessions } = h.tables
  const rows = await h.orm.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId))
  return String(rows.at(-1)?.id)
}

test('sign-ins, sign-outs and passwords: who, from where, and nothing of a stranger’s typing', async () => {
  await using h = await harness()
  await using server = listening(h)
  const user = await h.user({ role: 'member' })
  const organizationId = await organizationOf(h, user.id)
  const organizationsBefore = await h.orm.select().from(h.tables.organizations)
  const agent = 'AuditTest/1.0 (=cmd|calc)'
  // A browser whose form posts carry this user agent, over real HTTP, so the server sees a real address.
  const browser = new Browser((request) => fetch(request, { redirect: 'manual' }), server.url.origin, {
    'user-agent': agent,
  })

  // A wrong password for a member: their organization's log, naming them, never the password.
  expect((await browser.signIn(user.email, 'not-the-password-9f3')).status).toBe(401)
  const failed = await only(h, organizationId, 'signin.failed')
  expect(failed).toMatchObject({
    outcome: 'failure',
    actorKind: 'anonymous',
    actorUserId: null,
    address: '127.0.0.1',
    userAgent: agent,
    targetKind: 'user',
    targetId: String(user.id),
  })
  expect(JSON.parse(failed.detail)).toEqual({ method: 'password', reason: 'wrong_password' })

  // An unknown email: the log of no organization, without the email; nothing else is created.
  const stranger = `hunter2-typed-here-${randomBytes(4).toString('hex')}@example.com`
  const unknown = await browser.signIn(stranger, 'whatever-password')
  expect(unknown.status).toBe(401)
  const nobody = await eventsOf(h, noOrganization)
  expect(nobody.map((event) => [event.action, event.targetKind, JSON.parse(event.detail)])).toEqual([
    ['signin.failed', null, { method: 'password', reason: 'unknown_email' }],
  ])
  expect(await everything(h)).not.toContain(stranger)
  expect(await everything(h)).not.toContain('not-the-password')
  expect(await h.orm.select().from(h.tables.organizations)).toEqual(organizationsBefore)

  // A removed member's attempt, even with their old password: their former organization's log, saying so.
  const removed = await h.user({ role: 'member' })
  await h.orm.update(h.tables.users).set({ removedAt: h.clock.now() }).where(eq(h.tables.users.id, removed.id))
  expect((await browser.signIn(removed.email, testPassword)).status).toBe(401)
  const removedEvents = await eventsNamed(h, organizationId, 'signin.failed')
  expect(removedEvents.at(-1)).toMatchObject({ targetKind: 'user', targetId: String(removed.id) })
  expect(JSON.parse(removedEvents.at(-1)?.detail ?? '{}')).toEqual({ method: 'password', reason: 'removed' })
  expect(await eventsOf(h, noOrganization)).toHaveLength(1)

  // The right password: the event names the session it opened, as the session's own acts will.
  expect((await browser.signIn(user.email, testPassword)).status).toBe(303)
  const session = await sessionIdOf(h, user.id)
  const signedInEvent = await only(h, organizationId, 'signin.succeeded')
  expect(signedInEvent).toMatchObject({ actorKind: 'session', actorId: session, actorUserId: user.id })
  expect(JSON.parse(signedInEvent.detail)).toEqual({ method: 'password', session_id: session })

  // A new password ends the other sessions, said in the event; signing out names the session that ended.
  const other = Browser.overHttp(server.url.origin)
  expect((await other.signIn(user.email, testPassword)).status).toBe(303)
  const changed = await submit(browser, '/settings/password', {
    current_password: testPassword,
    new_password: 'a brand new passphrase',
    confirm_password: 'a brand new passphrase',
  })
  expect(changed.status).toBe(303)
  const change = await only(h, organizationId, 'password.changed')
  expect(change).toMatchObject({ actorKind: 'session', actorId: session, targetId: String(user.id) })
  expect(JSON.parse(change.detail)).toEqual({ ended_sessions: 1 })
  expect(await everything(h)).not.toContain('a brand new passphrase')
  expect((await submit(browser, '/logout')).status).toBe(303)
  expect(await only(h, organizationId, 'signout')).toMatchObject({ actorKind: 'session', actorId: session })

  // The operator's reset: by the system, from no address.
  const reset = await resetPassword(h.store.users, user.email, h.clock.now())
  expect(reset).not.toBeNull()
  const resetEvent = await only(h, organizationId, 'password.reset')
  expect(resetEvent).toMatchObject({ actorKind: 'system', actorUserId: null, address: null })
  expect(await everything(h)).not.toContain(reset?.oneTimePassword ?? 'unreachable')
})

test('personal access tokens: created and revoked, by whom; audit:read is for owners and admins', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h, { role: 'member' })
  const organizationId = await organizationOf(h, user.id)
  const session = await sessionIdOf(h, user.id)
  const before = (await eventsOf(h, organizationId)).length

  const created = await submit(browser, '/settings/tokens', {
    name: 'Laptop scripts',
    scope: ['threads:read'],
    expires_in_days: '30',
  })
  expect(created.status).toBe(200)
  const token = secretOn(await created.text(), 'new-token')
  const event = (await eventsNamed(h, organizationId, 'token.created')).at(-1) as StoredEvent
  expect(event).toMatchObject({ actorKind: 'session', actorId: session, targetKind: 'personal_access_token' })
  expect(JSON.parse(event.detail)).toMatchObject({ name: 'Laptop scripts', scopes: ['threads:read'], user_id: user.id })
  expect(await everything(h)).not.toContain(token)

  const revoked = await submit(browser, `/settings/tokens/${event.targetId}/revoke`)
  expect(revoked.status).toBe(303)
  expect(await only(h, organizationId, 'token.revoked')).toMatchObject({ targetId: event.targetId })
  // Revoking it again finds nothing, and records nothing.
  expect((await submit(browser, `/settings/tokens/${event.targetId}/revoke`)).status).toBe(404)
  expect(await eventsNamed(h, organizationId, 'token.revoked')).toHaveLength(1)

  // A member cannot hold audit:read: refused, nothing created or recorded. An admin can.
  const refused = await submit(browser, '/settings/tokens', {
    name: 'peek',
    scope: ['audit:read'],
    expires_in_days: '',
  })
  expect(refused.status).toBe(403)
  expect(await eventsOf(h, organizationId)).toHaveLength(before + 2)
  const admin = await signedIn(h, { role: 'admin' })
  const allowed = await submit(admin.browser, '/settings/tokens', { name: 'siem', scope: ['audit:read'] })
  expect(allowed.status).toBe(200)
})

test('OAuth: registrations, consent, revocations by client and person, secrets and deletions', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h, { role: 'owner' })
  const organizationId = await organizationOf(h, user.id)
  const session = await sessionIdOf(h, user.id)

  // Open registration belongs to no organization yet, made by nobody; the first consent claims it.
  const app = await register(h)
  expect(await only(h, noOrganization, 'oauth.client_registered')).toMatchObject({
    actorKind: 'anonymous',
    targetKind: 'oauth_client',
    targetId: app.client_id,
  })
  const grant = (await publicGrant(h, browser, app.client_id)).body
  const consent = await only(h, organizationId, 'oauth.consent_given')
  expect(consent).toMatchObject({ actorKind: 'session', actorId: session, targetId: app.client_id })
  expect(JSON.parse(consent.detail)).toMatchObject({
    scopes: ['threads:read', 'threads:write'],
    claimed_for_organization: true,
  })

  // The client revokes its refresh token: the grant goes, and the client is who did it.
  const revoked = await postOAuth(h, '/oauth/token/revoke', { token: grant.refresh_token, client_id: app.client_id })
  expect(revoked.status).toBe(200)
  const byClient = await only(h, organizationId, 'oauth.grant_revoked')
  expect(byClient).toMatchObject({ actorKind: 'oauth_client', actorId: app.client_id, targetKind: 'oauth_grant' })
  expect(JSON.parse(byClient.detail)).toMatchObject({ reason: 'client_request', user_id: user.id })

  // A code presented twice revokes the grant its first use made, as a theft signal.
  const redirectUri = 'http://127.0.0.1:53682/callback'
  const { code, verifier } = await approve(browser, { clientId: app.client_id, redirectUri })
  const exchange = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: app.client_id }
  expect((await postOAuth(h, '/oauth/token', { ...exchange, code_verifier: verifier ?? '' })).status).toBe(200)
  expect((await postOAuth(h, '/oauth/token', { ...exchange, code_verifier: verifier ?? '' })).status).toBe(400)
  const reuse = (await eventsNamed(h, organizationId, 'oauth.grant_revoked')).at(-1) as StoredEvent
  expect(JSON.parse(reuse.detail)).toMatchObject({ reason: 'code_reused' })

  // The person disconnects the app: every grant they gave it, in one event.
  await publicGrant(h, browser, app.client_id)
  expect((await settings(browser, 'DELETE', `/connected-apps/${app.client_id}`)).status).toBe(204)
  const disconnected = await only(h, organizationId, 'oauth.app_revoked')
  expect(JSON.parse(disconnected.detail)).toEqual({ grants: 1 })

  // A confidential client made in settings, its secret rotated and the client deleted by an owner.
  const made = await settings(browser, 'POST', '/oauth-clients', {
    client_name: 'Reporting',
    redirect_uris: ['https://reports.example.com/callback'],
  })
  expect(made.status).toBe(201)
  const registered = (await eventsNamed(h, organizationId, 'oauth.client_registered')).at(-1) as StoredEvent
  expect(JSON.parse(registered.detail)).toMatchObject({ client_name: 'Reporting', registered_via: 'settings' })
  const rotated = await submit(browser, `/admin/clients/${made.body.client_id}/secret`)
  expect(rotated.status).toBe(200)
  expect(await only(h, organizationId, 'oauth.client_secret_rotated')).toMatchObject({
    targetId: made.body.client_id,
  })
  const newSecret = secretOn(await rotated.text(), 'rotated-secret')
  expect((await submit(browser, `/admin/clients/${made.body.client_id}/delete`)).status).toBe(303)
  expect(await only(h, organizationId, 'oauth.client_deleted')).toMatchObject({ targetId: made.body.client_id })

  // A registration token, and the client it registers: recorded as the token's doing, in its organization.
  const tokenPage = await submit(browser, '/admin/registration-token')
  const registrationToken = secretOn(await tokenPage.text(), 'registration-token')
  const tokenEvent = await only(h, organizationId, 'oauth.registration_token_created')
  const viaToken = await register(h, { client_name: 'Via token' }, registrationToken)
  const lastRegistered = (await eventsNamed(h, organizationId, 'oauth.client_registered')).at(-1) as StoredEvent
  expect(lastRegistered).toMatchObject({
    actorKind: 'registration_token',
    actorId: tokenEvent.targetId,
    actorUserId: user.id,
    targetId: viaToken.client_id,
  })

  const log = await everything(h)
  for (const secret of [
    grant.refresh_token,
    grant.access_token,
    made.body.client_secret,
    newSecret,
    registrationToken,
  ]) {
    expect(log).not.toContain(secret)
  }
})

test('members: added, re-roled and removed; a refused change records nothing', async () => {
  await using h = await harness()
  const { browser, user: owner } = await signedIn(h, { role: 'owner' })
  const organizationId = await organizationOf(h, owner.id)

  const added = await submit(browser, '/admin/members', {
    email: 'New.Person@example.com',
    name: 'Nia',
    role: 'member',
  })
  expect(added.status).toBe(200)
  const addition = await only(h, organizationId, 'member.added')
  expect(JSON.parse(addition.detail)).toEqual({ email: 'new.person@example.com', role: 'member', restored: false })
  const newcomer = await h.store.users.findByEmail('new.person@example.com')
  expect(addition.targetId).toBe(String(newcomer?.id))
  expect(await everything(h)).not.toContain(secretOn(await added.text(), 'one-time-password'))

  expect((await submit(browser, `/admin/members/${newcomer?.sub}/role`, { role: 'admin' })).status).toBe(303)
  expect(JSON.parse((await only(h, organizationId, 'member.role_changed')).detail)).toEqual({
    from: 'member',
    to: 'admin',
  })
  // The last owner cannot step down: 409, and the log holds no change.
  const refused = await submit(browser, `/admin/members/${owner.sub}/role`, { role: 'member' })
  expect(refused.status).toBe(409)
  expect(await eventsNamed(h, organizationId, 'member.role_changed')).toHaveLength(1)

  expect((await submit(browser, `/admin/members/${newcomer?.sub}/remove`)).status).toBe(303)
  expect(JSON.parse((await only(h, organizationId, 'member.removed')).detail)).toEqual({
    email: 'new.person@example.com',
    role: 'admin',
  })
  // Coming back is an addition again, marked as such.
  expect((await submit(browser, '/admin/members', { email: 'new.person@example.com', role: 'member' })).status).toBe(
    200,
  )
  const back = (await eventsNamed(h, organizationId, 'member.added')).at(-1) as StoredEvent
  expect(JSON.parse(back.detail)).toMatchObject({ restored: true })
})

test('webhooks and MCP servers: added and removed, with their URL’s origin only and never a header’s value', async () => {
  await using h = await harness({
    config: { SECRETS_KEY: randomBytes(32).toString('base64'), WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true },
  })
  const { browser, user } = await signedIn(h, { role: 'admin' })
  const organizationId = await organizationOf(h, user.id)
  const hookPath = '/services/T000/B000/xoxb-secret-path'

  expect((await submit(browser, '/admin/webhooks', { url: `https://hooks.example.com${hookPath}` })).status).toBe(200)
  const hook = await only(h, organizationId, 'webhook.endpoint_added')
  expect(JSON.parse(hook.detail)).toEqual({ url_origin: 'https://hooks.example.com', events: ['*'] })
  expect((await submit(browser, `/admin/webhooks/${hook.targetId}/delete`)).status).toBe(303)
  expect(await only(h, organizationId, 'webhook.endpoint_removed')).toMatchObject({ targetId: hook.targetId })

  const headerValue = 'sk-live-should-never-appear'
  const addedServer = await submit(browser, '/admin/mcp-servers', {
    name: 'docs',
    url: 'https://mcp.example.com/mcp?key=query-secret',
    headers: `Authorization: Bearer ${headerValue}`,
  })
  expect(addedServer.status).toBe(303)
  const server = await only(h, organizationId, 'mcp_server.added')
  expect(JSON.parse(server.detail)).toEqual({
    name: 'docs',
    url_origin: 'https://mcp.example.com',
    auth: 'headers',
    header_names: ['Authorization'],
    trusted: false,
  })
  expect((await submit(browser, `/admin/mcp-servers/${server.targetId}/delete`)).status).toBe(303)
  expect(await only(h, organizationId, 'mcp_server.removed')).toMatchObject({ targetId: server.targetId })

  const log = await everything(h)
  for (const secret of [hookPath, headerValue, 'query-secret']) expect(log).not.toContain(secret)
})

test('settings: threads’ retention, budgets, models and sharing', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h, { role: 'owner' })
  const organizationId = await organizationOf(h, user.id)
  const member = await h.user({ role: 'member' })

  expect((await submit(browser, '/admin/retention', { days: '90' })).status).toBe(303)
  expect(JSON.parse((await only(h, organizationId, 'settings.retention_changed')).detail)).toEqual({ days: 90 })

  expect((await submit(browser, '/admin/quotas', { scope: 'organization', tokens: '1000000', cost: '' })).status).toBe(
    303,
  )
  const memberSub = (await h.store.users.findMemberById(member.id))?.sub ?? ''
  expect(
    (await submit(browser, '/admin/quotas', { scope: 'member', member: memberSub, tokens: '5000', cost: '2.50' }))
      .status,
  ).toBe(303)
  const budgets = await eventsNamed(h, organizationId, 'settings.quota_changed')
  expect(budgets.map((event) => [event.targetKind, event.targetId, JSON.parse(event.detail)])).toEqual([
    [
      'organization',
      String(organizationId),
      { budget: 'organization', removed: false, tokens: 1_000_000, cost_micros: null },
    ],
    ['user', String(member.id), { budget: 'member', removed: false, tokens: 5000, cost_micros: 2_500_000 }],
  ])

  expect((await submit(browser, '/admin/models', { scope: 'all', default: '' })).status).toBe(303)
  expect(JSON.parse((await only(h, organizationId, 'settings.models_changed')).detail)).toEqual({
    allowed: null,
    default_model: null,
  })

  expect((await submit(browser, '/admin/shares', { enabled: 'false' })).status).toBe(303)
  expect(JSON.parse((await only(h, organizationId, 'settings.sharing_changed')).detail)).toEqual({ enabled: false })
})

test('threads: shared, exported, a link revoked and the thread deleted, through the API and the pages', async () => {
  await using h = await harness()
  const owner = await h.user({ role: 'member', scopes: ['threads:read', 'threads:write'] })
  const organizationId = await organizationOf(h, owner.id)
  const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Plans', text: 'Hi' } })
  const threadId = created.body.thread_id as string

  const shared = await h.call('POST', `/api/v1/threads/${threadId}/shares`, { token: owner.token, body: {} })
  expect(shared.status).toBe(201)
  const share = await only(h, organizationId, 'thread.shared')
  expect(share).toMatchObject({ actorKind: 'personal_access_token', actorUserId: owner.id, targetId: threadId })
  expect(JSON.parse(share.detail)).toEqual({ share_id: shared.body.id, include_files: false })
  expect(await everything(h)).not.toContain(new URL(shared.body.url).pathname)

  const exported = await h.call('GET', `/api/v1/threads/${threadId}/export?format=markdown`, { token: owner.token })
  expect(exported.status).toBe(200)
  expect(JSON.parse((await only(h, organizationId, 'thread.exported')).detail)).toEqual({
    format: 'markdown',
    owner_id: owner.id,
  })

  expect(
    (await h.call('DELETE', `/api/v1/threads/${threadId}/shares/${shared.body.id}`, { token: owner.token })).status,
  ).toBe(204)
  expect(await only(h, organizationId, 'thread.share_revoked')).toMatchObject({ targetId: threadId })

  expect((await h.call('DELETE', `/api/v1/threads/${threadId}`, { token: owner.token })).status).toBe(204)
  const deletion = await only(h, organizationId, 'thread.deleted')
  expect(JSON.parse(deletion.detail)).toEqual({ owner_id: owner.id, private: false, reason: 'owner' })
  expect(await everything(h)).not.toContain('Plans')
})

test('an act whose event cannot be written does not happen, and the other way round', async () => {
  await using h = await harness()
  const { browser, user } = await signedIn(h, { role: 'owner' })
  const organizationId = await organizationOf(h, user.id)
  const member = await h.user({ role: 'member' })
  const memberSub = (await h.store.users.findMemberById(member.id))?.sub ?? ''
  const { auditChains, auditEvents, users } = h.tables
  // Someone takes the chain's next place by hand: the next append's insert fails on the (organization, place) key.
  const [head] = await h.orm.select().from(auditChains).where(eq(auditChains.organizationId, organizationId))
  const squatter = auditEntry(systemOrigin, h.clock.now(), { organizationId, action: 'signout', target: null })
  await h.orm.insert(auditEvents).values({
    id: Bun.randomUUIDv7(),
    organizationId,
    seq: (head?.lastSeq ?? 0) + 1,
    at: squatter.at,
    action: squatter.action,
    outcome: 'success',
    actorKind: 'system',
    detail: '{}',
    prevHash: 'x',
    hash: 'y',
  })
  const before = (await eventsOf(h, organizationId)).length

  const refused = await submit(browser, `/admin/members/${memberSub}/role`, { role: 'admin' })
  expect(refused.status).toBe(500)
  const [row] = await h.orm.select({ role: users.role }).from(users).where(eq(users.id, member.id))
  expect(row?.role).toBe('member')
  const token = await submit(browser, '/settings/tokens', { name: 'never', scope: ['threads:read'] })
  expect(token.status).toBe(500)
  expect((await h.store.accessTokens.listActive(user.id)).map((item) => item.name)).not.toContain('never')
  expect(await eventsOf(h, organizationId)).toHaveLength(before)
})
