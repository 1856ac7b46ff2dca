// Authorization codes, grants and tokens on SQLite (the GrantRepository contract of grants.repository.ts). Every
// unit of work runs inside one `db.transaction`, where nothing interleaves, so each method's read-then-write is
// atomic here; the contract's JSDoc says what another backend must guarantee instead. Writes that can change what
// a valid token resolves to clear the in-memory token cache.
import { and, eq, gt, isNotNull, isNull, lte, or, sql } from 'drizzle-orm'
import { organizations, users } from '../auth/auth.table'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import type { GrantRepository, NewTokens } from './grants.repository'
import {
  oauthAccessTokens,
  oauthAuthorizationCodes,
  oauthClients,
  oauthGrants,
  oauthRefreshTokens,
  oauthRegistrationTokens,
} from './oauth.table'

/** A transaction, or the database itself: statements run the same way on both. */
type Runner = Pick<Db, 'select' | 'insert' | 'update' | 'delete'>

function prepareAccessTokenLookup(db: Db) {
  return db
    .select({
      scopes: oauthAccessTokens.scopes,
      resource: oauthAccessTokens.resource,
      expiresAt: oauthAccessTokens.expiresAt,
      revokedAt: oauthAccessTokens.revokedAt,
      grantId: oauthGrants.id,
      grantRevokedAt: oauthGrants.revokedAt,
      grantLastUsedAt: oauthGrants.lastUsedAt,
      clientId: oauthGrants.clientId,
      userId: users.id,
      removedAt: users.removedAt,
      sub: users.sub,
      name: users.name,
      email: users.email,
      role: users.role,
      organizationId: users.organizationId,
      organizationSlug: organizations.slug,
    })
    .from(oauthAccessTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(eq(oauthAccessTokens.tokenHash, sql.placeholder('hash')))
    .prepare()
}

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

export function sqliteGrantRepository(db: Db): GrantRepository {
  /** Revokes a grant unless it already was; whether it did. The caller clears the token cache after committing. */
  function revoke(tx: Runner, grantId: number, now: number): boolean {
    const revoked = tx
      .update(oauthGrants)
      .set({ revokedAt: now })
      .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)))
      .returning({ id: oauthGrants.id })
      .get()
    return revoked !== undefined
  }

  function revokeGrant(grantId: number, now: number): void {
    if (revoke(db, grantId, now)) forgetResolvedTokens(db)
  }

  return {
    async createAuthorizationCode(code, forOrganization) {
      return db.transaction((tx) => {
        if (forOrganization !== null) {
          // The first approval wins even when two organizations approve at the same moment: only one UPDATE matches.
          tx.update(oauthClients)
            .set({ organizationId: forOrganization })
            .where(and(eq(oauthClients.id, code.clientId), isNull(oauthClients.organizationId)))
            .run()
          const owner = tx
            .select({ organizationId: oauthClients.organizationId })
            .from(oauthClients)
            .where(eq(oauthClients.id, code.clientId))
            .get()
          if (owner?.organizationId !== forOrganization) return false
        }
        tx.insert(oauthAuthorizationCodes).values(code).run()
        return true
      })
    },

    async findAuthorizationCode(codeHash) {
      const row = db
        .select({
          id: oauthAuthorizationCodes.id,
          clientId: oauthAuthorizationCodes.clientId,
          userId: oauthAuthorizationCodes.userId,
          redirectUri: oauthAuthorizationCodes.redirectUri,
          scopes: oauthAuthorizationCodes.scopes,
          codeChallenge: oauthAuthorizationCodes.codeChallenge,
          resource: oauthAuthorizationCodes.resource,
          expiresAt: oauthAuthorizationCodes.expiresAt,
          usedAt: oauthAuthorizationCodes.usedAt,
          grantId: oauthAuthorizationCodes.grantId,
        })
        .from(oauthAuthorizationCodes)
        .where(eq(oauthAuthorizationCodes.codeHash, codeHash))
        .get()
      return row ?? null
    },

    async redeemAuthorizationCode({ codeId, grant, tokens, now }) {
      let replayed = false
      const redeemed = db.transaction((tx) => {
        const unused = tx
          .update(oauthAuthorizationCodes)
          .set({ usedAt: now })
          .where(and(eq(oauthAuthorizationCodes.id, codeId), isNull(oauthAuthorizationCodes.usedAt)))
          .returning({ id: oauthAuthorizationCodes.id })
          .get()
        if (!unused) {
          const first = tx
            .select({ grantId: oauthAuthorizationCodes.grantId })
            .from(oauthAuthorizationCodes)
            .where(eq(oauthAuthorizationCodes.id, codeId))
            .get()
          if (first?.grantId != null) replayed = revoke(tx, first.grantId, now)
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
      if (replayed) forgetResolvedTokens(db)
      return redeemed
    },

    async findRefreshToken(tokenHash) {
      const row = db
        .select({
          id: oauthRefreshTokens.id,
          expiresAt: oauthRefreshTokens.expiresAt,
          usedAt: oauthRefreshTokens.usedAt,
          grantId: oauthGrants.id,
          clientId: oauthGrants.clientId,
          scopes: oauthGrants.scopes,
          resource: oauthGrants.resource,
          revokedAt: oauthGrants.revokedAt,
        })
        .from(oauthRefreshTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
        .where(eq(oauthRefreshTokens.tokenHash, tokenHash))
        .get()
      return row ?? null
    },

    async rotateRefreshToken({ tokenId, grantId, clientId, tokens, now, reuseGraceMs }) {
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
          revoked = revoke(tx, grantId, now)
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
      if (revoked) forgetResolvedTokens(db)
      return result
    },

    async revokeGrant(grantId, now) {
      revokeGrant(grantId, now)
    },

    async revokeRefreshTokenGrant(tokenHash, clientId, now) {
      const found = db
        .select({ grantId: oauthGrants.id, clientId: oauthGrants.clientId })
        .from(oauthRefreshTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
        .where(eq(oauthRefreshTokens.tokenHash, tokenHash))
        .get()
      if (found?.clientId === clientId) revokeGrant(found.grantId, now)
    },

    async revokeAccessToken(tokenHash, clientId, now) {
      const found = db
        .select({ id: oauthAccessTokens.id, clientId: oauthGrants.clientId })
        .from(oauthAccessTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
        .where(eq(oauthAccessTokens.tokenHash, tokenHash))
        .get()
      if (found?.clientId !== clientId) return
      const revoked = db
        .update(oauthAccessTokens)
        .set({ revokedAt: now })
        .where(and(eq(oauthAccessTokens.id, found.id), isNull(oauthAccessTokens.revokedAt)))
        .returning({ id: oauthAccessTokens.id })
        .get()
      if (revoked) forgetResolvedTokens(db)
    },

    async findAccessToken(tokenHash) {
      // Runs whenever an OAuth token is not in memory (token-cache.ts): prepared once per database.
      const row = prepared(db, 'oauth:lookup', () => prepareAccessTokenLookup(db)).get({ hash: tokenHash })
      return row ?? null
    },

    async markUsed(grantId, clientId, now) {
      db.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, grantId)).run()
      markClientUsed(db, clientId, now)
    },

    async listLiveForUser(userId, now) {
      return db
        .select({
          clientId: oauthClients.clientId,
          clientName: oauthClients.name,
          clientOrigin: oauthClients.origin,
          scopes: oauthGrants.scopes,
          createdAt: oauthGrants.createdAt,
          lastUsedAt: oauthGrants.lastUsedAt,
        })
        .from(oauthGrants)
        .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
        .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt), gt(oauthGrants.expiresAt, now)))
        .orderBy(oauthGrants.createdAt)
        .all()
    },

    async revokeForUserAndClient(userId, clientId, now) {
      const client = db
        .select({ id: oauthClients.id })
        .from(oauthClients)
        .where(eq(oauthClients.clientId, clientId))
        .get()
      if (!client) return 0
      const revoked = db
        .update(oauthGrants)
        .set({ revokedAt: now })
        .where(and(eq(oauthGrants.clientId, client.id), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
        .returning({ id: oauthGrants.id })
        .all()
      if (revoked.length > 0) forgetResolvedTokens(db)
      return revoked.length
    },

    async deleteExpired(now) {
      db.transaction((tx) => {
        tx.delete(oauthGrants)
          .where(or(isNotNull(oauthGrants.revokedAt), lte(oauthGrants.expiresAt, now)))
          .run()
        tx.delete(oauthAuthorizationCodes)
          .where(and(isNull(oauthAuthorizationCodes.usedAt), lte(oauthAuthorizationCodes.expiresAt, now)))
          .run()
        tx.delete(oauthAccessTokens).where(lte(oauthAccessTokens.expiresAt, now)).run()
        tx.delete(oauthRefreshTokens).where(lte(oauthRefreshTokens.expiresAt, now)).run()
        tx.delete(oauthRegistrationTokens)
          .where(or(isNotNull(oauthRegistrationTokens.usedAt), lte(oauthRegistrationTokens.expiresAt, now)))
          .run()
      })
    },
  }
}
