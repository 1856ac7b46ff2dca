// The storage contract for browser sessions (one of auth's three contracts, beside users.repository.ts and
// tokens.repository.ts). Sessions are known only by the SHA-256 hash of their cookie value.
import type { AuditEntry } from '../shared/audit'
import type { Role } from './model'

/** The signed-in person as the web pages see them. */
export interface SessionUser {
  id: number
  /** The session they are signed in with: the audit log names the credential of a page's acts by it. */
  sessionId: number
  sub: string
  email: string
  name: string | null
  role: Role
  organizationId: number
  organizationSlug: string
  /** Signed in with a one-time password: every page but the change-password page sends them there. */
  mustChangePassword: boolean
}

/** A stored session of a person still in their organization, expired or not. */
export interface SessionRecord {
  id: number
  expiresAt: number
  user: SessionUser
}

export interface SessionRepository {
  /** Stores a session and, in the same transaction, the event `audit` makes of its ID (a sign-in); answers the ID. */
  create(
    session: { tokenHash: string; userId: number; expiresAt: number },
    now: number,
    audit: (sessionId: number) => AuditEntry,
  ): Promise<number>

  /** The session with this hash, unless its user was removed from their organization. Runs on every page view. */
  findByHash(tokenHash: string): Promise<SessionRecord | null>

  /** Moves a session's expiry (sliding expiry). */
  extend(sessionId: number, expiresAt: number): Promise<void>

  /** Ends one session; ending one that is gone already is not an error. */
  delete(sessionId: number): Promise<void>

  /** Ends the session with this hash, if any (sign-out), recording `audit` when there was one. */
  deleteByHash(tokenHash: string, audit: AuditEntry): Promise<void>

  /** Deletes every session expired at `now` (the hourly upkeep). */
  deleteExpired(now: number): Promise<void>
}
