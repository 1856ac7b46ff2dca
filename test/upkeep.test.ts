// The expired-row sweep: what can no longer be used is deleted, and nothing that still works or still guards
// against a replay is.
import { expect, test } from 'bun:test'
import { count } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { createRegistrationToken } from '../src/oauth/registration'
import { silentLogger } from '../src/shared/log'
import { startUpkeep, sweepExpired } from '../src/upkeep'
import { testEvent, testOrigin } from './support/audit'
import { type Harness, harness, ManualClock, until } from './support/helpers'
import { approve, postOAuth, publicGrant, register, signedIn } from './support/oauth-helpers'

const minute = 60_000
const day = 24 * 60 * minute

async function rowCounts(h: Harness) {
  const t = h.tables
  const rows = async (table: SQLiteTable) => (await h.orm.select({ n: count() }).from(table))[0]?.n
  return {
    sessions: await rows(t.sessions),
    grants: await rows(t.oauthGrants),
    codes: await rows(t.oauthAuthorizationCodes),
    accessTokens: await rows(t.oauthAccessTokens),
    refreshTokens: await rows(t.oauthRefreshTokens),
    registrationTokens: await rows(t.oauthRegistrationTokens),
    personalAccessTokens: await rows(t.personalAccessTokens),
  }
}

/** A session, a refreshed grant, a revoked grant, an unused code and a registration token, all at once. */
async function everything(h: Harness, clock: ManualClock) {
  const client = await register(h)
  const { browser, user } = await signedIn(h)
  const live = await publicGrant(h, browser, client.client_id)
  const refresh = (refreshToken: string) =>
    postOAuth(h, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: client.client_id,
    })
  const refreshed = await refresh(live.body.refresh_token)
  expect(refreshed.status).toBe(200)
  const revoked = await publicGrant(h, browser, client.client_id)
  const revocation = await postOAuth(h, '/oauth/token/revoke', {
    token: revoked.body.refresh_token,
    client_id: client.client_id,
  })
  expect(revocation.status).toBe(200)
  await approve(browser, { clientId: client.client_id })
  const member = await h.store.users.findByEmail(user.email)
  if (member?.id !== user.id) throw new Error('the signed-in user is missing')
  await createRegistrationToken(h.store.oauthClients, member, clock.now(), testOrigin)
  return { browser, user, live, refreshed, refresh }
}

test('an hour on, the sweep deletes expired tokens and dead grants but keeps what still guards a replay', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const { browser, user, live, refreshed, refresh } = await everything(h, clock)
  expect(await rowCounts(h)).toEqual({
    sessions: 1,
    grants: 2,
    codes: 3,
    accessTokens: 3,
    refreshTokens: 3,
    registrationTokens: 1,
    personalAccessTokens: 1,
  })

  clock.advance(61 * minute)
  await sweepExpired(h.store, clock.now())
  // The live grant keeps both refresh tokens and its used code; the revoked grant took its own rows with it.
  expect(await rowCounts(h)).toEqual({
    sessions: 1,
    grants: 1,
    codes: 1,
    accessTokens: 0,
    refreshTokens: 2,
    registrationTokens: 0,
    personalAccessTokens: 1,
  })
  expect((await browser.get('/settings/api/session')).status).toBe(200)
  expect((await h.call('GET', '/api/v1/me', { token: user.token })).status).toBe(200)

  // The rotated refresh token was kept until its expiry, so presenting it again still revokes the grant.
  const replay = await refresh(live.body.refresh_token)
  expect(replay.body.error).toBe('invalid_grant')
  expect((await refresh(refreshed.body.refresh_token)).body.error).toBe('invalid_grant')
})

test('thirty days on, only the people, their personal access tokens and the clients are left', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  await everything(h, clock)
  clock.advance(30 * day + minute)
  // Started, the upkeep sweeps at once, before its first interval.
  startUpkeep({ store: h.store, blobs: h.blobs, clock, log: silentLogger }).stop()
  const left = {
    sessions: 0,
    grants: 0,
    codes: 0,
    accessTokens: 0,
    refreshTokens: 0,
    registrationTokens: 0,
    personalAccessTokens: 1,
  }
  // The sweep runs unawaited; on PostgreSQL its deletes land a moment after start-up returns.
  await until(async () => Bun.deepEquals(await rowCounts(h), left)).catch(() => undefined)
  expect(await rowCounts(h)).toEqual(left)
})

test('an MCP server’s OAuth authorization left half-way in the browser goes once its ten minutes are over', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const admin = await h.user({ role: 'admin' })
  const [row] = await h.orm.select({ organizationId: h.tables.users.organizationId }).from(h.tables.users)
  const server = {
    id: Bun.randomUUIDv7(),
    organizationId: row?.organizationId as number,
    name: 'docs',
    url: 'https://docs.example.com/mcp',
    auth: 'oauth' as const,
    headersSealed: null,
    headerNames: [],
    trusted: false,
    createdBy: admin.id,
    now: clock.now(),
  }
  await h.store.mcpServers.add(server, () => testEvent('mcp_server.added'))
  const flow = (stateHash: string, startedAt: number) => ({
    stateHash,
    serverId: server.id,
    userId: admin.id,
    codeVerifierSealed: 'v1.sealed',
    discoveryState: null,
    clientInformationSealed: null,
    createdAt: startedAt,
    expiresAt: startedAt + 10 * minute,
  })
  await h.store.mcpServers.startFlow(flow('left', clock.now()))
  await h.store.mcpServers.startFlow(flow('recent', clock.now() + 5 * minute))
  clock.advance(11 * minute)
  await sweepExpired(h.store, clock.now())
  const flows = await h.orm.select({ stateHash: h.tables.mcpOauthFlows.stateHash }).from(h.tables.mcpOauthFlows)
  expect(flows).toEqual([{ stateHash: 'recent' }])
})
