// Idempotency keys (service.ts): one row per key a user sent, holding the request's fingerprint and, once the first
// request has finished, its response. Timestamps are epoch milliseconds.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { users } from '../auth/auth.table'

export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    /** Keys are the user's: any of their tokens may repeat a request with the same key. */
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    key: text().notNull(),
    /** SHA-256 of the method, the path and the body's bytes: what makes a repeat "the same request". */
    fingerprint: text().notNull(),
    /** Random per reservation: only the request holding it may store the response or release the key. */
    claim: text().notNull(),
    /** When the key was reserved (or taken over after its holder was abandoned). */
    createdAt: integer().notNull(),
    /** The first response, once stored; null while the first request is still running. */
    status: integer(),
    body: text(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
)
