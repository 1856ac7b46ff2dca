// PostgreSQL twin of sessions.table.ts. Keep the two in step.
import { bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { users } from './auth.table.pg'

export const sessions = pgTable(
  'sessions',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    tokenHash: text().notNull().unique(),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: bigint({ mode: 'number' }).notNull(),
    expiresAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
)
