// Browser sessions on either database (sessions.repository.ts): each method is one statement. Ending sessions
// together with a password change or a removal happens in the users repositories, inside those units of work.
import { and, eq, isNull, lte } from 'drizzle-orm'
import type { AnyDb, Audited } from '../db/dialect'
import type * as authTables from './auth.table.pg'
import type { SessionRepository } from './sessions.repository'
import type * as sessionTables from './sessions.table.pg'

export type SessionTables = Pick<typeof authTables, 'organizations' | 'users'> & typeof sessionTables

export function sessionRepository(
  db: AnyDb,
  { sessions, users, organizations }: SessionTables,
  audited: Audited,
): SessionRepository {
  return {
    async create({ tokenHash, userId, expiresAt }, now, audit) {
      const [row] = await audited<{ id: number }>(
        (tx) => [
          tx.insert(sessions).values({ tokenHash, userId, createdAt: now, expiresAt }).returning({ id: sessions.id }),
        ],
        ([created]) => (created ? audit(created.id) : null),
      )
      if (!row) throw new Error('the session was not stored')
      return row.id
    },

    async findByHash(tokenHash) {
      const [row] = await db
        .select({
          id: sessions.id,
          expiresAt: sessions.expiresAt,
          user: {
            id: users.id,
            sessionId: sessions.id,
            sub: users.sub,
            email: users.email,
            name: users.name,
            role: users.role,
            organizationId: users.organizationId,
            organizationSlug: organizations.slug,
            mustChangePassword: users.mustChangePassword,
          },
        })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .innerJoin(organizations, eq(organizations.id, users.organizationId))
        .where(and(eq(sessions.tokenHash, tokenHash), isNull(users.removedAt)))
      return row ?? null
    },

    async extend(sessionId, expiresAt) {
      await db.update(sessions).set({ expiresAt }).where(eq(sessions.id, sessionId))
    },

    async delete(sessionId) {
      await db.delete(sessions).where(eq(sessions.id, sessionId))
    },

    async deleteByHash(tokenHash, audit) {
      await audited(
        (tx) => [tx.delete(sessions).where(eq(sessions.tokenHash, tokenHash)).returning({ id: sessions.id })],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    async deleteExpired(now) {
      await db.delete(sessions).where(lte(sessions.expiresAt, now))
    },
  }
}
