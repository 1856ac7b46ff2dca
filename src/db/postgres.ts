// Opens PostgreSQL (DATABASE_URL) through Bun's built-in client and applies the committed PostgreSQL migrations.
// Several instances may start at once on one database: migrations run under an advisory lock, so exactly one
// applies them and the others wait, then find nothing left to do.
import { join } from 'node:path'
import { type BunSQLDatabase, drizzle } from 'drizzle-orm/bun-sql'
import { migrate } from 'drizzle-orm/bun-sql/migrator'

export type PgDb = BunSQLDatabase & { $client: Bun.SQL }

/** The transaction handle drizzle passes to `db.transaction`: every statement of a unit runs on it. */
export type PgTx = Parameters<Parameters<PgDb['transaction']>[0]>[0]

export const postgresMigrationsFolder = join(import.meta.dir, '../../db/migrations/postgres')

/** Any constant shared by every instance: the key of the advisory lock taken while migrating. */
const migrationLock = 0x7468_6d67 // "thmg"

/** The advisory locks start-up and upkeep take (store/index.ts, InstanceLocks), each a constant like the above. */
const lockKeys = {
  'first-run': 0x7468_6672, // "thfr"
  upkeep: 0x7468_7570, // "thup"
} as const

export type LockName = keyof typeof lockKeys

export interface PostgresOptions {
  /** Connections in the pool (Bun's default is 10). */
  max?: number
  /** Seconds to wait for a connection before failing (Bun's default is 30). */
  connectionTimeout?: number
}

export function openPostgres(url: string, options: PostgresOptions = {}): PgDb {
  const client = new Bun.SQL(url, { max: options.max ?? 10, connectionTimeout: options.connectionTimeout ?? 30 })
  return drizzle({ client, casing: 'snake_case' }) as PgDb
}

export async function migratePostgres(db: PgDb): Promise<void> {
  // A session-level lock belongs to one connection: reserve one for the lock and the migration alike.
  const connection = await db.$client.reserve()
  try {
    await connection`select pg_advisory_lock(${migrationLock})`
    try {
      await migrate(drizzle({ client: connection, casing: 'snake_case' }), {
        migrationsFolder: postgresMigrationsFolder,
      })
    } finally {
      await connection`select pg_advisory_unlock(${migrationLock})`
    }
  } finally {
    connection.release()
  }
}

/**
 * Runs `task` while this instance holds the advisory lock `name`: waiting for its turn, or with `skip`, skipping
 * the task (answering `ran: false`) when another instance holds it. A session-level lock belongs to one connection,
 * so one is reserved for the lock while the task uses the pool; should that connection break, PostgreSQL releases
 * the lock.
 */
export async function withAdvisoryLock<T>(
  db: PgDb,
  name: LockName,
  mode: 'wait' | 'skip',
  task: () => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false }> {
  const key = lockKeys[name]
  const connection = await db.$client.reserve()
  try {
    if (mode === 'wait') {
      await connection`select pg_advisory_lock(${key})`
    } else {
      const [row] = await connection`select pg_try_advisory_lock(${key}) as locked`
      if (!row?.locked) return { ran: false }
    }
    try {
      return { ran: true, value: await task() }
    } finally {
      await connection`select pg_advisory_unlock(${key})`
    }
  } finally {
    connection.release()
  }
}
