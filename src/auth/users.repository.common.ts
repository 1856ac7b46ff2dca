// Users, organizations and members on either database (users.repository.ts): every single-statement read and write.
// The units of work (creating a user with their organization, changing a role or removing a member against the
// last-owner rule, changing a password with the sessions it ends) differ by database and stay in
// users.repository.sqlite.ts and users.repository.pg.ts.
import { and, asc, eq, isNotNull, isNull, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { AnyDb, Audited } from '../db/dialect'
import type * as oauthTables from '../oauth/oauth.table.pg'
import type * as authTables from './auth.table.pg'
import type * as sessionTables from './sessions.table.pg'
import type { TokenChanges } from './tokens.repository.common'
import type { Member, UserRepository } from './users.repository'

export type UserTables = Pick<typeof authTables, 'organizations' | 'users'>
export type RemovalTables = typeof authTables &
  typeof sessionTables &
  Pick<typeof oauthTables, 'oauthAuthorizationCodes' | 'oauthGrants' | 'oauthRegistrationTokens'>

export interface UserDialect extends TokenChanges {
  /** Runs a write with the audit event it records, in one transaction (db/dialect.ts). */
  audited: Audited
  /**
   * Text ordered byte by byte, as listings order emails and slugs: SQLite's default, while a PostgreSQL database
   * created with a language's collation (en_US.UTF-8 is common) would skip dots and dashes in emails.
   */
  bytewise?: (column: AnyPgColumn) => SQL | AnyPgColumn
}

/** What a member is, as the administration pages show them (users.repository.ts, Member). */
export function memberColumns({ users }: UserTables) {
  return {
    id: users.id,
    sub: users.sub,
    organizationId: users.organizationId,
    email: users.email,
    name: users.name,
    role: users.role,
    createdAt: users.createdAt,
    mustChangePassword: users.mustChangePassword,
  }
}

/** A current member of the organization: in it and not removed. */
export function inOrganization({ users }: UserTables, organizationId: number): SQL | undefined {
  return and(eq(users.organizationId, organizationId), isNull(users.removedAt))
}

/** The member's row while they are a current member of the organization. */
export function currentMember(t: UserTables, organizationId: number, userId: number): SQL | undefined {
  return and(eq(t.users.id, userId), inOrganization(t, organizationId))
}

/** The organization's active owners, whom the last-owner rule counts. */
export function activeOwnersOf(t: UserTables, organizationId: number): SQL | undefined {
  return and(inOrganization(t, organizationId), eq(t.users.role, 'owner'))
}

/**
 * The statements that remove a member and end every way in (their sessions, personal access tokens, unexchanged
 * authorization codes, OAuth grants and unused registration tokens), for the caller's unit of work to run in this
 * order. Codes go before grants: on PostgreSQL an exchange already under way holds its code's row, so the delete
 * waits for it to commit, and the grant it opened is then seen, and revoked, by the next statement.
 */
export function removalStatements(tx: Pick<AnyDb, 'update' | 'delete'>, t: RemovalTables, userId: number, now: number) {
  const { users, sessions, personalAccessTokens, oauthAuthorizationCodes, oauthGrants, oauthRegistrationTokens } = t
  return [
    tx.update(users).set({ removedAt: now, mustChangePassword: false }).where(eq(users.id, userId)),
    tx.delete(sessions).where(eq(sessions.userId, userId)),
    tx
      .update(personalAccessTokens)
      .set({ revokedAt: now })
      .where(and(eq(personalAccessTokens.userId, userId), isNull(personalAccessTokens.revokedAt))),
    tx.delete(oauthAuthorizationCodes).where(eq(oauthAuthorizationCodes.userId, userId)),
    tx
      .update(oauthGrants)
      .set({ revokedAt: now })
      .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt))),
    tx
      .delete(oauthRegistrationTokens)
      .where(and(eq(oauthRegistrationTokens.userId, userId), isNull(oauthRegistrationTokens.usedAt))),
  ]
}

/** Every method but the units of work, which each database runs its own way. */
export function userRepository(
  db: AnyDb,
  t: UserTables,
  { bytewise = (column) => column, afterTokenChange, audited }: UserDialect,
): Omit<UserRepository, 'create' | 'changeRole' | 'remove' | 'changePassword' | 'resetPassword'> {
  const { users, organizations } = t
  const member = memberColumns(t)
  return {
    async retentionOf(organizationId) {
      const [row] = await db
        .select({ days: organizations.retentionDays })
        .from(organizations)
        .where(eq(organizations.id, organizationId))
      return row?.days ?? null
    },

    async setRetention(organizationId, days, audit) {
      await audited(
        (tx) => [
          tx
            .update(organizations)
            .set({ retentionDays: days })
            .where(eq(organizations.id, organizationId))
            .returning({ id: organizations.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    async retentionPeriods() {
      const rows = await db
        .select({ organizationId: organizations.id, days: organizations.retentionDays })
        .from(organizations)
        .where(isNotNull(organizations.retentionDays))
      return rows.map(({ organizationId, days }) => ({ organizationId, days: days ?? 0 }))
    },

    async hasAny() {
      const rows = await db.select({ id: users.id }).from(users).limit(1)
      return rows.length > 0
    },

    async organizationIdBySlug(slug) {
      const [row] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.slug, slug))
      return row?.id ?? null
    },

    async organizationSlugs() {
      return db
        .select({ id: organizations.id, slug: organizations.slug })
        .from(organizations)
        .orderBy(asc(organizations.id))
    },

    async findByEmail(email) {
      const [row] = await db.select().from(users).where(eq(users.email, email))
      return row ?? null
    },

    async findActiveByEmail(email) {
      const [row] = await db
        .select()
        .from(users)
        .where(and(eq(users.email, email), isNull(users.removedAt)))
      return row ?? null
    },

    async passwordHashOf(userId) {
      const [row] = await db.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId))
      return row?.passwordHash ?? null
    },

    async listAll() {
      return db
        .select({
          email: users.email,
          name: users.name,
          organizationSlug: organizations.slug,
          role: users.role,
          createdAt: users.createdAt,
          mustChangePassword: users.mustChangePassword,
          removedAt: users.removedAt,
        })
        .from(users)
        .innerJoin(organizations, eq(organizations.id, users.organizationId))
        .orderBy(asc(bytewise(organizations.slug)), asc(bytewise(users.email)))
    },

    async listMembers(organizationId) {
      return db
        .select(member)
        .from(users)
        .where(inOrganization(t, organizationId))
        .orderBy(asc(bytewise(users.email)))
    },

    async findMember(organizationId, sub) {
      const [row] = await db
        .select(member)
        .from(users)
        .where(and(eq(users.sub, sub), inOrganization(t, organizationId)))
      return row ?? null
    },

    async findMemberById(userId) {
      const [row] = await db.select(member).from(users).where(eq(users.id, userId))
      return row ?? null
    },

    async restore(userId, { role, name, passwordHash }, audit) {
      // A conditional update: of racing restorations the first takes the row, the others (waiting for it on
      // PostgreSQL) then find the user no longer removed, so they update nothing.
      const [restored] = await audited<Member>(
        (tx) => [
          tx
            .update(users)
            .set({ role, name, passwordHash, mustChangePassword: true, removedAt: null })
            .where(and(eq(users.id, userId), isNotNull(users.removedAt)))
            .returning(member),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
      if (!restored) return null
      afterTokenChange?.()
      return restored satisfies Member
    },
  }
}
