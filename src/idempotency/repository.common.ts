// Idempotency keys on either database (repository.ts). A reservation is three single statements, each safe against
// a racer on any instance: the insert's ON CONFLICT DO NOTHING lets exactly one reserve a key, and a takeover of a
// free key is one conditional update, which a second racer re-evaluates against the first's new row (PostgreSQL's
// READ COMMITTED; SQLite has one writer) and so finds no longer free. A key released between a failed insert and
// the read is tried again: a few rounds settle any race.
import { and, eq, isNull, lt, or } from 'drizzle-orm'
import type { AnyDb } from '../db/dialect'
import { newId } from '../shared/ids'
import type * as tables from './idempotency.table.pg'
import type { IdempotencyRepository, Reservation } from './repository'

const attempts = 5

export function idempotencyRepository(db: AnyDb, { idempotencyKeys }: typeof tables): IdempotencyRepository {
  const held = (userId: number, key: string) => and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key))
  return {
    async reserve({ userId, key, fingerprint, now, expiredBefore, abandonedBefore }): Promise<Reservation> {
      for (let attempt = 0; attempt < attempts; attempt++) {
        const claim = newId()
        const inserted = await db
          .insert(idempotencyKeys)
          .values({ userId, key, fingerprint, claim, createdAt: now })
          .onConflictDoNothing()
          .returning({ claim: idempotencyKeys.claim })
        if (inserted.length > 0) return { kind: 'reserved', claim }
        const takenOver = await db
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
        if (takenOver.length > 0) return { kind: 'reserved', claim }
        const [row] = await db
          .select({
            fingerprint: idempotencyKeys.fingerprint,
            status: idempotencyKeys.status,
            body: idempotencyKeys.body,
          })
          .from(idempotencyKeys)
          .where(held(userId, key))
        if (row) return { kind: 'taken', ...row }
      }
      throw new Error('an idempotency key kept changing hands')
    },

    async complete(userId, key, claim, { status, body }) {
      await db
        .update(idempotencyKeys)
        .set({ status, body })
        .where(and(held(userId, key), eq(idempotencyKeys.claim, claim), isNull(idempotencyKeys.status)))
    },

    async release(userId, key, claim) {
      await db.delete(idempotencyKeys).where(and(held(userId, key), eq(idempotencyKeys.claim, claim)))
    },

    async deleteExpired(before) {
      await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before))
    },
  }
}
