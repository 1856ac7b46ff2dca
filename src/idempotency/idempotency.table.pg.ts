// PostgreSQL twin of idempotency.table.ts: the same columns and indexes, with bigint epoch-millisecond timestamps.
// Keep the two in step.
import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { users } from '../auth/auth.table.pg'

const epochMs = () => bigint({ mode: 'number' })

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    key: text().notNull(),
    fingerprint: text().notNull(),
    claim: text().notNull(),
    createdAt: epochMs().notNull(),
    status: integer(),
    body: text(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
)
