// Personal access tokens on either database (tokens.repository.ts), and what every bearer token's lookup shares: the
// user and organization it acts for, and the join that finds them. Revocation is one conditional update, so of
// racing revocations the first takes the row and the others, once it commits, find it revoked and change nothing.
// The by-hash lookup itself is prepared by each database's own repository (tokens.repository.sqlite.ts, .pg.ts).
import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import type { AnyPgColumn, PgSelect } from 'drizzle-orm/pg-core'
import type { AnyDb, Audited } from '../db/dialect'
import type * as authTables from './auth.table.pg'
import type { AccessTokenRepository } from './tokens.repository'

export type CallerTables = Pick<typeof authTables, 'organizations' | 'users'>
export type TokenTables = typeof authTables

/** What a store does after a write that may change what a valid token resolves to (SQLite: empty its token cache). */
export interface TokenChanges {
  afterTokenChange?: () => void
}

/** How a repository records its acts in the audit log: the dialect's transaction runner (db/dialect.ts). */
export interface Audits {
  audited: Audited
}

/** The user and organization columns every kind of bearer token resolves to (tokens.repository.ts, CallerRow). */
export function callerColumns({ users, organizations }: CallerTables) {
  return {
    userId: users.id,
    removedAt: users.removedAt,
    sub: users.sub,
    name: users.name,
    email: users.email,
    role: users.role,
    organizationId: users.organizationId,
    organizationSlug: organizations.slug,
  }
}

/** A token lookup joined to the user `userId` names and their organization, and found by the `hash` placeholder. */
export function withCaller<Q extends PgSelect>(query: Q, userId: AnyPgColumn, hash: AnyPgColumn, t: CallerTables) {
  return query
    .innerJoin(t.users, eq(t.users.id, userId))
    .innerJoin(t.organizations, eq(t.organizations.id, t.users.organizationId))
    .where(eq(hash, sql.placeholder('hash')))
}

/** What a personal access token's lookup selects: the token's state and its user (PersonalAccessTokenLookup). */
export function personalAccessTokenFields(t: TokenTables) {
  const { personalAccessTokens } = t
  return {
    tokenId: personalAccessTokens.id,
    scopes: personalAccessTokens.scopes,
    expiresAt: personalAccessTokens.expiresAt,
    revokedAt: personalAccessTokens.revokedAt,
    lastUsedAt: personalAccessTokens.lastUsedAt,
    ...callerColumns(t),
  }
}

/** The personal access token whose hash is the `hash` placeholder, with its user, in whatever state. */
export function personalAccessTokenLookup(db: AnyDb, t: TokenTables) {
  const { personalAccessTokens } = t
  const query = db.select(personalAccessTokenFields(t)).from(personalAccessTokens).$dynamic()
  return withCaller(query, personalAccessTokens.userId, personalAccessTokens.tokenHash, t)
}

/** Every method but the lookup by hash, which each database prepares its own way. */
export function accessTokenRepository(
  db: AnyDb,
  { personalAccessTokens }: TokenTables,
  { afterTokenChange, audited }: TokenChanges & Audits,
): Omit<AccessTokenRepository, 'findByHash'> {
  return {
    async create(token, now, audit) {
      const [row] = await audited<{ id: number }>(
        (tx) => [
          tx
            .insert(personalAccessTokens)
            .values({
              userId: token.userId,
              name: token.name,
              tokenHash: token.tokenHash,
              scopes: token.scopes.join(' '),
              createdAt: now,
              expiresAt: token.expiresAt,
            })
            .returning({ id: personalAccessTokens.id }),
        ],
        ([created]) => (created ? audit(created.id) : null),
      )
      if (!row) throw new Error('the token was not stored')
      return row.id
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
    },

    async revoke(userId, tokenId, now, audit) {
      const revoked = await audited(
        (tx) => [
          tx
            .update(personalAccessTokens)
            .set({ revokedAt: now })
            .where(
              and(
                eq(personalAccessTokens.id, tokenId),
                eq(personalAccessTokens.userId, userId),
                isNull(personalAccessTokens.revokedAt),
              ),
            )
            .returning({ id: personalAccessTokens.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
      if (revoked.length === 0) return false
      afterTokenChange?.()
      return true
    },

    async markUsed(tokenId, now) {
      await db.update(personalAccessTokens).set({ lastUsedAt: now }).where(eq(personalAccessTokens.id, tokenId))
    },
  }
}
