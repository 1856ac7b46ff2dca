// Authorization codes, grants and tokens on PostgreSQL (grants.repository.ts): the neutral methods of
// grants.repository.common.ts, the access token's lookup as a named prepared statement, and the units of work, which
// differ here because many connections write at once under READ COMMITTED, so each guarantee rests on a row lock rather than on a read
// followed by a write: a code is spent by a conditional update, a rotation holds its grant's row while it decides,
// an unclaimed client is claimed by a conditional update. Locks are taken in one order everywhere (grant, then its
// tokens or codes, then the client's row; clients.repository.pg.ts deletes in that order too), so that two units of
// work never wait for each other. No token is remembered in memory on PostgreSQL (auth/token-cache.ts): every
// request reads what these writes committed, on every instance.
import { and, eq, inArray, isNull } from 'drizzle-orm'
import * as authTables from '../auth/auth.table.pg'
import { anyDb, type PgAppend, pgAudited } from '../db/dialect'
import type { PgDb, PgTx } from '../db/postgres'
import type { GrantAudit, GrantRepository, NewTokens } from './grants.repository'
import {
  accessTokenLookup,
  expiredStatements,
  type GrantTables,
  grantRepository,
  revokeStatement,
  unusedCode,
} from './grants.repository.common'
import * as oauthTables from './oauth.table.pg'

const t: GrantTables = { ...authTables, ...oauthTables }
const { oauthAccessTokens, oauthAuthorizationCodes, oauthClients, oauthGrants, oauthRefreshTokens } = oauthTables

/** A transaction, or the database itself (outside a transaction only: inside one, every statement goes to `tx`). */
type Runner = Pick<PgDb, 'select' | 'insert' | 'update' | 'delete'>

/** Stores the tokens of one request under a grant (whose expiry the caller moves to `tokens.grantExpiresAt`). */
async function insertTokens(tx: Runner, grantId: number, tokens: NewTokens, now: number): Promise<void> {
  await tx.insert(oauthAccessTokens).values({ ...tokens.access, grantId, createdAt: now })
  if (tokens.refresh) await tx.insert(oauthRefreshTokens).values({ ...tokens.refresh, grantId, createdAt: now })
}

async function markClientUsed(tx: Runner, clientId: number, now: number): Promise<void> {
  await tx.update(oauthClients).set({ lastUsedAt: now }).where(eq(oauthClients.id, clientId))
}

