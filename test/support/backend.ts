// Which backend the suite runs on. By default SQLite and a local uploads folder; with THREADHOUSE_TEST_BACKEND=postgres
// the same tests run on PostgreSQL (a throwaway cluster, test/support/postgres.ts) and an S3-compatible bucket (s3rver,
// test/support/s3.ts), both started once per run. `.ci/run` runs the suite both ways.
import { basename, dirname, join } from 'node:path'
import type { Db } from '../../src/db/client'
import { migrateDatabase, openDatabase } from '../../src/db/client'
import { type BlobStore, S3BlobStore } from '../../src/storage/blobs'
import { type Store, sqliteStore } from '../../src/store'
import { migratedDatabase } from './database'
import { emptyPostgresDatabase, freshPostgresDatabase, missingPostgresDatabase } from './postgres'
import { runS3 } from './s3'
import type * as sqliteTables from './tables'

export const onPostgres = process.env.THREADHOUSE_TEST_BACKEND === 'postgres'

/** The tables of the run's dialect, by the names both schemas share. */
export type Tables = typeof sqliteTables

export interface TestDatabase extends AsyncDisposable {
  store: Store
  /** The SQLite database under the store, for the few tests of SQLite's own machinery; undefined on PostgreSQL. */
  sqlite: Db | undefined
  /**
   * Drizzle over the run's database, for tests that set up or inspect rows directly, with `tables` of the same
   * dialect. Typed as SQLite's, whose query builders PostgreSQL's mirror: a test awaits every query (`(await q)[0]`
   * for one row, never `.get()`, `.all()` or `.run()`) and names tables through `tables`, so one line runs on both.
   */
  orm: Db
  tables: Tables
}

/** A fresh, migrated database of the run's backend, as a Store. */
export async function testDatabase(): Promise<TestDatabase> {
  if (onPostgres) {
    const [database, { pgStore }, pgTables] = await Promise.all([
      freshPostgresDatabase(),
      import('../../src/store/postgres'),
      import('./tables.pg'),
    ])
    return {
      store: pgStore(database.db),
      sqlite: undefined,
      orm: database.db as unknown as Db,
      tables: pgTables as unknown as Tables,
      [Symbol.asyncDispose]: () => database[Symbol.asyncDispose](),
    }
  }
  const db = migratedDatabase()
  return {
    store: sqliteStore(db),
    sqlite: db,
    orm: db,
    tables: await import('./tables'),
    async [Symbol.asyncDispose]() {
      db.$client.close()
    },
  }
}

/** On PostgreSQL runs, a fresh bucket of the run's S3 server; on SQLite runs, undefined (the uploads folder). */
export async function testBucket(): Promise<BlobStore | undefined> {
  if (!onPostgres) return undefined
  const { kind: _, ...settings } = await (await runS3()).bucket()
  return new S3BlobStore(settings)
}

/**
 * A server process's environment on the run's backend: on PostgreSQL runs, DATABASE_PATH gives way to DATABASE_URL of
 * a fresh database and the process keeps its files in a fresh bucket, unless the test names its own.
 */
export async function backendEnv(given: Record<string, string>): Promise<Record<string, string>> {
  const env = ownUploads(given)
  if (!onPostgres) return env
  const { DATABASE_PATH: _, ...rest } = env
  const database = env.DATABASE_URL ? undefined : await freshPostgresDatabase()
  // The server opens its own connections; this pool is not needed.
  await database?.[Symbol.asyncDispose]()
  const bucket = env.S3_BUCKET ? undefined : await (await runS3()).bucket()
  return {
    ...(database && { DATABASE_URL: database.url }),
    ...(bucket && {
      S3_BUCKET: bucket.bucket,
      S3_ENDPOINT: bucket.endpoint ?? '',
      S3_REGION: bucket.region ?? 'us-east-1',
      S3_ACCESS_KEY_ID: bucket.accessKeyId,
      S3_SECRET_ACCESS_KEY: bucket.secretAccessKey,
    }),
    ...rest,
  }
}

/**
 * The environment with an uploads folder named after the SQLite file (`uploads-db.sqlite` beside it), unless it
 * names one: two databases in one folder get two. The default, the working folder's `uploads`, would be shared by every server
 * of the run, and each one's start-up sweep removes the files
 * and staged bodies the others' rows do not name (the staging folder is there on a bucket too).
 */
const uploadsFor = (databasePath: string): string => join(dirname(databasePath), `uploads-${basename(databasePath)}`)

function ownUploads(env: Record<string, string>): Record<string, string> {
  if (env.UPLOADS_DIR || !env.DATABASE_PATH) return env
  return { ...env, UPLOADS_DIR: uploadsFor(env.DATABASE_PATH) }
}

/**
 * A process's database before it exists, for tests of what creates one (the CLI's `migrate`, a first start): on
 * SQLite runs the file at `path`, not yet there; on PostgreSQL runs an empty database (and the run's bucket for
 * files). `missing` names a database that is not there either way, and stays so.
 */
export async function unmigratedEnv(
  path: string,
): Promise<{ env: Record<string, string>; missing: Record<string, string> }> {
  const uploads = uploadsFor(path)
  if (!onPostgres) return { env: { DATABASE_PATH: path, UPLOADS_DIR: uploads }, missing: { DATABASE_PATH: path } }
  const [url, missing] = await Promise.all([emptyPostgresDatabase(), missingPostgresDatabase()])
  return { env: await backendEnv({ DATABASE_URL: url, UPLOADS_DIR: uploads }), missing: { DATABASE_URL: missing } }
}

/** A database a process can open too, migrated: the SQLite file at `path`, or on PostgreSQL runs a fresh database. */
export async function migratedEnv(path: string): Promise<Record<string, string>> {
  if (!onPostgres) {
    const db = openDatabase(path)
    migrateDatabase(db)
    db.$client.close()
  }
  return backendEnv({ DATABASE_PATH: path })
}

/** The database a process's environment names (DATABASE_URL or DATABASE_PATH), for the test's own reads and writes. */
export async function databaseOf(env: Record<string, string>): Promise<TestDatabase> {
  if (env.DATABASE_URL) {
    const [{ openPostgres }, { pgStore }, pgTables] = await Promise.all([
      import('../../src/db/postgres'),
      import('../../src/store/postgres'),
      import('./tables.pg'),
    ])
    const db = openPostgres(env.DATABASE_URL, { max: 2 })
    return {
      store: pgStore(db),
      sqlite: undefined,
      orm: db as unknown as Db,
      tables: pgTables as unknown as Tables,
      [Symbol.asyncDispose]: () => db.$client.close(),
    }
  }
  const path = env.DATABASE_PATH
  if (!path) throw new Error('the environment names no database')
  const db = openDatabase(path, { mustExist: true })
  return {
    store: sqliteStore(db),
    sqlite: db,
    orm: db,
    tables: await import('./tables'),
    async [Symbol.asyncDispose]() {
      db.$client.close()
    },
  }
}
