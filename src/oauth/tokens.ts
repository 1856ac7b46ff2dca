// Access and refresh tokens: their lifetimes, issuing a pair under a grant, and turning an access token into
// the same Caller a personal access token gives, so every API endpoint accepts both.
import { and, eq, isNotNull, isNull, lte, or, sql } from 'drizzle-orm'
import { organizations, users } from '../auth/auth.table'
import { callerOf } from '../auth/callers'
import type { ResolvedToken, Scope } from '../auth/model'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { generateSecret, hashSecret } from '../shared/security'
import { dayMs, lastUsedResolutionMs } from '../shared/time'
import {
  oauthAccessTokens,
  oauthAuthorizationCodes,
  oauthClients,
  oauthGrants,
  oauthRefreshTokens,
  oauthRegistrationTokens,
} from './oauth.table'

export const accessTokenPrefix = 'tho_'
export const refreshTokenPrefix = 'thr_'
export const authorizationCodePrefix = 'thc_'
export const registrationTokenPrefix = 'thrg_'

export const accessTokenLifetimeSeconds = 3600
/** Each refresh issues a new refresh token with a fresh 30 days: an app used monthly stays connected. */
export const refreshTokenLifetimeMs = 30 * dayMs

export interface TokenPayload {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token?: string
  scope: string
}

export interface IssueTokensInput {
  grantId: number
  /** What this access token may do: the grant's scopes, or fewer when a refresh asked for less. */
  scopes: Scope[]
  /** The only resource that accepts it (RFC 8707: the grant's, or the one a refresh narrowed to), or null for all. */
  resource?: string | null
  /** Clients registered without the refresh_token grant get access tokens only. */
  grantTypes: string[]
}

/** Issues an access token (and a refresh token when the client may refresh) and moves the grant's expiry. */
export function issueTokens(db: Db, input: IssueTokensInput, now: number): TokenPayload {
  const accessToken = generateSecret(accessTokenPrefix)
  const accessExpiresAt = now + accessTokenLifetimeSeconds * 1000
  db.insert(oauthAccessTokens)
    .values({
      tokenHash: hashSecret(accessToken),
      grantId: input.grantId,
      scopes: input.scopes.join(' '),
      resource: input.resource ?? null,
      createdAt: now,
      expiresAt: accessExpiresAt,
    })
    .run()
  const payload: TokenPayload = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: accessTokenLifetimeSeconds,
    scope: input.scopes.join(' '),
  }
  let grantExpiresAt = accessExpiresAt
  if (input.grantTypes.includes('refresh_token')) {
    const refreshToken = generateSecret(refreshTokenPrefix)
    grantExpiresAt = now + refreshTokenLifetimeMs
    db.insert(oauthRefreshTokens)
      .values({
        tokenHash: hashSecret(refreshToken),
        grantId: input.grantId,
        createdAt: now,
        expiresAt: grantExpiresAt,
      })
      .run()
    payload.refresh_token = refreshToken
  }
  db.update(oauthGrants).set({ expiresAt: grantExpiresAt }).where(eq(oauthGrants.id, input.grantId)).run()
  return payload
}

/** Revokes a grant, and with it every access and refresh token issued under it. */
export function revokeGrant(db: Db, grantId: number, now: number): void {
  const revoked = db
    .update(oauthGrants)
    .set({ revokedAt: now })
    .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)))
    .returning({ id: oauthGrants.id })
    .get()
  if (revoked) forgetResolvedTokens(db)
}

function prepareLookup(db: Db) {
  return db
    .select({
      scopes: oauthAccessTokens.scopes,
      resource: oauthAccessTokens.resource,
      expiresAt: oauthAccessTokens.expiresAt,
      revokedAt: oauthAccessTokens.revokedAt,
      grantId: oauthGrants.id,
      grantRevokedAt: oauthGrants.revokedAt,
      grantLastUsedAt: oauthGrants.lastUsedAt,
      clientId: oauthGrants.clientId,
      userId: users.id,
      removedAt: users.removedAt,
      sub: users.sub,
      name: users.name,
      email: users.email,
      role: users.role,
      organizationId: users.organizationId,
      organizationSlug: organizations.slug,
    })
    .from(oauthAccessTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(eq(oauthAccessTokens.tokenHash, sql.placeholder('hash')))
    .prepare()
}

/** The caller behind an OAuth access token, or null when it is unknown, expired or revoked (itself or its grant). */
export function resolveOAuthAccessToken(db: Db, hash: string, now: number): ResolvedToken | null {
  // Runs whenever an OAuth token is not in memory (token-cache.ts): prepared once per database.
  const row = prepared(db, 'oauth:lookup', () => prepareLookup(db)).get({ hash })
  if (!row || row.revokedAt !== null || row.grantRevokedAt !== null || row.expiresAt <= now) return null
  if (row.removedAt !== null) return null
  if (row.grantLastUsedAt === null || now - row.grantLastUsedAt >= lastUsedResolutionMs) {
    db.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, row.grantId)).run()
    db.update(oauthClients).set({ lastUsedAt: now }).where(eq(oauthClients.id, row.clientId)).run()
  }
  const caller = callerOf(row, `grant:${row.grantId}`)
  return { caller: row.resource === null ? caller : { ...caller, audience: row.resource }, expiresAt: row.expiresAt }
}

/**
 * Deletes what can no longer be used, so a client that refreshes every hour does not grow the tables forever.
 * As node-oidc-provider's storage does, a token is kept until its own expiry: a used refresh token until then, so
 * that presenting it again still revokes its grant. A used authorization code is kept while its grant lives, for
 * the same reason (RFC 6749 §4.1.2); codes are few, one per approval. A revoked or expired grant goes with
 * everything issued under it.
 */
export function deleteExpiredOAuthRows(db: Db, now: number): void {
  db.transaction((tx) => {
    tx.delete(oauthGrants)
      .where(or(isNotNull(oauthGrants.revokedAt), lte(oauthGrants.expiresAt, now)))
      .run()
    tx.delete(oauthAuthorizationCodes)
      .where(and(isNull(oauthAuthorizationCodes.usedAt), lte(oauthAuthorizationCodes.expiresAt, now)))
      .run()
    tx.delete(oauthAccessTokens).where(lte(oauthAccessTokens.expiresAt, now)).run()
    tx.delete(oauthRefreshTokens).where(lte(oauthRefreshTokens.expiresAt, now)).run()
    tx.delete(oauthRegistrationTokens)
      .where(or(isNotNull(oauthRegistrationTokens.usedAt), lte(oauthRegistrationTokens.expiresAt, now)))
      .run()
  })
}
