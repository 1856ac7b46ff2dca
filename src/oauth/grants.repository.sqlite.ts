// Authorization codes, grants and tokens on SQLite (grants.repository.ts): the neutral methods of
// grants.repository.common.ts, which empty the token cache after a revocation, and the units of work, which differ
// here because bun:sqlite transactions cannot await: each runs synchronously inside one `db.transaction`, where
// nothing interleaves, so its read-then-write is atomic (the contract's JSDoc says what PostgreSQL guarantees
// instead), and the access token's lookup, prepared once per database as tokens.repository.sqlite.ts prepares its own.
import { and, eq, isNull } from 'drizzle-orm'
import type { StoredAccessToken } from '../auth/access-tokens'
import * as authTables from '../auth/auth.table'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { type AnyDb, anyDb, asTables, runInTransaction, type SqliteAppend, sqliteAudited } from '../db/dialect'
import { sqliteLookup } from '../db/prepared'
import type { GrantAudit, GrantRepository, NewTokens, RevokedGrant } from './grants.repository'
import {
  accessTokenFields,
  accessTokenLookup,
  expiredStatements,
  type GrantTables,
  grantRepository,
  revokeStatement,
  unusedCode,
} from './grants.repository.common'
import * as oauthTables from './oauth.table'

const t = asTables<GrantTables>({ ...authTables, ...oauthTables })
const { oauthAccessTokens, oauthAuthorizationCodes, oauthClients, oauthGrants, oauthRefreshTokens } = oauthTables

/** A transaction, or the database itself: statements run the same way on both. */
type Runner = Pick<Db, 'select' | 'insert' | 'update' | 'delete'>

/** Stores the tokens of one request under a grant and moves the grant's expiry to the newest one's. */
function insertTokens(tx: Runner, grantId: number, tokens: NewTokens, now: number): void {
  tx.insert(oauthAccessTokens)
    .values({ ...tokens.access, grantId, createdAt: now })
    .run()
  if (tokens.refresh) {
    tx.insert(oauthRefreshTokens)
      .values({ ...tokens.refresh, grantId, createdAt: now })
      .run()
  }
  tx.update(oauthGrants).set({ expiresAt: tokens.grantExpiresAt }).where(eq(oauthGrants.id, grantId)).run()
}

function markClientUsed(tx: Runner, clientId: number, now: number): void {
  tx.update(oauthClients).set({ lastUsedAt: now }).where(eq(oauthClients.id, clientId)).run()
}

export function sqliteGrantRepository(db: Db, append: SqliteAppend): GrantRepository {
  /**
   * Revokes a grant unless it already was, recording `audit`; whether it did. The caller clears the token cache after
   * committing.
   */
  const revoke = (tx: Runner, grantId: number, now: number, audit: GrantAudit): boolean => {
    const on = anyDb(tx as Db)
    const revoked = (revokeStatement(on, t, grantId, now) as unknown as { get(): RevokedGrant | undefined }).get()
    if (revoked) append(tx as Db, audit(revoked))
    return revoked !== undefined
  }
  const forget = () => forgetResolvedTokens(db)
  const findAccessToken = sqliteLookup<StoredAccessToken>(db, 'oauth:lookup', accessTokenFields(t), () =>
    accessTokenLookup(anyDb(db), t),
  )

  return {
    ...grantRepository(anyDb(db), t, { afterTokenChange: forget, audited: sqliteAudited(db, append) }),

    async createAuthorizationCode(code, forOrganization, audit) {
      return db.transaction((tx) => {
        let claimed = false
        if (forOrganization !== null) {
          // The first approval wins even when two organizations approve at the same moment: only one UPDATE matches.
          claimed =
            tx
              .update(oauthClients)
              .set({ organizationId: forOrganization })
              .where(and(eq(oauthClients.id, code.clientId), isNull(oauthClients.organizationId)))
              .returning({ id: oauthClients.id })
              .all().length > 0
          const owner = tx
            .select({ organizationId: oauthClients.organizationId })
            .from(oauthClients)
            .where(eq(oauthClients.id, code.clientId))
            .get()
          if (owner?.organizationId !== forOrganization) return false
        }
        tx.insert(oauthAuthorizationCodes).values(code).run()
        append(tx as unknown as Db, audit(claimed))
        return true
      })
    },

    async redeemAuthorizationCode({ codeId, grant, tokens, now }, audit) {
      let replayed = false
      const redeemed = db.transaction((tx) => {
        const unused = tx
          .update(oauthAuthorizationCodes)
          .set({ usedAt: now })
          .where(unusedCode(t, codeId))
          .returning({ id: oauthAuthorizationCodes.id })
          .get()
        if (!unused) {
          const first = tx
            .select({ grantId: oauthAuthorizationCodes.grantId })
            .from(oauthAuthorizationCodes)
            .where(eq(oauthAuthorizationCodes.id, codeId))
            .get()
          if (first?.grantId != null) replayed = revoke(tx, first.grantId, now, audit)
          return null
        }
        const created = tx
          .insert(oauthGrants)
          .values({ ...grant, createdAt: now, expiresAt: tokens.grantExpiresAt })
          .returning({ id: oauthGrants.id })
          .get()
        tx.update(oauthAuthorizationCodes)
          .set({ grantId: created.id })
          .where(eq(oauthAuthorizationCodes.id, codeId))
          .run()
        markClientUsed(tx, grant.clientId, now)
        insertTokens(tx, created.id, tokens, now)
        return { grantId: created.id }
      })
      if (replayed) forget()
      return redeemed
    },

    async rotateRefreshToken({ tokenId, grantId, clientId, tokens, now, reuseGraceMs }, audit) {
      let revoked = false
      const result = db.transaction((tx) => {
        const current = tx
          .select({ usedAt: oauthRefreshTokens.usedAt, grantRevokedAt: oauthGrants.revokedAt })
          .from(oauthRefreshTokens)
          .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
          .where(eq(oauthRefreshTokens.id, tokenId))
          .get()
        if (!current || current.grantRevokedAt !== null) return 'revoked'
        if (current.usedAt !== null && now - current.usedAt > reuseGraceMs) {
          revoked = revoke(tx, grantId, now, audit)
          return 'reused'
        }
        // A token reused within the grace window keeps its first use time, so the window never slides.
        tx.update(oauthRefreshTokens)
          .set({ usedAt: now })
          .where(and(eq(oauthRefreshTokens.id, tokenId), isNull(oauthRefreshTokens.usedAt)))
          .run()
        tx.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, grantId)).run()
        markClientUsed(tx, clientId, now)
        insertTokens(tx, grantId, tokens, now)
        return 'rotated'
      })
      if (revoked) forget()
      return result
    },

    async findAccessToken(tokenHash) {
      // Runs whenever an OAuth token is not in memory (token-cache.ts).
      return findAccessToken(tokenHash)
    },

    async deleteExpired(now) {
      db.transaction((tx) => runInTransaction(expiredStatements(tx as unknown as AnyDb, t, now)))
    },
  }
}
