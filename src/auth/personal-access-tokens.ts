// Personal access tokens: the `thp_` secrets people create in their settings (or the operator with the CLI),
// listed and revoked there, and resolved to their caller on API requests the token cache misses (on PostgreSQL, all).
import { AppError } from '../shared/errors'
import { generateSecret, hashSecret } from '../shared/security'
import { lastUsedResolutionMs } from '../shared/time'
import { callerOf } from './callers'
import { isScope, type ResolvedToken, type Scope } from './model'
import type { AccessTokenRepository } from './tokens.repository'

export const personalAccessTokenPrefix = 'thp_'

export function parseScopes(value: string): Scope[] {
  const parts = value.split(/\s+/).filter(Boolean)
  const unknown = parts.filter((part) => !isScope(part))
  if (unknown.length > 0) throw new AppError(400, 'invalid_scope', `Unknown scope: ${unknown.join(', ')}`)
  if (parts.length === 0) throw new AppError(400, 'invalid_scope', 'At least one scope is required')
  return [...new Set(parts)] as Scope[]
}

export interface NewPersonalAccessToken {
  userId: number
  name: string
  scopes: Scope[]
  expiresAt?: number | null
}

/** Creates a token and returns it; this is the only time the token itself exists outside the caller. */
export async function createPersonalAccessToken(
  tokens: AccessTokenRepository,
  input: NewPersonalAccessToken,
  now: number,
): Promise<string> {
  const token = generateSecret(personalAccessTokenPrefix)
  await tokens.create(
    {
      userId: input.userId,
      name: input.name,
      tokenHash: hashSecret(token),
      scopes: input.scopes,
      expiresAt: input.expiresAt ?? null,
    },
    now,
  )
  return token
}

/** A personal access token as the settings page lists it; the token itself is never stored. */
export interface PersonalAccessTokenSummary {
  id: number
  name: string
  scopes: Scope[]
  createdAt: number
  lastUsedAt: number | null
  expiresAt: number | null
}

/** The person's tokens that are not revoked, newest first; expired ones stay listed until revoked. */
export async function listPersonalAccessTokens(
  tokens: AccessTokenRepository,
  userId: number,
): Promise<PersonalAccessTokenSummary[]> {
  const rows = await tokens.listActive(userId)
  return rows.map((row) => ({ ...row, scopes: row.scopes.split(' ').filter(isScope) }))
}

/** Revokes one of the person's own tokens; false when they hold no such token (someone else's, or revoked). */
export function revokePersonalAccessToken(
  tokens: AccessTokenRepository,
  userId: number,
  tokenId: number,
  now: number,
): Promise<boolean> {
  return tokens.revoke(userId, tokenId, now)
}

/**
 * The caller behind a personal access token, given the token's hash (`hashSecret`), or null when it is unknown,
 * revoked or expired.
 */
export async function resolvePersonalAccessToken(
  tokens: AccessTokenRepository,
  hash: string,
  now: number,
): Promise<ResolvedToken | null> {
  const row = await tokens.findByHash(hash)
  if (!row || row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now)) return null
  // Removal revokes every token already; this also covers one made afterwards by hand.
  if (row.removedAt !== null) return null
  if (row.lastUsedAt === null || now - row.lastUsedAt >= lastUsedResolutionMs) await tokens.markUsed(row.tokenId, now)
  return { caller: callerOf(row, `pat:${row.tokenId}`), expiresAt: row.expiresAt }
}
