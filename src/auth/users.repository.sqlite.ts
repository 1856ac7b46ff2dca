// Users, organizations and members on SQLite (users.repository.ts). bun:sqlite transactions cannot await, so
// every unit of work runs synchronously inside one `db.transaction` and the promise carries its result.
import { and, asc, count, eq, isNotNull, isNull, ne } from 'drizzle-orm'
import type { Db } from '../db/client'
import { oauthAuthorizationCodes, oauthGrants, oauthRegistrationTokens } from '../oauth/oauth.table'
import { organizations, personalAccessTokens, users } from './auth.table'
import type { Role } from './model'
import { sessions } from './sessions.table'
import { forgetResolvedTokens } from './token-cache'
import type { Member, MemberRemoval, RoleChange, UserRefusal, UserRepository } from './users.repository'

const memberColumns = {
  id: users.id,
  sub: users.sub,
  email: users.email,
  name: users.name,
  role: users.role,
  createdAt: users.createdAt,
  mustChangePassword: users.mustChangePassword,
}

export function sqliteUserRepository(db: Db): UserRepository {
  const activeOwners = (organizationId: number): number =>
    db
      .select({ n: count() })
      .from(users)
      .where(and(eq(users.organizationId, organizationId), eq(users.role, 'owner'), isNull(users.removedAt)))
      .get()?.n ?? 0

  /** The member's current role, or null when they are not a current member of the organization. */
  const currentRole = (organizationId: number, userId: number): Role | null =>
    db
      .select({ role: users.role })
      .from(users)
      .where(and(eq(users.id, userId), eq(users.organizationId, organizationId), isNull(users.removedAt)))
      .get()?.role ?? null

  const findMemberById = (userId: number): Member | null =>
    db.select(memberColumns).from(users).where(eq(users.id, userId)).get() ?? null

  return {
    async create(user, now) {
      return db.transaction((tx): { id: number } | UserRefusal => {
        if (tx.select({ id: users.id }).from(users).where(eq(users.email, user.email)).get()) return 'email_taken'
        let organizationId = tx
          .select({ id: organizations.id })
          .from(organizations)
          .where(eq(organizations.slug, user.organizationSlug))
          .get()?.id
        if (organizationId === undefined) {
          if (!user.mayCreateOrganization) return 'no_such_organization'
          organizationId = tx
            .insert(organizations)
            .values({ slug: user.organizationSlug, name: user.organizationSlug, createdAt: now })
            .returning({ id: organizations.id })
            .get().id
        }
        return tx
          .insert(users)
          .values({
            sub: user.sub,
            email: user.email,
            name: user.name,
            role: user.role,
            organizationId,
            passwordHash: user.passwordHash,
            mustChangePassword: user.mustChangePassword,
            createdAt: now,
          })
          .returning({ id: users.id })
          .get()
      })
    },

    async retentionOf(organizationId) {
      const row = db
        .select({ days: organizations.retentionDays })
        .from(organizations)
        .where(eq(organizations.id, organizationId))
        .get()
      return row?.days ?? null
    },

    async setRetention(organizationId, days) {
      db.update(organizations).set({ retentionDays: days }).where(eq(organizations.id, organizationId)).run()
    },

    async retentionPeriods() {
      const rows = db
        .select({ organizationId: organizations.id, days: organizations.retentionDays })
        .from(organizations)
        .where(isNotNull(organizations.retentionDays))
        .all()
      return rows.map(({ organizationId, days }) => ({ organizationId, days: days ?? 0 }))
    },

    async hasAny() {
      return db.select({ id: users.id }).from(users).limit(1).get() !== undefined
    },

    async organizationIdBySlug(slug) {
      return (
        db.select({ id: organizations.id }).from(organizations).where(eq(organizations.slug, slug)).get()?.id ?? null
      )
    },

    async findByEmail(email) {
      return db.select().from(users).where(eq(users.email, email)).get() ?? null
    },

    async findActiveByEmail(email) {
      return (
        db
          .select()
          .from(users)
          .where(and(eq(users.email, email), isNull(users.removedAt)))
          .get() ?? null
      )
    },

    async passwordHashOf(userId) {
      return (
        db.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId)).get()?.passwordHash ??
        null
      )
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
        .orderBy(asc(organizations.slug), asc(users.email))
        .all()
    },

    async listMembers(organizationId) {
      return db
        .select(memberColumns)
        .from(users)
        .where(and(eq(users.organizationId, organizationId), isNull(users.removedAt)))
        .orderBy(asc(users.email))
        .all()
    },

    async findMember(organizationId, sub) {
      return (
        db
          .select(memberColumns)
          .from(users)
          .where(and(eq(users.sub, sub), eq(users.organizationId, organizationId), isNull(users.removedAt)))
          .get() ?? null
      )
    },

    async findMemberById(userId) {
      return findMemberById(userId)
    },

    async restore(userId, { role, name, passwordHash }) {
      const restored = db
        .update(users)
        .set({ role, name, passwordHash, mustChangePassword: true, removedAt: null })
        .where(and(eq(users.id, userId), isNotNull(users.removedAt)))
        .returning({ id: users.id })
        .get()
      if (!restored) return null
      forgetResolvedTokens(db)
      return findMemberById(userId)
    },

    async changeRole(organizationId, userId, role) {
      const outcome = db.transaction((tx): RoleChange => {
        const current = currentRole(organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && role !== 'owner' && activeOwners(organizationId) <= 1) return 'last_owner'
        tx.update(users).set({ role }).where(eq(users.id, userId)).run()
        return 'changed'
      })
      if (outcome === 'changed') forgetResolvedTokens(db)
      return outcome
    },

    async remove(organizationId, userId, now) {
      const outcome = db.transaction((tx): MemberRemoval => {
        const current = currentRole(organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && activeOwners(organizationId) <= 1) return 'last_owner'
        tx.update(users).set({ removedAt: now, mustChangePassword: false }).where(eq(users.id, userId)).run()
        tx.delete(sessions).where(eq(sessions.userId, userId)).run()
        tx.update(personalAccessTokens)
          .set({ revokedAt: now })
          .where(and(eq(personalAccessTokens.userId, userId), isNull(personalAccessTokens.revokedAt)))
          .run()
        tx.update(oauthGrants)
          .set({ revokedAt: now })
          .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
          .run()
        // An authorization code not yet exchanged would otherwise open a fresh grant after removal.
        tx.delete(oauthAuthorizationCodes).where(eq(oauthAuthorizationCodes.userId, userId)).run()
        tx.delete(oauthRegistrationTokens)
          .where(and(eq(oauthRegistrationTokens.userId, userId), isNull(oauthRegistrationTokens.usedAt)))
          .run()
        return 'removed'
      })
      if (outcome === 'removed') forgetResolvedTokens(db)
      return outcome
    },

    async changePassword(userId, passwordHash, keepSessionHash) {
      db.transaction((tx) => {
        tx.update(users).set({ passwordHash, mustChangePassword: false }).where(eq(users.id, userId)).run()
        tx.delete(sessions)
          .where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, keepSessionHash)))
          .run()
      })
    },

    async resetPassword(userId, passwordHash) {
      return db.transaction((tx) => {
        tx.update(users).set({ passwordHash, mustChangePassword: true }).where(eq(users.id, userId)).run()
        return tx.delete(sessions).where(eq(sessions.userId, userId)).returning({ id: sessions.id }).all().length
      })
    },
  }
}
