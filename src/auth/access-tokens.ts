// OAuth access tokens as the API reads them: the authorization server (src/oauth/) issues and stores them, and the
// bearer resolution (index.ts) turns one into the same Caller a personal access token gives. The resource server's
// half lives here, so that auth, which every API route uses, never imports the authorization server.
import { lastUsedResolutionMs } from '../shared/time'
import { callerOf } from './callers'
import type { ResolvedToken, Role } from './model'

export const accessTokenPrefix = 'tho_'

/** An access token with its grant and the user behind it, as bearer authentication needs it. */
export interface StoredAccessToken {
  scopes: string
  resource: string | null
  expiresAt: number
  revokedAt: number | null
  grantId: number
  grantRevokedAt: number | null
  grantLastUsedAt: number | null
  clientId: number
  userId: number
  removedAt: number | null
  sub: string
  name: string | null
  email: string
  role: Role
  organizationId: number
  organizationSlug: string
}

/** The two reads and writes of oauth's grant storage that resolving an access token needs. */
export interface AccessTokenLookup {
  /** The access token with this hash and who it acts for, whatever its state; the lookup behind every OAuth call. */
  findAccessToken(tokenHash: string): Promise<StoredAccessToken | null>
  /** Records that a grant's token was used just now, on the grant and on its client. */
  markUsed(grantId: number, clientId: number, now: number): Promise<void>
}

/** The caller behind an OAuth access token, or null when it is unknown, expired or revoked (itself or its grant). */
export async function resolveOAuthAccessToken(
  grants: AccessTokenLookup,
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
