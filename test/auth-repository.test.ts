// The guarantees auth's storage contracts promise in their JSDoc (src/auth/*.repository.ts), checked through the
// Store alone, so that every backend can be held to the same file: one email per user, an organization never
// left without an owner, one restoration and one revocation win, removal ends every way in, and every write that
// changes what a token resolves to empties the token cache (SQLite's; PostgreSQL keeps none).
import { expect, test } from 'bun:test'
import type { Role } from '../src/auth/model'
import type { NewUserRecord } from '../src/auth/users.repository'
import type { Store } from '../src/store'
import { testEvent } from './support/audit'
import { harness } from './support/helpers'

const now = 1_750_000_000_000
const day = 24 * 3600_000

function someone(email: string, role: Role, organizationSlug = 'acme'): NewUserRecord {
  return {
    sub: Bun.randomUUIDv7(),
    email,
    name: null,
    role,
    passwordHash: 'hash',
    mustChangePassword: false,
    organizationSlug,
    mayCreateOrganization: true,
  }
}

async function created(store: Store, user: NewUserRecord): Promise<number> {
  const result = await store.users.create(user, now)
  if (typeof result === 'string') throw new Error(`not created: ${result}`)
  return result.id
}

/**
 * A token remembered in the cache, to see which writes forget it; `epoch` is when its lookup began (by default
 * just now). On PostgreSQL there is no cache (auth/token-cache.ts): nothing is ever remembered.
 */
function remembered(store: Store, epoch = store.tokenCache?.epoch ?? 0): () => boolean {
  const cache = store.tokenCache
  if (cache === null) return () => false
  const caller = {
    credential: 'pat:0',
    userId: 0,
    sub: 'sub',
    name: null,
    email: 'cached@example.com',
    role: 'member' as const,
    organizationId: 0,
    organizationSlug: 'acme',
    scopes: new Set([]),
    sees: 'own' as const,
  }
  cache.remember('cached', { caller, expiresAt: null }, now, epoch)
  return () => cache.recall('cached', now) !== null
}

test('emails are unique, even when created at once; a new organization only for a well-formed slug', async () => {
  await using h = await harness()
  const store = h.store
  const results = await Promise.all([
    store.users.create(someone('twin@example.com', 'owner'), now),
    store.users.create(someone('twin@example.com', 'owner'), now),
  ])
  expect(results.filter((result) => result === 'email_taken')).toHaveLength(1)
  const refused = { ...someone('new@example.com', 'owner', 'Not A Slug'), mayCreateOrganization: false }
  expect(await store.users.create(refused, now)).toBe('no_such_organization')
  // An organization that exists is joined whatever its slug looks like.
  expect(
    await store.users.create({ ...someone('colleague@example.com', 'member'), mayCreateOrganization: false }, now),
  ).toMatchObject({ id: expect.any(Number) })
  expect((await store.users.findActiveByEmail('colleague@example.com'))?.organizationId).toBe(
    (await store.users.findActiveByEmail('twin@example.com'))?.organizationId,
  )
})

test('of two owners stepping down at once, one stays owner; the last owner is never removed', async () => {
  await using h = await harness()
  const store = h.store
  const first = await created(store, someone('first@example.com', 'owner'))
  const second = await created(store, someone('second@example.com', 'owner'))
  const org = (await store.users.findActiveByEmail('first@example.com'))?.organizationId ?? 0
  const outcomes = await Promise.all([
    store.users.changeRole(org, first, 'member', () => testEvent('member.role_changed')),
    store.users.changeRole(org, second, 'member', () => testEvent('member.role_changed')),
  ])
  expect(outcomes.sort()).toEqual(['changed', 'last_owner'])
  const owners = (await store.users.listMembers(org)).filter((member) => member.role === 'owner')
  expect(owners).toHaveLength(1)
  const owner = owners[0]?.id ?? 0
  expect(await store.users.remove(org, owner, now, () => testEvent('member.removed'))).toBe('last_owner')
  expect(await store.users.changeRole(org + 1, owner, 'member', () => testEvent('member.role_changed'))).toBe(
    'not_found',
  )
})

