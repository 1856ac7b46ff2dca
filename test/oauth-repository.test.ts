// The guarantees the OAuth storage contracts promise in their JSDoc (src/oauth/*.repository.ts), checked through
// the Store alone, so that every backend can be held to the same file: one code exchange wins, a rotated refresh
// token presented after the grace window revokes its grant, a registration token registers one client, and the
// first organization to approve an unclaimed client keeps it.
import { expect, test } from 'bun:test'
import type { NewClient } from '../src/oauth/clients.repository'
import type { NewTokens } from '../src/oauth/grants.repository'
import type { Store } from '../src/store'
import { testEvent } from './support/audit'
import { type Harness, harness } from './support/helpers'

const now = 1_750_000_000_000
const minute = 60_000

function clientNamed(name: string, organizationId: number | null): NewClient {
  return {
    clientId: `thcl_${name}`,
    origin: organizationId === null ? 'open_registration' : 'settings',
    organizationId,
    ownerId: null,
    name,
    redirectUris: ['https://app.example/cb'],
    scopes: ['threads:read'],
    grantTypes: ['authorization_code', 'refresh_token'],
    responseTypes: ['code'],
    authMethod: 'none',
    authMethodDeclared: true,
    secretHash: null,
    clientUri: null,
    logoUri: null,
    tosUri: null,
    policyUri: null,
    createdAt: now,
  }
}

function tokens(name: string, at: number): NewTokens {
  return {
    access: { tokenHash: `access-${name}`, scopes: 'threads:read', resource: null, expiresAt: at + 60 * minute },
    refresh: { tokenHash: `refresh-${name}`, expiresAt: at + 30 * 24 * 60 * minute },
    grantExpiresAt: at + 30 * 24 * 60 * minute,
  }
}

async function person(h: Harness, org = 'default'): Promise<{ id: number; organizationId: number }> {
  const { id, email } = await h.user({ org })
  const row = await h.store.users.findByEmail(email)
  if (row?.id !== id) throw new Error('the test user is missing')
  return { id, organizationId: row.organizationId }
}

async function approvedCode(store: Store, clientId: number, userId: number, codeHash: string): Promise<number> {
  const code = {
    codeHash,
    clientId,
    userId,
    redirectUri: 'https://app.example/cb',
    scopes: 'threads:read',
    codeChallenge: null,
    resource: null,
    createdAt: now,
    expiresAt: now + minute,
  }
  expect(await store.oauthGrants.createAuthorizationCode(code, null, () => testEvent('oauth.consent_given'))).toBe(true)
  const stored = await store.oauthGrants.findAuthorizationCode(codeHash)
  if (!stored) throw new Error('the code was not stored')
  return stored.id
}

test('of two exchanges of one code, exactly one wins, and the loser revokes what the winner got', async () => {
  await using h = await harness()
  const store = h.store
  const user = await person(h)
  const client = await store.oauthClients.create(clientNamed('racer', user.organizationId), () =>
    testEvent('oauth.client_registered'),
  )
  const codeId = await approvedCode(store, client.id, user.id, 'code-race')
  const grant = { clientId: client.id, userId: user.id, scopes: 'threads:read', resource: null }
  const results = await Promise.all(
    ['a', 'b'].map((name) =>
      store.oauthGrants.redeemAuthorizationCode({ codeId, grant, tokens: tokens(name, now), now }, () =>
        testEvent('oauth.grant_revoked'),
      ),
    ),
  )
  expect(results.filter((result) => result !== null)).toHaveLength(1)
  const winner = results[0] === null ? 'b' : 'a'
  expect(await store.oauthGrants.findAccessToken(`access-${winner}`)).toMatchObject({ grantRevokedAt: now })
  expect(await store.oauthGrants.findAuthorizationCode('code-race')).toMatchObject({ usedAt: now })
})

