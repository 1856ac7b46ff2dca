// Personal access tokens on SQLite (tokens.repository.ts), with the by-hash lookup every cache miss of the bearer
// guard runs kept as one prepared statement read by position.
import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { organizations, personalAccessTokens, users } from './auth.table'
import type { Role } from './model'
import { forgetResolvedTokens } from './token-cache'
import type { AccessTokenRepository, PersonalAccessTokenLookup } from './tokens.repository'

// lookupOf reads these columns by position: keep this order in step with it.
function prepareLookup(db: Db) {
  return db
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
    .where(eq(personalAccessTokens.tokenHash, sql.placeholder('hash')))
    .prepare()
}

/**
 * A row of `prepareLookup` from Drizzle's positional `.values()`, in its select's order: this lookup runs on every
 * API request the token cache misses, and Drizzle's generic row mapping cost it about a third of its time.
 */
function lookupOf(values: unknown[]): PersonalAccessTokenLookup {
  return {
    tokenId: values[0] as number,
    scopes: values[1] as string,
    expiresAt: values[2] as number | null,
    revokedAt: values[3] as number | null,
    lastUsedAt: values[4] as number | null,
    userId: values[5] as number,
    removedAt: values[6] as number | null,
    sub: values[7] as string,
    name: values[8] as string | null,
    email: values[9] as string,
    role: values[10] as Role,
    organizationId: values[11] as number,
    organizationSlug: values[12] as string,
  }
}

export function sqliteAccessTokenRepository(db: Db): AccessTokenRepository {
  return {
    async create(token, now) {
      db.insert(personalAccessTokens)
        .values({
          userId: token.userId,
          name: token.name,
          tokenHash: token.tokenHash,
          scopes: token.scopes.join(' '),
          createdAt: now,
          expiresAt: token.expiresAt,
        })
        .run()
    },

    async listActive(userId) {
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
        .all()
    },

    async revoke(userId, tokenId, now) {
      const revoked = db
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
        .get()
      if (revoked === undefined) return false
      forgetResolvedTokens(db)
      return true
    },

    async findByHash(tokenHash) {
      // Prepared once per database: building and preparing cost several times more than running it.
      const values = prepared(db, 'pat:lookup', () => prepareLookup(db)).values({ hash: tokenHash })[0]
      return values ? lookupOf(values) : null
    },

    async markUsed(tokenId, now) {
      db.update(personalAccessTokens).set({ lastUsedAt: now }).where(eq(personalAccessTokens.id, tokenId)).run()
    },
  }
}
