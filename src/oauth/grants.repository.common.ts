// Authorization codes, grants and tokens on either database (grants.repository.ts): the access token's lookup (which
// each database prepares its own way), the shared conditions, and every method that is a single statement or a few
// independent ones. The units of work the token endpoint's guarantees rest on (consent, code exchange, refresh
// rotation, the upkeep's sweep) differ by database and stay in grants.repository.sqlite.ts and grants.repository.pg.ts.
import { and, eq, gt, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import type * as authTables from '../auth/auth.table.pg'
import { type Audits, callerColumns, type TokenChanges, withCaller } from '../auth/tokens.repository.common'
import type { AnyDb } from '../db/dialect'
import type { GrantRepository, RevokedGrant } from './grants.repository'
import type * as oauthTables from './oauth.table.pg'

export type GrantTables = Pick<typeof authTables, 'organizations' | 'users'> & typeof oauthTables

/** What an access token's lookup selects: the token, its grant and the user behind it (StoredAccessToken). */
export function accessTokenFields(t: GrantTables) {
  const { oauthAccessTokens, oauthGrants } = t
  return {
    scopes: oauthAccessTokens.scopes,
    resource: oauthAccessTokens.resource,
    expiresAt: oauthAccessTokens.expiresAt,
    revokedAt: oauthAccessTokens.revokedAt,
    grantId: oauthGrants.id,
    grantRevokedAt: oauthGrants.revokedAt,
    grantLastUsedAt: oauthGrants.lastUsedAt,
    clientId: oauthGrants.clientId,
    ...callerColumns(t),
  }
}

/** The access token whose hash is the `hash` placeholder, with its grant and user, in whatever state. */
export function accessTokenLookup(db: AnyDb, t: GrantTables) {
  const { oauthAccessTokens, oauthGrants } = t
  const query = db
    .select(accessTokenFields(t))
    .from(oauthAccessTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
    .$dynamic()
  return withCaller(query, oauthGrants.userId, oauthAccessTokens.tokenHash, t)
}

/** The grant unless it is revoked already: the condition every revocation updates under, so revoking twice is one. */
export function unrevokedGrant({ oauthGrants }: GrantTables, grantId: number): SQL | undefined {
  return and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt))
}

/** What a revocation returns of a grant for its audit event: the grant, its person and their organization. */
export function revokedGrantColumns({ oauthGrants, users }: GrantTables) {
  return {
    id: oauthGrants.id,
    userId: oauthGrants.userId,
    organizationId: sql<number>`(select ${users.organizationId} from ${users} where ${users.id} = ${oauthGrants.userId})`,
  }
}

/** Revokes the grant unless it is revoked already, returning it for its audit event (none: nothing was revoked). */
export function revokeStatement(tx: AnyDb, t: GrantTables, grantId: number, now: number) {
  return tx
    .update(t.oauthGrants)
    .set({ revokedAt: now })
    .where(unrevokedGrant(t, grantId))
    .returning(revokedGrantColumns(t))
}

/** The code unless it is spent: the condition an exchange spends it under, so exactly one exchange wins. */
export function unusedCode({ oauthAuthorizationCodes }: GrantTables, codeId: number): SQL | undefined {
  return and(eq(oauthAuthorizationCodes.id, codeId), isNull(oauthAuthorizationCodes.usedAt))
}

/**
 * The upkeep's sweep, for the caller's unit of work to run in this order: revoked and expired grants with everything
 * issued under them (which cascades), expired unused codes, expired tokens, spent or expired registration tokens.
 */
export function expiredStatements(tx: Pick<AnyDb, 'delete'>, t: GrantTables, now: number) {
  const { oauthAccessTokens, oauthAuthorizationCodes, oauthGrants, oauthRefreshTokens, oauthRegistrationTokens } = t
  return [
    tx.delete(oauthGrants).where(or(isNotNull(oauthGrants.revokedAt), lte(oauthGrants.expiresAt, now))),
    tx
      .delete(oauthAuthorizationCodes)
      .where(and(isNull(oauthAuthorizationCodes.usedAt), lte(oauthAuthorizationCodes.expiresAt, now))),
    tx.delete(oauthAccessTokens).where(lte(oauthAccessTokens.expiresAt, now)),
    tx.delete(oauthRefreshTokens).where(lte(oauthRefreshTokens.expiresAt, now)),
    tx
      .delete(oauthRegistrationTokens)
      .where(or(isNotNull(oauthRegistrationTokens.usedAt), lte(oauthRegistrationTokens.expiresAt, now))),
  ]
}

