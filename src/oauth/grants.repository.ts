// The storage contract for what the authorization server issues (one of two contracts of this folder;
// clients.repository.ts holds clients): authorization codes, grants (one approval's family of tokens) and the
// access and refresh tokens issued under them. Secrets arrive hashed. Each method is one unit of work, and the
// guarantees the token endpoint relies on (one code exchange wins, refresh reuse revokes the family) live inside
// single methods, so that they hold under concurrency on every backend. Timestamps are epoch ms; scopes are
// space-separated, as they were approved.
import type { StoredAccessToken } from '../auth/access-tokens'
import type { AuditEntry } from '../shared/audit'
import type { ClientOrigin } from './clients.repository'

export interface NewAuthorizationCode {
  codeHash: string
  clientId: number
  userId: number
  /** The redirect URI exactly as the authorization request sent it (port included). */
  redirectUri: string
  scopes: string
  /** PKCE S256 challenge, when the request carried one. */
  codeChallenge: string | null
  /** The resource the authorization request named (a path under PUBLIC_URL), or null for none. */
  resource: string | null
  createdAt: number
  expiresAt: number
}

export interface StoredAuthorizationCode extends Omit<NewAuthorizationCode, 'codeHash' | 'createdAt'> {
  id: number
  usedAt: number | null
  /** The grant its first use created, so that a replay can revoke it. */
  grantId: number | null
}

/** The tokens one request issues under a grant. */
export interface NewTokens {
  access: { tokenHash: string; scopes: string; resource: string | null; expiresAt: number }
  /** Null for clients registered without the refresh_token grant. */
  refresh: { tokenHash: string; expiresAt: number } | null
  /** When the family's newest token expires: the grant's expiry from now on. */
  grantExpiresAt: number
}

export interface CodeRedemption {
  codeId: number
  /** The grant the code's approval becomes: the most any token of its family may carry. */
  grant: { clientId: number; userId: number; scopes: string; resource: string | null }
  tokens: NewTokens
  now: number
}

export interface StoredRefreshToken {
  id: number
  expiresAt: number
  usedAt: number | null
  grantId: number
  /** The client the grant belongs to (its internal id). */
  clientId: number
  scopes: string
  resource: string | null
  revokedAt: number | null
}

export interface RefreshRotation {
  tokenId: number
  grantId: number
  clientId: number
  tokens: NewTokens
  now: number
  /** How long after its first use a rotated token still refreshes. */
  reuseGraceMs: number
}

/** What a rotation did: issued the tokens, or refused because the token was reused or its grant revoked. */
export type RotationResult = 'rotated' | 'reused' | 'revoked'

/** A live grant of one person, with the app it was given to. */
export interface UserGrant {
  clientId: string
  clientName: string
  clientOrigin: ClientOrigin
  scopes: string
  createdAt: number
  lastUsedAt: number | null
}

/** A grant a revocation took back, and whose: what its audit event names. */
export interface RevokedGrant {
  id: number
  userId: number
  organizationId: number
}

/** The audit event of a grant's revocation, recorded in the revocation's own transaction. */
export type GrantAudit = (revoked: RevokedGrant) => AuditEntry

export interface GrantRepository {
  /**
   * Consent: stores a single-use authorization code. With `forOrganization`, the client must belong to that
   * organization: an unclaimed client (openly registered, never approved) is claimed for it first, by a conditional
   * update on the unclaimed client, so the first approval wins even when two organizations approve at once. False,
   * storing nothing, when the client belongs to another organization. The built-in client, which serves every
   * organization, passes null. The consent's event, which `audit` makes knowing whether this approval claimed the
   * client, is recorded with the code.
   */
  createAuthorizationCode(
    code: NewAuthorizationCode,
    forOrganization: number | null,
    audit: (claimed: boolean) => AuditEntry,
  ): Promise<boolean>
  /** The code with this hash, used or not. */
  findAuthorizationCode(codeHash: string): Promise<StoredAuthorizationCode | null>
  /**
   * Exchanges an unused code for a new grant and its first tokens, and marks the client used. Exactly one caller
   * wins: the code is marked used by a conditional update on the unused code. A caller that finds it used (another
   * exchange won meanwhile) gets null, and the grant the winner created is revoked with every token under it, as
   * RFC 6749 §4.1.2 asks of a code presented twice, recording `audit`.
   */
  redeemAuthorizationCode(redemption: CodeRedemption, audit: GrantAudit): Promise<{ grantId: number } | null>
  /** A refresh token with its grant, for the checks the token endpoint makes before rotating it. */
  findRefreshToken(tokenHash: string): Promise<StoredRefreshToken | null>
  /**
   * Rotates a refresh token: marks it used (keeping its first use time, so the grace window never slides), issues
   * the new tokens under its grant, moves the grant's expiry and marks grant and client used. Reuse detection lives
   * here, decided against the token's state at that moment: a token first used more than `reuseGraceMs` ago (one
   * already rotated, presented again) revokes its grant and every token under it and issues nothing (`reused`); a
   * revoked grant issues nothing (`revoked`). Rotations within the grace window all succeed: clients refresh
   * concurrently from one stored token. A revocation for reuse records `audit`.
   */
  rotateRefreshToken(rotation: RefreshRotation, audit: GrantAudit): Promise<RotationResult>
  /**
   * Revokes a grant and with it every access and refresh token issued under it, recording `audit`; revoking twice
   * changes (and records) nothing.
   */
  revokeGrant(grantId: number, now: number, audit: GrantAudit): Promise<void>
  /**
   * RFC 7009: revokes the grant of the refresh token with this hash, if that token was issued to this client,
   * recording `audit` when it was not revoked already.
   */
  revokeRefreshTokenGrant(tokenHash: string, clientId: number, now: number, audit: GrantAudit): Promise<void>
  /**
   * RFC 7009: revokes the access token with this hash (that token only), if it was issued to this client. Not
   * recorded: the grant, which the audit log follows, lives on, and its next refresh issues another.
   */
  revokeAccessToken(tokenHash: string, clientId: number, now: number): Promise<void>
  /** The access token with this hash and who it acts for, whatever its state; the lookup behind every OAuth call. */
  findAccessToken(tokenHash: string): Promise<StoredAccessToken | null>
  /** Records that a grant's token was used just now, on the grant and on its client. */
  markUsed(grantId: number, clientId: number, now: number): Promise<void>
  /** This person's grants that are neither revoked nor expired at `now`, oldest first. */
  listLiveForUser(userId: number, now: number): Promise<UserGrant[]>
  /**
   * Revokes every grant this person gave the client with this client_id; how many it revoked. When it revoked any,
   * the event `audit` makes of their number is recorded with them.
   */
  revokeForUserAndClient(
    userId: number,
    clientId: string,
    now: number,
    audit: (revoked: number) => AuditEntry,
  ): Promise<number>
  /**
   * Deletes what can no longer be used, in one unit of work: revoked and expired grants with everything issued
   * under them, expired unused codes, expired tokens, and spent or expired registration tokens. A token is kept
   * until its own expiry, a used refresh token included, so that presenting it again still revokes its grant; a
   * used code is kept while its grant lives, for the same reason (RFC 6749 §4.1.2).
   */
  deleteExpired(now: number): Promise<void>
}
