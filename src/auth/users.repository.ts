// The storage contract for people and their organizations (one of auth's three contracts, beside
// tokens.repository.ts and sessions.repository.ts): creating users, finding them, members' roles and removal,
// passwords. Plain data in and out; the rules about who may do what live in users.ts, members.ts and passwords.ts.
import type { AuditEntry } from '../shared/audit'
import type { Role } from './model'

/** A user as stored, removed or not. Timestamps are epoch milliseconds. */
export interface UserRecord {
  id: number
  sub: string
  organizationId: number
  /** Lower-cased. */
  email: string
  name: string | null
  role: Role
  passwordHash: string
  mustChangePassword: boolean
  createdAt: number
  removedAt: number | null
}

/** A current member of an organization as the administration pages show them. */
export interface Member {
  id: number
  sub: string
  organizationId: number
  email: string
  name: string | null
  role: Role
  createdAt: number
  /** Still holds the one-time password an admin handed out. */
  mustChangePassword: boolean
}

/** Every user of every organization, for the operator. */
export interface UserListing {
  email: string
  name: string | null
  organizationSlug: string
  role: Role
  createdAt: number
  mustChangePassword: boolean
  removedAt: number | null
}

export interface NewUserRecord {
  sub: string
  /** Already lower-cased and checked. */
  email: string
  name: string | null
  role: Role
  passwordHash: string
  mustChangePassword: boolean
  organizationSlug: string
  /** Whether a missing organization with that slug may be created (the slug is well formed). */
  mayCreateOrganization: boolean
}

/** Why a user was not created. */
export type UserRefusal = 'email_taken' | 'no_such_organization'

export type RoleChange = 'changed' | 'last_owner' | 'not_found'
export type MemberRemoval = 'removed' | 'last_owner' | 'not_found'

/** What a removed member comes back with. */
export interface Restoration {
  role: Role
  name: string | null
  passwordHash: string
}

export interface UserRepository {
  /**
   * Creates the user, and their organization when none has that slug and `mayCreateOrganization` allows it, in
   * one unit of work. Emails are unique: of concurrent creations with one email exactly one succeeds and the
   * others get `email_taken`, which is checked before the organization. With `audit`, the event it makes of the new
   * user (and their organization, maybe new too) is recorded in the same unit of work.
   */
  create(
    user: NewUserRecord,
    now: number,
    audit?: (created: { id: number; organizationId: number }) => AuditEntry,
  ): Promise<{ id: number; organizationId: number } | UserRefusal>

  /** Whether any user exists at all (first run creates the owner of an empty installation). */
  hasAny(): Promise<boolean>

  /** The organization's retention period in days, or null when its threads are kept for good (the default). */
  retentionOf(organizationId: number): Promise<number | null>

  /** Sets (days) or turns off (null) the organization's retention period, recording `audit` with it. */
  setRetention(organizationId: number, days: number | null, audit: AuditEntry): Promise<void>

  /** Every organization that has a retention period, for the upkeep's sweep. */
  retentionPeriods(): Promise<{ organizationId: number; days: number }[]>

  /** The user with this (lower-cased) email, removed or not. */
  findByEmail(email: string): Promise<UserRecord | null>

  /** The user with this (lower-cased) email unless removed from their organization. */
  findActiveByEmail(email: string): Promise<UserRecord | null>

  /** The ID of the organization with this slug, or null (the CLI names organizations by slug). */
  organizationIdBySlug(slug: string): Promise<number | null>

  /** Every organization's ID and slug, by ID (the CLI names what it reports on by slug). */
  organizationSlugs(): Promise<{ id: number; slug: string }[]>

  /** The stored password hash of a user, or null for an unknown ID. */
  passwordHashOf(userId: number): Promise<string | null>

  /** Every user, removed ones too, by organization slug and then email. */
  listAll(): Promise<UserListing[]>

  /** The organization's current members (removed people are not listed), by email. */
  listMembers(organizationId: number): Promise<Member[]>

  /** A current member of that organization by public ID, or null. */
  findMember(organizationId: number, sub: string): Promise<Member | null>

  /** A user by ID as a member, removed or not, or null. */
  findMemberById(userId: number): Promise<Member | null>

  /**
   * Gives a removed user back their place in the organization with a new role, name and (one-time) password.
   * Only a user still removed is restored, so of concurrent restorations exactly one wins; the others get null.
   * What their tokens resolve to changes, so resolved tokens are forgotten. `audit` is recorded with a restoration.
   */
  restore(userId: number, restoration: Restoration, audit: AuditEntry): Promise<Member | null>

  /**
   * Sets a current member's role (`not_found` when they are no longer one). Never demotes the organization's last
   * active owner, even against concurrent changes: that answers `last_owner` and changes nothing. Resolved tokens
   * are forgotten after a change. The event `audit` makes of the role they had is recorded with a change.
   */
  changeRole(
    organizationId: number,
    userId: number,
    role: Role,
    audit: (previous: Role) => AuditEntry,
  ): Promise<RoleChange>

  /**
   * Removes a current member from their organization and, in the same unit of work, ends every way in: their
   * sessions, personal access tokens, OAuth grants, unexchanged authorization codes and unused registration
   * tokens. The user row stays (their threads keep an owner). Never removes the last active owner, even against
   * concurrent changes (`last_owner`, nothing changed); `not_found` when they are no longer a member. Resolved
   * tokens are forgotten after a removal. The event `audit` makes of their role is recorded with a removal.
   */
  remove(organizationId: number, userId: number, now: number, audit: (role: Role) => AuditEntry): Promise<MemberRemoval>

  /**
   * The person's own new password: stored, the must-change flag cleared, and every session but the one holding
   * `keepSessionHash` ended, together, with the event `audit` makes of how many ended.
   */
  changePassword(
    userId: number,
    passwordHash: string,
    keepSessionHash: string,
    audit: (endedSessions: number) => AuditEntry,
  ): Promise<void>

  /**
   * A one-time password set by the operator: stored with the must-change flag, and every session of the person
   * ended, together, with the event `audit` makes of how many ended. Answers how many sessions ended.
   */
  resetPassword(userId: number, passwordHash: string, audit: (endedSessions: number) => AuditEntry): Promise<number>
}
