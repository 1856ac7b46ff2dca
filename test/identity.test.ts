import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { type Actor, changeMemberRole } from '../src/auth/members'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { resolvedTokenLifetimeMs } from '../src/auth/token-cache'
import { testOrigin, tokenHolder } from './support/audit'
import { onPostgres } from './support/backend'
import { harness, ManualClock } from './support/helpers'

test('GET /me returns exactly the documented identity fields, role being owner, admin or member', async () => {
  await using h = await harness()
  for (const role of ['owner', 'member'] as const) {
    const other = await h.user({ org: 'acme', role })
    expect((await h.call('GET', '/api/v1/me', { token: other.token })).body.role).toBe(role)
  }
  const user = await h.user({ org: 'acme', role: 'admin', name: 'Ada' })
  const reply = await h.call('GET', '/api/v1/me', { token: user.token })
  expect(reply.status).toBe(200)
  expect(reply.body).toEqual({
    sub: user.sub,
    name: 'Ada',
    email: user.email,
    svc_user_id: user.id,
    svc_organization_id: expect.any(Number),
    svc_organization_slug: 'acme',
    role: 'admin',
  })
})

test('GET /me needs no scope but does need a valid token', async () => {
  await using h = await harness()
  const user = await h.user({ scopes: ['threads:read:own'] })
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(200)

  const missing = await h.call('GET', '/api/v1/me')
  expect(missing.status).toBe(401)
  expect(missing.body).toEqual({ error: 'unauthorized', message: expect.any(String) })
  expect(missing.headers.get('www-authenticate')).toStartWith('Bearer')

  // The scheme is case-insensitive (RFC 7235 §2.1).
  for (const scheme of ['bearer', 'BEARER']) {
    const headers = { authorization: `${scheme} ${user.token}` }
    expect((await h.call('GET', '/api/v1/me', { headers })).status).toBe(200)
  }

  const wrong = await h.call('GET', '/api/v1/me', { token: 'thp_not-a-real-token' })
  expect(wrong.status).toBe(401)
  expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"')
  expect((await h.call('GET', '/api/v1/me', { token: 'garbage' })).status).toBe(401)
})

test('expired personal access tokens are refused to the millisecond, revoked ones at their next lookup', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const user = await h.user()
  // Sooner than a resolved token's second in memory ends: the token's own expiry still holds to the millisecond.
  const expiring = await createPersonalAccessToken(
    h.store.accessTokens,
    {
      user: await tokenHolder(h.store, user.id),
      name: 'short',
      scopes: ['threads:read'],
      expiresAt: clock.now() + 300,
    },
    clock.now(),
    testOrigin,
  )
  expect((await h.call('GET', '/api/v1/me', { token: expiring })).status).toBe(200)
  clock.advance(299)
  expect((await h.call('GET', '/api/v1/me', { token: expiring })).status).toBe(200)
  clock.advance(1)
  expect((await h.call('GET', '/api/v1/me', { token: expiring })).status).toBe(401)

  await h.orm
    .update(h.tables.personalAccessTokens)
    .set({ revokedAt: clock.now() })
    .where(eq(h.tables.personalAccessTokens.userId, user.id))
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(401)
})

test('tokens are stored only as SHA-256 hashes and record their last use', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const user = await h.user()
  const { personalAccessTokens } = h.tables
  const rows = await h.orm.select().from(personalAccessTokens)
  expect(user.token).toStartWith('thp_')
  expect(JSON.stringify(rows)).not.toContain(user.token.slice(4))
  expect(rows[0]?.tokenHash).toMatch(/^[0-9a-f]{64}$/)
  expect(rows[0]?.lastUsedAt).toBeNull()
  await h.call('GET', '/api/v1/me', { token: user.token })
  expect((await h.orm.select().from(personalAccessTokens))[0]?.lastUsedAt).toBe(clock.now())
})

test('a resolved token is reused for a second at most; the server’s own changes apply to the next request', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const owner = await h.user({ role: 'owner' })
  const user = await h.user({ role: 'member' })
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).body.role).toBe('member')

  // A role changed in the admin pages shows at once, at the same instant.
  const organizationId = (await h.store.users.findByEmail(owner.email))?.organizationId ?? 0
  const actor: Actor = { id: owner.id, role: 'owner', organizationId, organizationSlug: 'default', origin: testOrigin }
  await changeMemberRole(h.store.users, actor, user.sub, 'admin', clock.now())
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).body.role).toBe('admin')

  // A change made by hand in SQL, which the server cannot see coming, reaches it within the second; on PostgreSQL,
  // where no token is kept in memory (another instance may have made the change), at once.
  await h.orm
    .update(h.tables.personalAccessTokens)
    .set({ revokedAt: clock.now() })
    .where(eq(h.tables.personalAccessTokens.userId, user.id))
  clock.advance(resolvedTokenLifetimeMs - 1)
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(onPostgres ? 401 : 200)
  clock.advance(1)
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(401)

  // A clock set back does not stretch the second.
  const other = await h.user()
  expect((await h.call('GET', '/api/v1/me', { token: other.token })).status).toBe(200)
  await h.orm
    .update(h.tables.personalAccessTokens)
    .set({ revokedAt: clock.now() })
    .where(eq(h.tables.personalAccessTokens.userId, other.id))
  clock.advance(-60_000)
  expect((await h.call('GET', '/api/v1/me', { token: other.token })).status).toBe(401)
})