export function pgGrantRepository(db: PgDb, append: PgAppend): GrantRepository {
  /** Revokes a grant unless it already was, recording `audit`; whether it did. */
  const revoke = async (tx: PgTx, grantId: number, now: number, audit: GrantAudit): Promise<boolean> => {
    const [revoked] = await revokeStatement(anyDb(tx as unknown as PgDb), t, grantId, now)
    if (revoked) await append(tx, audit(revoked))
    return revoked !== undefined
  }

  // Every API request with an OAuth access token runs this (PostgreSQL keeps no token in memory): built once, it
  // costs about half the time of a query built anew each call (bench/shared-state.ts).
  const accessTokenByHash = accessTokenLookup(anyDb(db), t).prepare('oauth_access_token_by_hash')

  return {
    ...grantRepository(anyDb(db), t, { audited: pgAudited(db, append) }),

    createAuthorizationCode(code, forOrganization, audit) {
      return db.transaction(async (tx) => {
        let claimed = false
        if (forOrganization !== null) {
          // The first approval wins even when two organizations approve at the same moment: the second UPDATE waits
          // for the first one's row lock, re-checks `organization_id IS NULL` once it commits, and matches nothing;
          // the read that follows then sees the committed owner.
          const claiming = await tx
            .update(oauthClients)
            .set({ organizationId: forOrganization })
            .where(and(eq(oauthClients.id, code.clientId), isNull(oauthClients.organizationId)))
            .returning({ id: oauthClients.id })
          claimed = claiming.length > 0
          const [owner] = await tx
            .select({ organizationId: oauthClients.organizationId })
            .from(oauthClients)
            .where(eq(oauthClients.id, code.clientId))
          if (owner?.organizationId !== forOrganization) return false
        }
        await tx.insert(oauthAuthorizationCodes).values(code)
        await append(tx, audit(claimed))
        return true
      })
    },

    async redeemAuthorizationCode({ codeId, grant, tokens, now }, audit) {
      const redeemed = await db.transaction(async (tx) => {
        // Exactly one exchange spends the code: a concurrent one waits for this row lock, re-checks `used_at` once
        // this transaction commits, and matches nothing.
        const [unused] = await tx
          .update(oauthAuthorizationCodes)
          .set({ usedAt: now })
          .where(unusedCode(t, codeId))
          .returning({ id: oauthAuthorizationCodes.id })
        if (!unused) {
          // The winner set `grant_id` in the transaction that spent the code, which has committed by now (the
          // update above waited for it), so this new statement sees the grant to revoke.
          const [first] = await tx
            .select({ grantId: oauthAuthorizationCodes.grantId })
            .from(oauthAuthorizationCodes)
            .where(eq(oauthAuthorizationCodes.id, codeId))
          if (first?.grantId != null) await revoke(tx, first.grantId, now, audit)
          return null
        }
        const [created] = await tx
          .insert(oauthGrants)
          .values({ ...grant, createdAt: now, expiresAt: tokens.grantExpiresAt })
          .returning({ id: oauthGrants.id })
        if (!created) throw new Error('the grant could not be stored')
        await tx
          .update(oauthAuthorizationCodes)
          .set({ grantId: created.id })
          .where(eq(oauthAuthorizationCodes.id, codeId))
        await markClientUsed(tx, grant.clientId, now)
        await insertTokens(tx, created.id, tokens, now)
        return { grantId: created.id }
      })
      return redeemed
    },

    async rotateRefreshToken({ tokenId, grantId, clientId, tokens, now, reuseGraceMs }, audit) {
      const result = await db.transaction(async (tx) => {
        // Rotations of one grant take turns on its row (each of them updates it anyway), and so does a revocation
        // or a deletion of the grant. The token's state is read only once the lock is held, by a statement of its
        // own: under READ COMMITTED it then sees the `used_at` a rotation that held the lock before committed. (One
        // join locking the grant's row would return the token's row as it was before the wait: tried, a token
        // presented past the window while its first rotation held the lock rotated instead of being refused.)
        const [held] = await tx
          .select({ revokedAt: oauthGrants.revokedAt })
          .from(oauthGrants)
          .where(
            inArray(
              oauthGrants.id,
              tx
                .select({ grantId: oauthRefreshTokens.grantId })
                .from(oauthRefreshTokens)
                .where(eq(oauthRefreshTokens.id, tokenId)),
            ),
          )
          .for('update')
        if (!held || held.revokedAt !== null) return 'revoked'
        const [current] = await tx
          .select({ usedAt: oauthRefreshTokens.usedAt })
          .from(oauthRefreshTokens)
          .where(eq(oauthRefreshTokens.id, tokenId))
        if (!current) return 'revoked'
        if (current.usedAt !== null && now - current.usedAt > reuseGraceMs) {
          await revoke(tx, grantId, now, audit)
          return 'reused'
        }
        // A token reused within the grace window keeps its first use time, so the window never slides.
        await tx
          .update(oauthRefreshTokens)
          .set({ usedAt: now })
          .where(and(eq(oauthRefreshTokens.id, tokenId), isNull(oauthRefreshTokens.usedAt)))
        await tx
          .update(oauthGrants)
          .set({ lastUsedAt: now, expiresAt: tokens.grantExpiresAt })
          .where(eq(oauthGrants.id, grantId))
        await markClientUsed(tx, clientId, now)
        await insertTokens(tx, grantId, tokens, now)
        return 'rotated'
      })
      return result
    },

    async findAccessToken(tokenHash) {
      const [row] = await accessTokenByHash.execute({ hash: tokenHash })
      return row ?? null
    },

    async deleteExpired(now) {
      await db.transaction(async (tx) => {
        for (const statement of expiredStatements(tx, t, now)) await statement
      })
    },
  }
}