test('a refresh token rotates within the grace window, and presented after it revokes its grant', async () => {
  await using h = await harness()
  const store = h.store
  const user = await person(h)
  const client = await store.oauthClients.create(clientNamed('refresher', user.organizationId), () =>
    testEvent('oauth.client_registered'),
  )
  const codeId = await approvedCode(store, client.id, user.id, 'code-refresh')
  const grant = { clientId: client.id, userId: user.id, scopes: 'threads:read', resource: null }
  const redeemed = await store.oauthGrants.redeemAuthorizationCode(
    { codeId, grant, tokens: tokens('first', now), now },
    () => testEvent('oauth.grant_revoked'),
  )
  if (!redeemed) throw new Error('the code was not redeemed')
  const stored = await store.oauthGrants.findRefreshToken('refresh-first')
  if (!stored) throw new Error('the refresh token was not stored')
  const rotate = (name: string, at: number) =>
    store.oauthGrants.rotateRefreshToken(
      {
        tokenId: stored.id,
        grantId: redeemed.grantId,
        clientId: client.id,
        tokens: tokens(name, at),
        now: at,
        reuseGraceMs: minute,
      },
      () => testEvent('oauth.grant_revoked'),
    )

  // One after the other, so that which use is the first is known: on PostgreSQL two at once take turns in either order.
  expect([await rotate('second', now + 1000), await rotate('third', now + 2000)]).toEqual(['rotated', 'rotated'])
  // The first use starts the window; a later one within it does not move it.
  expect(await store.oauthGrants.findRefreshToken('refresh-first')).toMatchObject({ usedAt: now + 1000 })
  expect(await rotate('late', now + 1000 + minute + 1)).toBe('reused')
  expect(await store.oauthGrants.findAccessToken('access-third')).toMatchObject({
    grantRevokedAt: now + 1000 + minute + 1,
  })
  expect(await store.oauthGrants.findRefreshToken('refresh-late')).toBeNull()
  expect(await rotate('after', now + 2 * minute)).toBe('revoked')
})

test('a registration token registers exactly one client, in its issuer’s organization, until it expires', async () => {
  await using h = await harness()
  const store = h.store
  const issuer = await person(h, 'acme')
  const issue = (tokenHash: string) =>
    store.oauthClients.createRegistrationToken(
      {
        tokenHash,
        userId: issuer.id,
        organizationId: issuer.organizationId,
        createdAt: now,
        expiresAt: now + 60 * minute,
      },
      () => testEvent('oauth.registration_token_created'),
    )
  await issue('registration-race')
  expect(await store.oauthClients.registrationTokenUsable('registration-race', now)).toBe(true)
  const registered = await Promise.all(
    ['one', 'two'].map((name) =>
      store.oauthClients.registerWithToken('registration-race', clientNamed(name, null), now, () =>
        testEvent('oauth.client_registered'),
      ),
    ),
  )
  const stored = registered.filter((client) => client !== null)
  expect(stored).toHaveLength(1)
  expect(stored[0]).toMatchObject({ organizationId: issuer.organizationId, ownerId: issuer.id })
  expect(await store.oauthClients.registrationTokenUsable('registration-race', now)).toBe(false)

  await issue('registration-expiring')
  expect(
    await store.oauthClients.registerWithToken(
      'registration-expiring',
      clientNamed('late', null),
      now + 60 * minute,
      () => testEvent('oauth.client_registered'),
    ),
  ).toBeNull()
  expect(await store.oauthClients.findByClientId('thcl_late')).toBeNull()
})

test('the first organization to approve an unclaimed client keeps it', async () => {
  await using h = await harness()
  const store = h.store
  const [first, second] = [await person(h, 'first'), await person(h, 'second')]
  const client = await store.oauthClients.create(clientNamed('unclaimed', null), () =>
    testEvent('oauth.client_registered'),
  )
  const approve = (user: { id: number; organizationId: number }, codeHash: string) =>
    store.oauthGrants.createAuthorizationCode(
      {
        codeHash,
        clientId: client.id,
        userId: user.id,
        redirectUri: 'https://app.example/cb',
        scopes: 'threads:read',
        codeChallenge: null,
        resource: null,
        createdAt: now,
        expiresAt: now + minute,
      },
      user.organizationId,
      () => testEvent('oauth.consent_given'),
    )
  // At once: on PostgreSQL either may take the client first; exactly one does, and only its code is stored.
  const results = await Promise.all([approve(first, 'code-first'), approve(second, 'code-second')])
  expect([...results].sort()).toEqual([false, true])
  const [winner, loser] = results[0] ? ['first', 'second'] : ['second', 'first']
  expect(await store.oauthClients.findByClientId('thcl_unclaimed')).toMatchObject({
    organizationId: (winner === 'first' ? first : second).organizationId,
  })
  expect(await store.oauthGrants.findAuthorizationCode(`code-${winner}`)).not.toBeNull()
  expect(await store.oauthGrants.findAuthorizationCode(`code-${loser}`)).toBeNull()
})
