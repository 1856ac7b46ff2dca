// Users, organizations and members on SQLite (users.repository.ts): the neutral methods of users.repository.common.ts
// and the units of work, which differ here because bun:sqlite transactions cannot await: each runs synchronously
// inside one `db.transaction`, where nothing interleaves, and the promise carries its result.
import { and, count, eq, ne } from 'drizzle-orm'
import type { Db } from '../db/client'
import { type AnyDb, anyDb, asTables, runInTransaction, type SqliteAppend, sqliteAudited } from '../db/dialect'
import * as oauthTables from '../oauth/oauth.table'
import * as tables from './auth.table'
import type { Role } from './model'
import * as sessionTables from './sessions.table'
import { forgetResolvedTokens } from './token-cache'
import type { MemberRemoval, RoleChange, UserRefusal, UserRepository } from './users.repository'
import {
  activeOwnersOf,
  currentMember,
  type RemovalTables,
  removalStatements,
  type UserTables,
  userRepository,
} from './users.repository.common'

const { organizations, users } = tables
const t = asTables<UserTables>(tables)
const removalTables = asTables<RemovalTables>({ ...tables, ...sessionTables, ...oauthTables })
const { sessions } = sessionTables

export function sqliteUserRepository(db: Db, audit: SqliteAppend): UserRepository {
  const forget = () => forgetResolvedTokens(db)
  const activeOwners = (organizationId: number): number =>
    db.select({ n: count() }).from(users).where(activeOwnersOf(t, organizationId)).get()?.n ?? 0

  /** The member's current role, or null when they are not a current member of the organization. */
  const currentRole = (organizationId: number, userId: number): Role | null =>
    db
      .select({ role: users.role })
      .from(users)
      .where(currentMember(t, organizationId, userId))
      .get()?.role ?? null

  return {
    ...userRepository(anyDb(db), t, { afterTokenChange: forget, audited: sqliteAudited(db, audit) }),

    async create(user, now, entry) {
      return db.transaction((tx): { id: number; organizationId: number } | UserRefusal => {
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
        const created = tx
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
        if (entry) audit(tx as unknown as Db, entry({ id: created.id, organizationId }))
        return { id: created.id, organizationId }
      })
    },

    async changeRole(organizationId, userId, role, entry) {
      const outcome = db.transaction((tx): RoleChange => {
        const current = currentRole(organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && role !== 'owner' && activeOwners(organizationId) <= 1) return 'last_owner'
        tx.update(users).set({ role }).where(eq(users.id, userId)).run()
        audit(tx as unknown as Db, entry(current))
        return 'changed'
      })
      if (outcome === 'changed') forget()
      return outcome
    },

    async remove(organizationId, userId, now, entry) {
      const outcome = db.transaction((tx): MemberRemoval => {
        const current = currentRole(organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && activeOwners(organizationId) <= 1) return 'last_owner'
        runInTransaction(removalStatements(tx as unknown as AnyDb, removalTables, userId, now))
        audit(tx as unknown as Db, entry(current))
        return 'removed'
      })
      if (outcome === 'removed') forget()
      return outcome
    },

    async changePassword(userId, passwordHash, keepSessionHash, entry) {
      db.transaction((tx) => {
        tx.update(users).set({ passwordHash, mustChangePassword: false }).where(eq(users.id, userId)).run()
        const ended = tx
          .delete(sessions)
          .where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, keepSessionHash)))
          .returning({ id: sessions.id })
          .all().length
        audit(tx as unknown as Db, entry(ended))
      })
    },

    async resetPassword(userId, passwordHash, entry) {
      return db.transaction((tx) => {
        tx.update(users).set({ passwordHash, mustChangePassword: true }).where(eq(users.id, userId)).run()
        const ended = tx.delete(sessions).where(eq(sessions.userId, userId)).returning({ id: sessions.id }).all().length
        audit(tx as unknown as Db, entry(ended))
        return ended
      })
    },
  }
}
