// What the dialect-neutral storage modules (`*.common.ts` beside each feature's repository) are written against.
// Drizzle's SQLite and PostgreSQL query builders have the same shape once awaited (select, insert, update, delete,
// returning, onConflictDoNothing/DoUpdate, the `sql` template), but TypeScript sees two unrelated types. The neutral
// modules are typed against PostgreSQL's builder, which has no synchronous `.get()`, `.all()` or `.run()` to reach
// for by mistake, and the SQLite store hands them its own database and tables, whose rows have the same types
// (epoch milliseconds as numbers, flags as booleans). Both test suites run every neutral method on both backends:
// that, not the compiler, is what keeps a dialect-only call out of these modules.
import type { BunSQLDatabase } from 'drizzle-orm/bun-sql'
import type { AuditEntry } from '../shared/audit'
import type { Db } from './client'
import type { PgDb, PgTx } from './postgres'

/** A database of either dialect, as the neutral modules see it. */
export type AnyDb = BunSQLDatabase

/** `db` for a neutral module. */
export function anyDb(db: Db | PgDb): AnyDb {
  return db as unknown as AnyDb
}

/**
 * A feature's SQLite tables as the neutral modules see them: the PostgreSQL twins' types (`typeof import('./x.table.pg')`).
 * The two files define the same columns under the same names, which drizzle-kit's migrations of both dialects and
 * the suites on both backends check.
 */
export function asTables<T>(tables: unknown): T {
  return tables as T
}

/**
 * Runs neutral statements (built on a bun:sqlite transaction, typed against PostgreSQL's builder) one after another,
 * synchronously: bun:sqlite transactions cannot await.
 */
export function runInTransaction(statements: readonly unknown[]): void {
  for (const statement of statements) (statement as { run(): void }).run()
}

/**
 * Runs the statements `build` makes on a transaction, in order, as one unit: how a neutral module writes several
 * statements at once without a twin per dialect. The store hands it the dialect's (sqliteUnit, pgUnit).
 */
export type Unit = (build: (tx: AnyDb) => readonly unknown[]) => Promise<void>

/** SQLite's unit: the statements run synchronously inside one `db.transaction`. */
export function sqliteUnit(db: Db): Unit {
  return async (build) => {
    db.transaction((tx) => runInTransaction(build(anyDb(tx as unknown as Db))))
  }
}

/** PostgreSQL's unit: the statements awaited one after another inside one transaction. */
export function pgUnit(db: PgDb): Unit {
  return (build) =>
    db.transaction(async (tx) => {
      for (const statement of build(anyDb(tx as unknown as PgDb))) await statement
    })
}

/**
 * Writes one audit event inside the act's own transaction, on its connection (src/audit/ fills it; the store hands it
 * to each repository whose acts are recorded): synchronously on SQLite, whose transactions cannot await.
 */
export type SqliteAppend = (tx: Db, entry: AuditEntry) => void
export type PgAppend = (tx: PgTx, entry: AuditEntry) => Promise<void>

/**
 * Runs the statements `build` makes, in order, and the audit event `entry` makes of the last one's rows (its
 * `.returning()`), in one transaction: how a neutral module records an act without a twin per dialect. `entry`
 * answers null when the rows say nothing happened (nothing revoked, nothing found): then nothing is recorded.
 */
export type Audited = <Row>(
  build: (tx: AnyDb) => readonly unknown[],
  entry: (rows: Row[]) => AuditEntry | null,
) => Promise<Row[]>

/** SQLite's: the statements, the last one's rows and the event, synchronously inside one `db.transaction`. */
export function sqliteAudited(db: Db, append: SqliteAppend): Audited {
  return async <Row>(build: (tx: AnyDb) => readonly unknown[], entry: (rows: Row[]) => AuditEntry | null) =>
    db.transaction((tx) => {
      const statements = build(anyDb(tx as unknown as Db))
      let rows: Row[] = []
      statements.forEach((statement, index) => {
        if (index < statements.length - 1) (statement as { run(): void }).run()
        else rows = (statement as { all(): Row[] }).all()
      })
      const event = entry(rows)
      if (event) append(tx as unknown as Db, event)
      return rows
    })
}

/** PostgreSQL's: the statements awaited one after another, then the event, inside one transaction. */
export function pgAudited(db: PgDb, append: PgAppend): Audited {
  return <Row>(build: (tx: AnyDb) => readonly unknown[], entry: (rows: Row[]) => AuditEntry | null) =>
    db.transaction(async (tx) => {
      let rows: Row[] = []
      for (const statement of build(anyDb(tx as unknown as PgDb))) rows = (await statement) as Row[]
      const event = entry(rows)
      if (event) await append(tx, event)
      return rows
    })
}
