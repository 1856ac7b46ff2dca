// Personal access tokens: the `thp_` secrets people create in their settings (or the operator with the CLI),
// listed and revoked there, and resolved to their caller on API requests the token cache misses (on PostgreSQL, all).
// Creating and revoking one are recorded in the audit log, never the token itself.
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { AppError } from '../shared/errors'
import { generateSecret, hashSecret } from '../shared/security'
import { lastUsedResolutionMs, toIso } from '../shared/time'
import { callerOf } from './callers'
import { isOrganizationAdmin } from './members'
import { adminOnlyScopes, isScope, type ResolvedToken, type Role, type Scope } from './model'
import type { AccessTokenRepository } from './tokens.repository'

export const personalAccessTokenPrefix = 'thp_'

export function parseScopes(value: string): Scope[] {
  const parts = value.split(/\s+/).filter(Boolean)
  const unknown = parts.filter((part) => !isScope(part))
  if (unknown.length > 0) throw new AppError(400, 'invalid_scope', `Unknown scope: ${unknown.join(', ')}`)
  if (parts.length === 0) throw new AppError(400, 'invalid_scope', 'At least one scope is required')
  return [...new Set(parts)] as Scope[]
}

/** Whether someone of `role` may hold a personal access token with `scope`. */
export function mayHoldScope(role: Role, scope: Scope): boolean {
  return isOrganizationAdmin(role) || !adminOnlyScopes.includes(scope)
}

/** The person a token is for, as its creation needs them: who, where, and whether they may hold its scopes. */
export interface TokenHolder {
  id: number
  organizationId: number
  role: Role
}

export interface NewPersonalAccessToken {
  user: TokenHolder
  name: string
  scopes: Scope[]
  expiresAt?: number | null
}

/**
 * Creates a token and returns it; this is the only time the token itself exists outside the caller. A member asking
 * for a scope only owners and admins may hold is refused (403).
 */
export async function createPersonalAccessToken(
  tokens: AccessTokenRepository,
  input: NewPersonalAccessToken,
  now: number,
  origin: AuditOrigin,
): Promise<string> {
  const refused = input.scopes.filter((scope) => !mayHoldScope(input.user.role, scope))
  if (refused.length > 0) {
    throw new AppError(403, 'forbidden', `Only organization owners and admins can hold ${refused.join(', ')}`)
  }
  const token = generateSecret(personalAccessTokenPrefix)
  const expiresAt = input.expiresAt ?? null
  await tokens.create(
    { userId: input.user.id, name: input.name, tokenHash: hashSecret(token), scopes: input.scopes, expiresAt },
    now,
    (tokenId) =>
      auditEntry(origin, now, {
        organizationId: input.user.organizationId,
        action: 'token.created',
        target: target('personal_access_token', tokenId),
        detail: {
          name: input.name,
          scopes: input.scopes,
          expires_at: expiresAt === null ? null : toIso(expiresAt),
          user_id: input.user.id,
        },
      }),
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
  user: { id: number; organizationId: number },
  tokenId: number,
  now: number,
  origin: AuditOrigin,
): Promise<boolean> {
  return tokens.revoke(
    user.id,
    tokenId,
    now,
    auditEntry(origin, now, {
      organizationId: user.organizationId,
      action: 'token.revoked',
      target: target('personal_access_token', tokenId),
    }),
  )
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
