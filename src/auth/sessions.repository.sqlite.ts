// Browser sessions on SQLite (sessions.repository.ts).
import { and, eq, isNull, lte } from 'drizzle-orm'
import type { Db } from '../db/client'
import { organizations, users } from './auth.table'
import type { SessionRepository } from './sessions.repository'
import { sessions } from './sessions.table'

export function sqliteSessionRepository(db: Db): SessionRepository {
  return {
    async create({ tokenHash, userId, expiresAt }, now) {
      db.insert(sessions).values({ tokenHash, userId, createdAt: now, expiresAt }).run()
    },

    async findByHash(tokenHash) {
      return (
        db
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
          .get() ?? null
      )
    },

    async extend(sessionId, expiresAt) {
      db.update(sessions).set({ expiresAt }).where(eq(sessions.id, sessionId)).run()
    },

    async delete(sessionId) {
      db.delete(sessions).where(eq(sessions.id, sessionId)).run()
    },

    async deleteByHash(tokenHash) {
      db.delete(sessions).where(eq(sessions.tokenHash, tokenHash)).run()
    },

    async deleteExpired(now) {
      db.delete(sessions).where(lte(sessions.expiresAt, now)).run()
    },
  }
}
