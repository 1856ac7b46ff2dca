// Access and refresh tokens: their lifetimes, making a pair for a grant, and turning an access token into the
// same Caller a personal access token gives, so every API endpoint accepts both.

import { callerOf } from '../auth/callers'
import type { ResolvedToken, Scope } from '../auth/model'
import { generateSecret, hashSecret } from '../shared/security'
import { dayMs, lastUsedResolutionMs } from '../shared/time'
import type { GrantRepository, NewTokens } from './grants.repository'

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

export interface TokensToIssue {
  /** What this access token may do: the grant's scopes, or fewer when a refresh asked for less. */
  scopes: Scope[]
  /** The only resource that accepts it (RFC 8707: the grant's, or the one a refresh narrowed to), or null for all. */
  resource: string | null
  /** Clients registered without the refresh_token grant get access tokens only. */
  grantTypes: string[]
}

/**
 * A new access token (and a refresh token when the client may refresh): the response for the client, and what to
 * store (hashes only), including the grant's new expiry.
 */
export function newTokens(input: TokensToIssue, now: number): { payload: TokenPayload; tokens: NewTokens } {
  const accessToken = generateSecret(accessTokenPrefix)
  const accessExpiresAt = now + accessTokenLifetimeSeconds * 1000
  const scope = input.scopes.join(' ')
  const payload: TokenPayload = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: accessTokenLifetimeSeconds,
    scope,
  }
  const tokens: NewTokens = {
    access: { tokenHash: hashSecret(accessToken), scopes: scope, resource: input.resource, expiresAt: accessExpiresAt },
    refresh: null,
    grantExpiresAt: accessExpiresAt,
  }
  if (input.grantTypes.includes('refresh_token')) {
    const refreshToken = generateSecret(refreshTokenPrefix)
    tokens.grantExpiresAt = now + refreshTokenLifetimeMs
    tokens.refresh = { tokenHash: hashSecret(refreshToken), expiresAt: tokens.grantExpiresAt }
    payload.refresh_token = refreshToken
  }
  return { payload, tokens }
}

/** The caller behind an OAuth access token, or null when it is unknown, expired or revoked (itself or its grant). */
export async function resolveOAuthAccessToken(
  grants: GrantRepository,
  hash: string,
  now: number,
): Promise<ResolvedToken | null> {
  const row = await grants.findAccessToken(hash)
  if (!row || row.revokedAt !== null || row.grantRevokedAt !== null || row.expiresAt <= now) return null
  if (row.removedAt !== null) return null
  if (row.grantLastUsedAt === null || now - row.grantLastUsedAt >= lastUsedResolutionMs) {
    await grants.markUsed(row.grantId, row.clientId, now)
  }
  const caller = callerOf(row, `grant:${row.grantId}`)
  return { caller: row.resource === null ? caller : { ...caller, audience: row.resource }, expiresAt: row.expiresAt }
}
