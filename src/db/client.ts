// Opens the one SQLite file, sets the PRAGMAs every connection needs and applies committed migrations.
import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { type BunSQLiteDatabase, drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from './schema'

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }

export const migrationsFolder = join(import.meta.dir, '../../db/migrations')

/** Opens (creating if needed) the database at `path`; ':memory:' gives a private in-memory database. */
export function openDatabase(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA foreign_keys = ON')
  sqlite.run('PRAGMA busy_timeout = 5000')
  return drizzle({ client: sqlite, schema, casing: 'snake_case' }) as Db
}

export function migrateDatabase(db: Db): void {
  migrate(db, { migrationsFolder })
}
