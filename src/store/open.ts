// Opens the database the configuration names and builds the Store over it: the SQLite file at DATABASE_PATH by
// default, PostgreSQL when DATABASE_URL is set. Migrations are applied here, before anything reads a table.
import { resolve } from 'node:path'
import type { Config } from '../config'
import { checkIntact, type Db, damageOf, migrateDatabase, openDatabase } from '../db/client'
import { migratePostgres, openPostgres } from '../db/postgres'
import { StartupError } from '../shared/startup-error'
import { type Store, sqliteStore } from '.'

export interface OpenedStore {
  store: Store
  /** For the start-up log line: never the password. */
  description: { kind: 'sqlite'; path: string } | { kind: 'postgres'; host: string; database: string }
  close(): Promise<void>
}

/** How long start-up waits for PostgreSQL to answer before it gives up with one line. */
const connectTimeoutSeconds = 10

/** The URL without its password, for lines an operator reads. */
export function describePostgres(url: string): { kind: 'postgres'; host: string; database: string } {
  const parsed = new URL(url)
  return {
    kind: 'postgres',
    host: parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname,
    database: parsed.pathname.slice(1),
  }
}

/**
 * Opens, checks and migrates the SQLite file. A file that is not a database, or whose pages are damaged (a clobbered
 * header, a bad page, a cut-off copy), stops the start with one line saying how to get the data back.
 */
function openSqlite(path: string): Db {
  let db: Db | undefined
  try {
    db = openDatabase(path)
    checkIntact(db)
    migrateDatabase(db)
    return db
  } catch (error) {
    db?.$client.close()
    const damage = damageOf(error)
    if (damage === undefined) throw error
    throw new StartupError(
      `Cannot use DATABASE_PATH ${path}: the file is damaged (${damage}). Stop, move it aside and restore the latest backup: bun run cli restore --from DIR (docs/operations.md, Backup and restore)`,
    )
  }
}

export async function openStore(config: Pick<Config, 'DATABASE_PATH' | 'DATABASE_URL'>): Promise<OpenedStore> {
  if (config.DATABASE_URL === undefined) {
    const db = openSqlite(config.DATABASE_PATH)
    return {
      store: sqliteStore(db),
      description: { kind: 'sqlite', path: resolve(config.DATABASE_PATH) },
      async close() {
        db.$client.close()
      },
    }
  }
  const description = describePostgres(config.DATABASE_URL)
  const db = openPostgres(config.DATABASE_URL, { connectionTimeout: connectTimeoutSeconds })
  try {
    await migratePostgres(db)
  } catch (error) {
    await db.$client.close().catch(() => {})
    // Bun's errors name the host and the cause (refused, timed out, authentication failed), never the password.
    const reason = error instanceof Error ? error.message : String(error)
    throw new StartupError(
      `Cannot use the PostgreSQL database ${description.database} at ${description.host} (DATABASE_URL): ${reason}`,
    )
  }
  // Loaded only here: a SQLite installation never loads the PostgreSQL repositories.
  const { pgStore } = await import('./postgres')
  return {
    store: pgStore(db),
    description,
    close: () => db.$client.close(),
  }
}
