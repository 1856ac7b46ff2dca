// Idempotency keys on SQLite (repository.ts). One process writes the file, and each method's statements run in one
// synchronous transaction, so no other request comes between a read and the write it decides.
import { and, eq, isNull, lt, or } from 'drizzle-orm'
import type { Db } from '../db/client'
import { newId } from '../shared/ids'
import { idempotencyKeys } from './idempotency.table'
import type { IdempotencyRepository } from './repository'

export function sqliteIdempotencyRepository(db: Db): IdempotencyRepository {
  const held = (userId: number, key: string) => and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key))
  return {
    async reserve({ userId, key, fingerprint, now, expiredBefore, abandonedBefore }) {
      const claim = newId()
      return db.transaction((tx) => {
        const inserted = tx
          .insert(idempotencyKeys)
          .values({ userId, key, fingerprint, claim, createdAt: now })
          .onConflictDoNothing()
          .returning({ claim: idempotencyKeys.claim })
          .all()
        if (inserted.length > 0) return { kind: 'reserved', claim } as const
        const takenOver = tx
          .update(idempotencyKeys)
          .set({ fingerprint, claim, createdAt: now, status: null, body: null })
          .where(
            and(
              held(userId, key),
              or(
                lt(idempotencyKeys.createdAt, expiredBefore),
                and(isNull(idempotencyKeys.status), lt(idempotencyKeys.createdAt, abandonedBefore)),
              ),
            ),
          )
          .returning({ claim: idempotencyKeys.claim })
          .all()
        if (takenOver.length > 0) return { kind: 'reserved', claim } as const
        const row = tx
          .select({
            fingerprint: idempotencyKeys.fingerprint,
            status: idempotencyKeys.status,
            body: idempotencyKeys.body,
          })
          .from(idempotencyKeys)
          .where(held(userId, key))
          .get()
        if (!row) throw new Error('an idempotency key vanished inside its transaction')
        return { kind: 'taken', ...row } as const
      })
    },

    async complete(userId, key, claim, { status, body }) {
      db.update(idempotencyKeys)
        .set({ status, body })
        .where(and(held(userId, key), eq(idempotencyKeys.claim, claim), isNull(idempotencyKeys.status)))
        .run()
    },

    async release(userId, key, claim) {
      db.delete(idempotencyKeys)
        .where(and(held(userId, key), eq(idempotencyKeys.claim, claim)))
        .run()
    },

    async deleteExpired(before) {
      db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before)).run()
    },
  }
}
