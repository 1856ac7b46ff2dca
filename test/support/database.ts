// A fresh in-memory SQLite database for a test, copied from one migrated once per test process.
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { type Db, migrateDatabase, openDatabase } from '../../src/db/client'

let template: Uint8Array | undefined

/**
 * A fresh in-memory database holding every migration: a copy of one migrated once per test process, since
 * running the migrations costs tens of milliseconds a test and the copy a fraction of one. The copy gets the
 * connection settings `openDatabase` gives every connection (keep the two alike).
 */
export function migratedDatabase(): Db {
  if (!template) {
    const source = openDatabase(':memory:')
    migrateDatabase(source)
    template = source.$client.serialize()
    source.$client.close()
  }
  const sqlite = Database.deserialize(template, { strict: true })
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA foreign_keys = ON')
  sqlite.run('PRAGMA busy_timeout = 5000')
  return drizzle({ client: sqlite, casing: 'snake_case' }) as Db
}
