// Opens the one SQLite file, sets the PRAGMAs every connection needs and applies committed migrations.
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { type BunSQLiteDatabase, drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'

export type Db = BunSQLiteDatabase & { $client: Database }

export const migrationsFolder = join(import.meta.dir, '../../db/migrations/sqlite')

/** Thrown by `openDatabase(path, { mustExist: true })` when there is no database file at `path`. */
export class MissingDatabaseError extends Error {
  constructor(readonly path: string) {
    super(`There is no database at ${path}`)
  }
}

export interface OpenOptions {
  /**
   * Refuse, rather than create, a database that does not exist yet (and create no folder either): for tools
   * such as the operator CLI, where a mistyped DATABASE_PATH must not quietly start an empty database.
   */
  mustExist?: boolean
}

/**
 * Opens the database at `path`, creating it and its folder if needed unless `mustExist` says otherwise;
 * ':memory:' gives a private in-memory database.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const memory = path === ':memory:'
  if (options.mustExist && !memory && !existsSync(path)) throw new MissingDatabaseError(path)
  if (!memory && !options.mustExist) mkdirSync(dirname(path), { recursive: true })
  // `create: false` too, so a file removed between the check and the open is still not recreated.
  const sqlite = new Database(path, { create: !options.mustExist, readwrite: true, strict: true })
  // First: the pragmas after it touch the file, and another connection's checkpoint or close may hold it a moment.
  // Set later, the switch to WAL below met such a moment with no wait and failed with "database is locked" (a CLI
  // command started right after a test process closed the database, on a loaded machine).
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA foreign_keys = ON')
  return drizzle({ client: sqlite, casing: 'snake_case' }) as Db
}

/** SQLite's words for what is wrong when `error` says the file is not a database or is damaged; otherwise nothing. */
export function damageOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code)) return (error as Error).message
}

/**
 * Reads every page of the database once (`PRAGMA quick_check`: about 0.7 ms per MB from the page cache) and throws
 * an error that `damageOf` names if any page is damaged. Run at start-up before anything else reads the file, so a
 * damaged file stops the start with one line instead of failing whichever request meets the bad page first.
 */
export function checkIntact(db: Db): void {
  const [first] = db.$client.query<{ quick_check: string }, []>('PRAGMA quick_check(1)').all()
  if (first?.quick_check === 'ok') return
  // Its first finding, on one line: "*** in database main ***\nTree 83 page 119 cell 5: Offset 65535 out of range".
  const finding = (first?.quick_check ?? 'no answer').replace(/^\*\*\* in database \w+ \*\*\*\s*/, '')
  const message = `database disk image is malformed: ${finding.replace(/\s*\n\s*/g, '; ')}`
  throw Object.assign(new Error(message), { code: 'SQLITE_CORRUPT' })
}

export function migrateDatabase(db: Db): void {
  migrate(db, { migrationsFolder })
}
