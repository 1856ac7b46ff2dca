// Browser sessions for the web pages (sign-in, consent, settings). The API never reads them.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { users } from './auth.table'

export const sessions = sqliteTable(
  'sessions',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    /** SHA-256 of the cookie value; the value itself lives only in the browser. */
    tokenHash: text().notNull().unique(),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: integer().notNull(),
    /** Pushed forward while the session is in use (sliding expiry). */
    expiresAt: integer().notNull(),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
)
