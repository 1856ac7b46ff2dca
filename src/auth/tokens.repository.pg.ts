// Personal access tokens on PostgreSQL (tokens.repository.ts). Revocation is one conditional update, so of racing
// revocations the first takes the row and the others, once it commits, find it revoked and change nothing.
import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import { organizations, personalAccessTokens, users } from './auth.table.pg'
import type { AccessTokenRepository } from './tokens.repository'

export function pgAccessTokenRepository(db: PgDb): AccessTokenRepository {
  // Every API request with a personal access token runs this (PostgreSQL keeps no token in memory): built once, it
  // costs about half the time of a query built anew each call (bench/shared-state.ts).
  const byHash = db
    .select({
      tokenId: personalAccessTokens.id,
      scopes: personalAccessTokens.scopes,
      expiresAt: personalAccessTokens.expiresAt,
      revokedAt: personalAccessTokens.revokedAt,
      lastUsedAt: personalAccessTokens.lastUsedAt,
      userId: users.id,
      removedAt: users.removedAt,
      sub: users.sub,
      name: users.name,
      email: users.email,
      role: users.role,
      organizationId: users.organizationId,
      organizationSlug: organizations.slug,
    })
    .from(personalAccessTokens)
    .innerJoin(users, eq(users.id, personalAccessTokens.userId))
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(eq(personalAccessTokens.tokenHash, sql.placeholder('tokenHash')))
    .prepare('personal_access_token_by_hash')

  return {
    async create(token, now) {
      await db.insert(personalAccessTokens).values({
        userId: token.userId,
        name: token.name,
        tokenHash: token.tokenHash,
        scopes: token.scopes.join(' '),
        createdAt: now,
        expiresAt: token.expiresAt,
      })
    },

    listActive(userId) {
      return db
        .select({
          id: personalAccessTokens.id,
          name: personalAccessTokens.name,
          scopes: personalAccessTokens.scopes,
          createdAt: personalAccessTokens.createdAt,
          lastUsedAt: personalAccessTokens.lastUsedAt,
          expiresAt: personalAccessTokens.expiresAt,
        })
        .from(personalAccessTokens)
        .where(and(eq(personalAccessTokens.userId, userId), isNull(personalAccessTokens.revokedAt)))
        .orderBy(desc(personalAccessTokens.createdAt), desc(personalAccessTokens.id))
    },

    async revoke(userId, tokenId, now) {
      const revoked = await db
        .update(personalAccessTokens)
        .set({ revokedAt: now })
        .where(
          and(
            eq(personalAccessTokens.id, tokenId),
            eq(personalAccessTokens.userId, userId),
            isNull(personalAccessTokens.revokedAt),
          ),
        )
        .returning({ id: personalAccessTokens.id })
      return revoked.length > 0
    },

    async findByHash(tokenHash) {
      const [row] = await byHash.execute({ tokenHash })
      return row ?? null
    },

    async markUsed(tokenId, now) {
      await db.update(personalAccessTokens).set({ lastUsedAt: now }).where(eq(personalAccessTokens.id, tokenId))
    },
  }
}
