// Which committed migrations a database has, read from drizzle's bookkeeping table, so `migrate` can say what it
// did and `restore` can refuse a backup made by a newer Threadhouse. Raw SQL: that table is drizzle's own and
// not in the schema.
import type { Database } from 'bun:sqlite'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { migrateDatabase, migrationsFolder, openDatabase } from '../db/client'
import { OperationError } from './errors'

export interface Migration {
  /** drizzle-kit's folder timestamp; drizzle records it as `created_at` and applies every later one. */
  when: number
  tag: string
}

/** The migrations this version of Threadhouse ships, oldest first. */
export function committedMigrations(): Migration[] {
  const journal = JSON.parse(readFileSync(join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as {
    entries: Migration[]
  }
  return journal.entries.map(({ when, tag }) => ({ when, tag }))
}

/** The timestamp of the newest migration applied to this database; null for a database without any. */
export function lastAppliedMigration(sqlite: Database): number | null {
  const table = sqlite
    .query("select 1 as found from sqlite_master where type = 'table' and name = '__drizzle_migrations'")
    .get()
  if (!table) return null
  const row = sqlite.query('select max(created_at) as last from __drizzle_migrations').get() as {
    last: number | null
  }
  return row.last === null ? null : Number(row.last)
}

/** Refuses a database that a newer Threadhouse migrated: this version would run on a schema it does not know. */
export function requireKnownSchema(sqlite: Database, what: string): void {
  const last = lastAppliedMigration(sqlite)
  const known = committedMigrations().at(-1)
  if (last !== null && known && last > known.when) {
    throw new OperationError(
      `${what} has migrations from a newer Threadhouse (up to ${new Date(last).toISOString()}); ` +
        `this version knows up to ${known.tag}: upgrade Threadhouse first`,
    )
  }
}

export interface MigrationReport {
  created: boolean
  /** Tags of the migrations this run applied, oldest first. */
  applied: string[]
  /** The newest migration the database now has. */
  latest: string | undefined
}

/** Opens the database at `path`, creating it if needed, and applies every pending migration. */
export function migrateAndReport(path: string): MigrationReport {
  const created = !existsSync(path)
  const db = openDatabase(path)
  try {
    requireKnownSchema(db.$client, path)
    const before = lastAppliedMigration(db.$client) ?? Number.NEGATIVE_INFINITY
    migrateDatabase(db)
    const committed = committedMigrations()
    return {
      created,
      applied: committed.filter((migration) => migration.when > before).map((migration) => migration.tag),
      latest: committed.at(-1)?.tag,
    }
  } finally {
    db.$client.close()
  }
}