/** Every method but the units of work and the access token's lookup, which each database runs its own way. */
export function grantRepository(
  db: AnyDb,
  t: GrantTables,
  { afterTokenChange, audited }: TokenChanges & Audits,
): Omit<
  GrantRepository,
  'createAuthorizationCode' | 'redeemAuthorizationCode' | 'rotateRefreshToken' | 'findAccessToken' | 'deleteExpired'
> {
  const { oauthAccessTokens, oauthAuthorizationCodes, oauthClients, oauthGrants, oauthRefreshTokens } = t

  const revokeGrant: GrantRepository['revokeGrant'] = async (grantId, now, audit) => {
    const revoked = await audited<RevokedGrant>(
      (tx) => [revokeStatement(tx, t, grantId, now)],
      ([grant]) => (grant ? audit(grant) : null),
    )
    if (revoked.length > 0) afterTokenChange?.()
  }

  return {
    async findAuthorizationCode(codeHash) {
      const [row] = await db
        .select({
          id: oauthAuthorizationCodes.id,
          clientId: oauthAuthorizationCodes.clientId,
          userId: oauthAuthorizationCodes.userId,
          redirectUri: oauthAuthorizationCodes.redirectUri,
          scopes: oauthAuthorizationCodes.scopes,
          codeChallenge: oauthAuthorizationCodes.codeChallenge,
          resource: oauthAuthorizationCodes.resource,
          expiresAt: oauthAuthorizationCodes.expiresAt,
          usedAt: oauthAuthorizationCodes.usedAt,
          grantId: oauthAuthorizationCodes.grantId,
        })
        .from(oauthAuthorizationCodes)
        .where(eq(oauthAuthorizationCodes.codeHash, codeHash))
      return row ?? null
    },

    async findRefreshToken(tokenHash) {
      const [row] = await db
        .select({
          id: oauthRefreshTokens.id,
          expiresAt: oauthRefreshTokens.expiresAt,
          usedAt: oauthRefreshTokens.usedAt,
          grantId: oauthGrants.id,
          clientId: oauthGrants.clientId,
          scopes: oauthGrants.scopes,
          resource: oauthGrants.resource,
          revokedAt: oauthGrants.revokedAt,
        })
        .from(oauthRefreshTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
        .where(eq(oauthRefreshTokens.tokenHash, tokenHash))
      return row ?? null
    },

    revokeGrant,

    async revokeRefreshTokenGrant(tokenHash, clientId, now, audit) {
      const [found] = await db
        .select({ grantId: oauthGrants.id, clientId: oauthGrants.clientId })
        .from(oauthRefreshTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
        .where(eq(oauthRefreshTokens.tokenHash, tokenHash))
      if (found?.clientId === clientId) await revokeGrant(found.grantId, now, audit)
    },

    async revokeAccessToken(tokenHash, clientId, now) {
      const [found] = await db
        .select({ id: oauthAccessTokens.id, clientId: oauthGrants.clientId })
        .from(oauthAccessTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
        .where(eq(oauthAccessTokens.tokenHash, tokenHash))
      if (found?.clientId !== clientId) return
      const revoked = await db
        .update(oauthAccessTokens)
        .set({ revokedAt: now })
        .where(and(eq(oauthAccessTokens.id, found.id), isNull(oauthAccessTokens.revokedAt)))
        .returning({ id: oauthAccessTokens.id })
      if (revoked.length > 0) afterTokenChange?.()
    },

    async markUsed(grantId, clientId, now) {
      await db.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, grantId))
      await db.update(oauthClients).set({ lastUsedAt: now }).where(eq(oauthClients.id, clientId))
    },

    async listLiveForUser(userId, now) {
      // The id breaks ties in creation order: PostgreSQL keeps none among equals.
      return db
        .select({
          clientId: oauthClients.clientId,
          clientName: oauthClients.name,
          clientOrigin: oauthClients.origin,
          scopes: oauthGrants.scopes,
          createdAt: oauthGrants.createdAt,
          lastUsedAt: oauthGrants.lastUsedAt,
        })
        .from(oauthGrants)
        .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
        .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt), gt(oauthGrants.expiresAt, now)))
        .orderBy(oauthGrants.createdAt, oauthGrants.id)
    },

    async revokeForUserAndClient(userId, clientId, now, audit) {
      const [client] = await db
        .select({ id: oauthClients.id })
        .from(oauthClients)
        .where(eq(oauthClients.clientId, clientId))
      if (!client) return 0
      const revoked = await audited(
        (tx) => [
          tx
            .update(oauthGrants)
            .set({ revokedAt: now })
            .where(
              and(eq(oauthGrants.clientId, client.id), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)),
            )
            .returning({ id: oauthGrants.id }),
        ],
        (rows) => (rows.length > 0 ? audit(rows.length) : null),
      )
      if (revoked.length > 0) afterTokenChange?.()
      return revoked.length
    },
  }
}
