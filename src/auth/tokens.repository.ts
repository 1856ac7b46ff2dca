// The storage contract for personal access tokens (one of auth's three contracts, beside users.repository.ts and
// sessions.repository.ts): creating, listing and revoking them, and the lookup behind every API request that
// does not find its token in memory (token-cache.ts; on PostgreSQL, every API request). Tokens are known only by their
// SHA-256 hash.
import type { AuditEntry } from '../shared/audit'
import type { Role, Scope } from './model'

export interface NewPersonalAccessTokenRecord {
  userId: number
  name: string
  tokenHash: string
  scopes: Scope[]
  expiresAt: number | null
}

/** A token as the settings page lists it. */
export interface PersonalAccessTokenRecord {
  id: number
  name: string
  /** Space-separated, as granted. */
  scopes: string
  createdAt: number
  lastUsedAt: number | null
  expiresAt: number | null
}

/** The user and organization columns every kind of bearer token resolves to. */
export interface CallerRow {
  /** Space-separated, as granted. */
  scopes: string
  userId: number
  sub: string
  name: string | null
  email: string
  role: Role
  organizationId: number
  organizationSlug: string
}

/** A token found by its hash, whatever its state, with its user. */
export interface PersonalAccessTokenLookup extends CallerRow {
  tokenId: number
  expiresAt: number | null
  revokedAt: number | null
  lastUsedAt: number | null
  /** When the user was removed from their organization. */
  removedAt: number | null
}

export interface AccessTokenRepository {
  /** Stores the token and, in the same transaction, the event `audit` makes of its ID; answers the ID. */
  create(token: NewPersonalAccessTokenRecord, now: number, audit: (tokenId: number) => AuditEntry): Promise<number>

  /** The user's tokens that are not revoked (expired ones included), newest first. */
  listActive(userId: number): Promise<PersonalAccessTokenRecord[]>

  /**
   * Revokes one of the user's tokens; false when they hold no such unrevoked token. A conditional update: of
   * concurrent revocations exactly one answers true, and only it records `audit`. Resolved tokens are forgotten after a
   * revocation.
   */
  revoke(userId: number, tokenId: number, now: number, audit: AuditEntry): Promise<boolean>

  /**
   * The token with this hash and its user, in whatever state, or null. Runs on every request the cache misses, which
   * on PostgreSQL is every request.
   */
  findByHash(tokenHash: string): Promise<PersonalAccessTokenLookup | null>

  /** Records that the token was used at `now`. */
  markUsed(tokenId: number, now: number): Promise<void>
}
