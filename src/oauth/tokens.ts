// Access and refresh tokens: their lifetimes and making a pair for a grant. Resolving an access token to a caller is
// auth's (auth/access-tokens.ts), so every API endpoint accepts both kinds of token.
import { accessTokenPrefix } from '../auth/access-tokens'
import type { Scope } from '../auth/model'
import { generateSecret, hashSecret } from '../shared/security'
import { dayMs } from '../shared/time'
import type { NewTokens } from './grants.repository'

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