test('removal ends sessions and tokens together and forgets resolved tokens; one restoration wins', async () => {
  await using h = await harness()
  const store = h.store
  await created(store, someone('owner@example.com', 'owner'))
  const leaver = await created(store, someone('leaver@example.com', 'member'))
  const org = (await store.users.findActiveByEmail('leaver@example.com'))?.organizationId ?? 0
  await store.sessions.create({ tokenHash: 'session', userId: leaver, expiresAt: now + day }, now, () =>
    testEvent('signin.succeeded'),
  )
  await store.accessTokens.create(
    { userId: leaver, name: 'cli', tokenHash: 'pat', scopes: ['threads:read'], expiresAt: null },
    now,
    () => testEvent('token.created'),
  )
  const cached = remembered(store)

  expect(await store.users.remove(org, leaver, now, () => testEvent('member.removed'))).toBe('removed')
  expect(cached()).toBe(false)
  expect(await store.users.remove(org, leaver, now, () => testEvent('member.removed'))).toBe('not_found')
  expect(await store.sessions.findByHash('session')).toBeNull()
  expect(await store.accessTokens.findByHash('pat')).toMatchObject({ revokedAt: now, removedAt: now })
  expect(await store.users.findActiveByEmail('leaver@example.com')).toBeNull()

  const restoration = { role: 'admin' as const, name: 'Back', passwordHash: 'new hash' }
  const restored = await Promise.all([
    store.users.restore(leaver, restoration, testEvent('member.added')),
    store.users.restore(leaver, restoration, testEvent('member.added')),
  ])
  expect(restored.filter((member) => member !== null)).toEqual([
    expect.objectContaining({ id: leaver, role: 'admin', name: 'Back', mustChangePassword: true }),
  ])
})

test('one revocation wins and forgets resolved tokens; a role change forgets them too', async () => {
  await using h = await harness()
  const store = h.store
  const owner = await created(store, someone('owner@example.com', 'owner'))
  const member = await created(store, someone('member@example.com', 'member'))
  const org = (await store.users.findActiveByEmail('owner@example.com'))?.organizationId ?? 0
  await store.accessTokens.create(
    { userId: member, name: 'laptop', tokenHash: 'pat', scopes: ['threads:read', 'threads:write'], expiresAt: null },
    now,
    () => testEvent('token.created'),
  )
  const [token] = await store.accessTokens.listActive(member)
  expect(token).toMatchObject({ name: 'laptop', scopes: 'threads:read threads:write', lastUsedAt: null })
  const tokenId = token?.id ?? 0
  await store.accessTokens.markUsed(tokenId, now)
  expect(await store.accessTokens.findByHash('pat')).toMatchObject({ tokenId, userId: member, lastUsedAt: now })

  let cached = remembered(store)
  expect(await store.accessTokens.revoke(owner, tokenId, now, testEvent('token.revoked'))).toBe(false)
  expect(cached()).toBe(store.tokenCache !== null)
  const lookupBegan = store.tokenCache?.epoch
  const revocations = await Promise.all([
    store.accessTokens.revoke(member, tokenId, now, testEvent('token.revoked')),
    store.accessTokens.revoke(member, tokenId, now, testEvent('token.revoked')),
  ])
  expect(revocations.sort()).toEqual([false, true])
  expect(cached()).toBe(false)
  // A lookup under way during the revocation is not remembered.
  expect(remembered(store, lookupBegan)()).toBe(false)
  expect(await store.accessTokens.listActive(member)).toEqual([])

  cached = remembered(store)
  expect(await store.users.changeRole(org, member, 'admin', () => testEvent('member.role_changed'))).toBe('changed')
  expect(cached()).toBe(false)
})

test('password changes keep only the session making them; resets end every session; expired ones are swept', async () => {
  await using h = await harness()
  const store = h.store
  const user = await created(store, { ...someone('person@example.com', 'owner'), mustChangePassword: true })
  for (const tokenHash of ['here', 'elsewhere', 'old']) {
    await store.sessions.create(
      { tokenHash, userId: user, expiresAt: tokenHash === 'old' ? now : now + day },
      now,
      () => testEvent('signin.succeeded'),
    )
  }
  await store.sessions.deleteExpired(now)
  expect(await store.sessions.findByHash('old')).toBeNull()

  await store.users.changePassword(user, 'chosen', 'here', () => testEvent('password.changed'))
  expect(await store.users.passwordHashOf(user)).toBe('chosen')
  expect(await store.sessions.findByHash('elsewhere')).toBeNull()
  expect(await store.sessions.findByHash('here')).toMatchObject({
    expiresAt: now + day,
    user: { id: user, email: 'person@example.com', mustChangePassword: false, organizationSlug: 'acme' },
  })

  expect(await store.users.resetPassword(user, 'one-time', () => testEvent('password.reset'))).toBe(1)
  expect(await store.users.findActiveByEmail('person@example.com')).toMatchObject({
    passwordHash: 'one-time',
    mustChangePassword: true,
  })
})
