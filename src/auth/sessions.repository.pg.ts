// Browser sessions on PostgreSQL (sessions.repository.ts). Each method is one statement; ending sessions together
// with a password change or a removal happens in users.repository.pg.ts, inside those transactions.
import { and, eq, isNull, lte } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import { organizations, users } from './auth.table.pg'
import type { SessionRepository } from './sessions.repository'
import { sessions } from './sessions.table.pg'

export function pgSessionRepository(db: PgDb): SessionRepository {
  return {
    async create({ tokenHash, userId, expiresAt }, now) {
      await db.insert(sessions).values({ tokenHash, userId, createdAt: now, expiresAt })
    },

    async findByHash(tokenHash) {
      const [row] = await db
        .select({
          id: sessions.id,
          expiresAt: sessions.expiresAt,
          user: {
            id: users.id,
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

    async deleteByHash(tokenHash) {
      await db.delete(sessions).where(eq(sessions.tokenHash, tokenHash))
    },

    async deleteExpired(now) {
      await db.delete(sessions).where(lte(sessions.expiresAt, now))
    },
  }
}
