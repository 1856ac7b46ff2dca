// Statements prepared once per database. Hot paths build their Drizzle query and prepare its SQLite
// statement on first use, then only bind values: building and preparing cost several times more than
// running a simple query. Inside `db.transaction` a statement prepared on `db` runs on the same
// connection, so it reads and writes within that transaction.
import type { Db } from './client'

const cache = new WeakMap<Db, Map<string, unknown>>()

/** The statement cached under `key` for this database, built by `build` the first time. */
export function prepared<T>(db: Db, key: string, build: () => T): T {
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
