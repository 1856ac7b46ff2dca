// Statements prepared once per database. Hot paths build their Drizzle query and prepare its SQLite
// statement on first use, then only bind values: building and preparing cost several times more than
// running a simple query. Inside `db.transaction` a statement prepared on `db` runs on the same
// connection, so it reads and writes within that transaction.
// On PostgreSQL, building a Drizzle query costs several times what Bun.SQL takes to run a simple one (a thread by
// ID: about 60 µs of CPU to build, 10 µs to run), so the read paths keep theirs here too. There a statement
// prepared on `db` runs on the pool, never inside a transaction: prepare only what runs outside one.
import type { Db } from './client'
import type { PgDb } from './postgres'

const cache = new WeakMap<Db | PgDb, Map<string, unknown>>()

/** The statement cached under `key` for this database, built by `build` the first time. */
export function prepared<T>(db: Db | PgDb, key: string, build: () => T): T {
  let statements = cache.get(db)
  if (!statements) {
    statements = new Map()
    cache.set(db, statements)
  }
  let statement = statements.get(key) as T | undefined
  if (statement === undefined) {
    statement = build()
    statements.set(key, statement)
  }
  return statement
}

/**
 * A lookup by the `hash` placeholder, written against the neutral builder type (db/dialect.ts) and prepared here once
 * per database: building and preparing cost several times more than running it. Its rows come from Drizzle's
 * positional `.values()`, each value named by the key its column was selected under: this runs on every API request
 * the token cache misses, and Drizzle's generic row mapping cost it about a third of its time.
 */
export function sqliteLookup<T>(db: Db, key: string, fields: object, query: () => unknown): (hash: string) => T | null {
  const names = Object.keys(fields)
  return (hash) => {
    const statement = prepared(db, key, () =>
      (query() as { prepare(): { values(placeholders: { hash: string }): unknown[][] } }).prepare(),
    )
    const values = statement.values({ hash })[0]
    if (!values) return null
    const row: Record<string, unknown> = {}
    for (let i = 0; i < names.length; i++) row[names[i] as string] = values[i]
    return row as T
  }
}
