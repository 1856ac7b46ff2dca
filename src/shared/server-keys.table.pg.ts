// Secret keys the server signs with, kept in the database so that every instance on it signs alike
// (server-keys.repository.pg.ts). PostgreSQL only: on SQLite one process keeps its keys in memory.
import { bigint, pgTable, text } from 'drizzle-orm/pg-core'

export const serverKeys = pgTable('server_keys', {
  /** What the key signs, such as `csrf`. */
  name: text().primaryKey(),
  /** 256 random bits, base64url. */
  key: text().notNull(),
  createdAt: bigint({ mode: 'number' }).notNull(),
})
