// Share links on either database (repository.ts): every method is one statement, the same on both dialects
// (db/dialect.ts).
import { and, desc, eq, isNull } from 'drizzle-orm'
import type { organizations, users } from '../auth/auth.table.pg'
import type { AnyDb, Audited } from '../db/dialect'
import type { threads } from '../threads/threads.table.pg'
import { type ShareRepository, type ShareScope, snapshotFromColumn, snapshotToColumn } from './repository'
import type { shares as sharesTable } from './shares.table.pg'

/** The tables share links read, their own and two other features': either dialect's (db/dialect.ts). */
export interface ShareTables {
  shares: typeof sharesTable
  organizations: typeof organizations
  users: typeof users
  threads: typeof threads
}

export function shareRepository(
  db: AnyDb,
  { shares, organizations, users, threads }: ShareTables,
  audited: Audited,
): ShareRepository {
  const within = (scope: ShareScope) => {
    if ('threadId' in scope) return eq(shares.threadId, scope.threadId)
    if ('createdBy' in scope) return eq(shares.createdBy, scope.createdBy)
    return eq(shares.organizationId, scope.organizationId)
  }
  return {
    async create(share, audit) {
      try {
        await audited(
          (tx) => [
            tx
              .insert(shares)
              .values({
                id: share.id,
                threadId: share.threadId,
                organizationId: share.organizationId,
                createdBy: share.createdBy,
                tokenHash: share.tokenHash,
                includeFiles: share.includeFiles,
                threadName: share.snapshot.name,
                snapshot: snapshotToColumn(share.snapshot),
                createdAt: share.now,
              })
              .returning({ id: shares.id }),
          ],
          () => audit,
        )
      } catch (error) {
        // The thread's foreign key: deleted since its snapshot was read. Anything else is a failure.
        const [thread] = await db.select({ id: threads.id }).from(threads).where(eq(threads.id, share.threadId))
        if (thread) throw error
        return false
      }
      return true
    },

    async list(scope) {
      const rows = await db
        .select({
          id: shares.id,
          threadId: shares.threadId,
          threadName: shares.threadName,
          includeFiles: shares.includeFiles,
          createdAt: shares.createdAt,
          creatorId: users.id,
          creatorName: users.name,
          creatorEmail: users.email,
        })
        .from(shares)
        .innerJoin(users, eq(users.id, shares.createdBy))
        .where(within(scope))
        .orderBy(desc(shares.createdAt), desc(shares.id))
      return rows.map(({ creatorId, creatorName, creatorEmail, ...row }) => ({
        ...row,
        createdBy: { id: creatorId, name: creatorName, email: creatorEmail },
      }))
    },

    async revoke(scope, shareId, audit) {
      const deleted = await audited<{ threadId: string; organizationId: number }>(
        (tx) => [
          tx
            .delete(shares)
            .where(and(eq(shares.id, shareId), within(scope)))
            .returning({ threadId: shares.threadId, organizationId: shares.organizationId }),
        ],
        ([share]) => (share ? audit(share) : null),
      )
      return deleted.length > 0
    },

    async open(tokenHash) {
      const [row] = await db
        .select({
          id: shares.id,
          threadId: shares.threadId,
          includeFiles: shares.includeFiles,
          createdAt: shares.createdAt,
          organizationName: organizations.name,
          snapshot: shares.snapshot,
        })
        .from(shares)
        .innerJoin(organizations, eq(organizations.id, shares.organizationId))
        .innerJoin(users, eq(users.id, shares.createdBy))
        .where(and(eq(shares.tokenHash, tokenHash), eq(organizations.sharingEnabled, true), isNull(users.removedAt)))
      return row ? { ...row, snapshot: snapshotFromColumn(row.snapshot) } : null
    },

    async sharingEnabled(organizationId) {
      const [row] = await db
        .select({ enabled: organizations.sharingEnabled })
        .from(organizations)
        .where(eq(organizations.id, organizationId))
      return row?.enabled ?? false
    },

    async setSharing(organizationId, enabled, audit) {
      await audited(
        (tx) => [
          tx
            .update(organizations)
            .set({ sharingEnabled: enabled })
            .where(eq(organizations.id, organizationId))
            .returning({ id: organizations.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },
  }
}
