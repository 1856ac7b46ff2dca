// Rate-limit windows shared by every instance on one PostgreSQL database (rate-limit.repository.pg.ts). PostgreSQL
// only: on SQLite one process counts in memory (rate-limit.ts). The migration makes the table UNLOGGED (Drizzle
// cannot say so): counts are not worth a write-ahead log entry, and a crash that empties them only restarts windows.
import { bigint, integer, pgTable, text } from 'drizzle-orm/pg-core'

export const rateLimitWindows = pgTable('rate_limit_windows', {
  /** The limit's name and what it counts, such as `auth:signin-ip:192.0.2.1`. */
  key: text().primaryKey(),
  /** When the window's first request came, in epoch milliseconds. */
  startedAt: bigint({ mode: 'number' }).notNull(),
  endsAt: bigint({ mode: 'number' }).notNull(),
  count: integer().notNull(),
})
