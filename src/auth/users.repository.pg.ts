// Users, organizations and members on PostgreSQL (users.repository.ts): the neutral methods of
// users.repository.common.ts and the units of work, which differ here because many connections write at once, so
// each guarantee holds by the database rather than by taking turns in one process: the unique email index answers
// racing creations, and every change that can take an owner away first locks the organization's row, so changes to
// one organization's owners take turns and each counts the owners the one before it left.
import { and, count, eq, ne, sql, TransactionRollbackError } from 'drizzle-orm'
import { anyDb, type PgAppend, pgAudited } from '../db/dialect'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import * as oauthTables from '../oauth/oauth.table.pg'
import * as tables from './auth.table.pg'
import type { Role } from './model'
import * as sessionTables from './sessions.table.pg'
import type { MemberRemoval, RoleChange, UserRefusal, UserRepository } from './users.repository'
import { activeOwnersOf, currentMember, removalStatements, userRepository } from './users.repository.common'

const { organizations, users } = tables
const { sessions } = sessionTables
const removalTables = { ...tables, ...sessionTables, ...oauthTables }

/**
 * Locks the organization's row until the transaction ends, so whatever may take away an owner (a demotion, a
 * removal) takes turns per organization; false when there is no such organization. FOR NO KEY UPDATE rather than
 * FOR UPDATE: it conflicts with itself but not with the key-share lock a foreign key check takes, so creating a
 * user or a thread in the organization meanwhile does not wait.
 */
async function lockedOrganization(tx: Tx, organizationId: number): Promise<boolean> {
  const rows = await tx
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.id, organizationId))
    .for('no key update')
  return rows.length > 0
}

/** Active owners of the organization, as committed when the statement starts (after the lock above was taken). */
async function activeOwners(tx: Tx, organizationId: number): Promise<number> {
  const [row] = await tx.select({ n: count() }).from(users).where(activeOwnersOf(tables, organizationId))
  return row?.n ?? 0
}

/** The member's current role, or null when they are not a current member of the organization. */
async function currentRole(tx: Tx, organizationId: number, userId: number): Promise<Role | null> {
  const [row] = await tx
    .select({ role: users.role })
    .from(users)
    .where(currentMember(tables, organizationId, userId))
  return row?.role ?? null
}

export function pgUserRepository(db: PgDb, audit: PgAppend): UserRepository {
  return {
    // Text ordered byte by byte, as SQLite orders it (raw SQL: Drizzle's query builder has no COLLATE).
    ...userRepository(anyDb(db), tables, {
      bytewise: (column) => sql`${column} collate "C"`,
      audited: pgAudited(db, audit),
    }),

    async create(user, now, entry) {
      try {
        return await db.transaction(async (tx): Promise<{ id: number; organizationId: number } | UserRefusal> => {
          // The common case answered before anything is written; a creation racing this one is caught below.
          const [taken] = await tx.select({ id: users.id }).from(users).where(eq(users.email, user.email))
          if (taken) return 'email_taken'
          const [existing] = await tx
            .select({ id: organizations.id })
            .from(organizations)
            .where(eq(organizations.slug, user.organizationSlug))
          let organizationId = existing?.id
          if (organizationId === undefined) {
            if (!user.mayCreateOrganization) return 'no_such_organization'
            // Two people may found one organization at once: the second waits for the first and joins it.
            const [inserted] = await tx
              .insert(organizations)
              .values({ slug: user.organizationSlug, name: user.organizationSlug, createdAt: now })
              .onConflictDoNothing({ target: organizations.slug })
              .returning({ id: organizations.id })
            organizationId =
              inserted?.id ??
              (
                await tx
                  .select({ id: organizations.id })
                  .from(organizations)
                  .where(eq(organizations.slug, user.organizationSlug))
              )[0]?.id
            if (organizationId === undefined) throw new Error(`organization ${user.organizationSlug} vanished`)
          }
          // Of creations racing with one email, the index lets one insert; the others wait for it to commit and
          // insert nothing, and roll back the organization they may have founded, as if they had seen it taken.
          const [created] = await tx
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
            .onConflictDoNothing({ target: users.email })
            .returning({ id: users.id })
          if (!created) return tx.rollback()
          if (entry) await audit(tx, entry({ id: created.id, organizationId }))
          return { id: created.id, organizationId }
        })
      } catch (error) {
        if (error instanceof TransactionRollbackError) return 'email_taken'
        throw error
      }
    },

    async changeRole(organizationId, userId, role, entry) {
      const outcome = await db.transaction(async (tx): Promise<RoleChange> => {
        if (!(await lockedOrganization(tx, organizationId))) return 'not_found'
        const current = await currentRole(tx, organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && role !== 'owner' && (await activeOwners(tx, organizationId)) <= 1) {
          return 'last_owner'
        }
        await tx.update(users).set({ role }).where(eq(users.id, userId))
        await audit(tx, entry(current))
        return 'changed'
      })
      return outcome
    },

    async remove(organizationId, userId, now, entry) {
      const outcome = await db.transaction(async (tx): Promise<MemberRemoval> => {
        if (!(await lockedOrganization(tx, organizationId))) return 'not_found'
        const current = await currentRole(tx, organizationId, userId)
        if (current === null) return 'not_found'
        if (current === 'owner' && (await activeOwners(tx, organizationId)) <= 1) return 'last_owner'
        for (const statement of removalStatements(tx, removalTables, userId, now)) await statement
        await audit(tx, entry(current))
        return 'removed'
      })
      return outcome
    },

    async changePassword(userId, passwordHash, keepSessionHash, entry) {
      await db.transaction(async (tx) => {
        await tx.update(users).set({ passwordHash, mustChangePassword: false }).where(eq(users.id, userId))
        const ended = await tx
          .delete(sessions)
          .where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, keepSessionHash)))
          .returning({ id: sessions.id })
        await audit(tx, entry(ended.length))
      })
    },

    async resetPassword(userId, passwordHash, entry) {
      return db.transaction(async (tx) => {
        await tx.update(users).set({ passwordHash, mustChangePassword: true }).where(eq(users.id, userId))
        const ended = await tx.delete(sessions).where(eq(sessions.userId, userId)).returning({ id: sessions.id })
        await audit(tx, entry(ended.length))
        return ended.length
      })
    },
  }
}
