// Statements prepared once per database. Hot paths build their Drizzle query and prepare its SQLite
// statement on first use, then only bind values: building and preparing cost several times more than
// running a simple query. Inside `db.transaction` a statement prepared on `db` runs on the same
// connection, so it reads and writes within that transaction.
// On PostgreSQL, building a Drizzle query costs several times what Bun.SQL takes to run a simple one (a thread by
// ID: about 60 µs of CPU to build, 10 µs to run), so the read paths keep theirs here too. There a statement
// prepared on `db` runs on the pool, never inside a transaction: what runs inside one is prepared with
// `inTransaction`, which runs the same statement on the transaction's own connection.
import type { Db } from './client'
import type { PgDb, PgTx } from './postgres'

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

/** Drizzle's Bun.SQL internals `inTransaction` relies on: a session's client, and the client a statement runs on. */
interface OnClient {
  client: unknown
}

const inTransactions = new Map<string, object>()

/**
 * The statement cached under `key`, built by `build` the first time on whichever transaction came first, and run on
 * `tx`'s connection: Drizzle builds a statement inside a PostgreSQL transaction again on every call (most of an
 * answer's finishing transaction's CPU went there). A statement's text depends only on the schema and the dialect,
 * the same for every database this process opens, so one cache serves them all. Drizzle's prepared query keeps the
 * client it runs on in `client`; the statement returned inherits everything else from the cached one.
 */
export function inTransaction<S extends object>(tx: PgTx, key: string, build: (tx: PgTx) => S): S {
  let statement = inTransactions.get(key) as S | undefined
  if (statement === undefined) {
    statement = build(tx)
    if (!('client' in statement)) throw new Error(`inTransaction: ${key} is not a Bun.SQL prepared query`)
    inTransactions.set(key, statement)
  }
  const client = (tx as unknown as { session: OnClient }).session.client
  return Object.create(statement, { client: { value: client } }) as S
}
