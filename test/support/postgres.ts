// A throwaway PostgreSQL cluster for tests, from Debian's `postgresql` package: initdb into a temporary folder,
// started on a free loopback port with durability off (a test cluster never outlives its run), stopped and
// removed after the last test file. One cluster per `bun test` run; each test gets its own database, copied
// from a migrated template in about 0.1 s.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migratePostgres, openPostgres, type PgDb } from '../../src/db/postgres'
import { closeAfterRun } from './after-run'

export interface PostgresCluster {
  /** `postgres://` URL of a database on this cluster. */
  url(database: string): string
  /** Runs SQL as the superuser, in the `postgres` database. */
  admin(sql: string): Promise<void>
  stop(): Promise<void>
}

function binaries(): string {
  const root = '/usr/lib/postgresql'
  const version = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin/initdb')))
        .sort((a, b) => Number(b) - Number(a))[0]
    : undefined
  if (!version) throw new Error('PostgreSQL is not installed: apt-get install postgresql')
  return join(root, version, 'bin')
}

/** initdb and the server refuse to run as root; as root, both run as the `postgres` user the package creates. */
function run(command: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0
  const result = asRoot
    ? spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8' })
    : spawnSync(command, args, { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr || result.stdout}`)
}

async function freePort(): Promise<number> {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}

/**
 * Starts a cluster. `settings` are further server settings (`shared_buffers`, say), applied after the defaults
 * below: the benchmark (bench/run.ts) starts its cluster here too, with more memory than a test needs.
 */
export async function startPostgres(settings: Record<string, string> = {}): Promise<PostgresCluster> {
  const bin = binaries()
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-postgres-'))
  chmodSync(dir, 0o777)
  const data = join(dir, 'data')
  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'])
  // A port taken between the check and the start fails the start; one more try with another port is enough.
  let port = 0
  for (let attempt = 0; ; attempt++) {
    port = await freePort()
    const options = [
      `-c port=${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=300',
      ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
    ].join(' ')
    try {
      run(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start'])
      break
    } catch (error) {
      if (attempt > 0) throw error
    }
  }
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  const adminSql = new Bun.SQL(url('postgres'), { max: 1 })
  return {
    url,
    async admin(sql) {
      await adminSql.unsafe(sql)
    },
    async stop() {
      // No waiting for connections a test left open: the cluster is stopped at once either way.
      await adminSql.close({ timeout: 0 })
      run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'])
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

let shared: Promise<PostgresCluster> | undefined

/**
 * The run's one cluster, started on first use and stopped by the after-run closing (after-run.ts): after the last
 * file, or in a parallel worker after each file, when the next file to ask starts another.
 */
export function sharedPostgres(): Promise<PostgresCluster> {
  if (!shared) {
    shared = startPostgres()
    const started = shared
    closeAfterRun(async () => {
      if (shared === started) shared = undefined
      await (await started).stop()
    }, 'the PostgreSQL cluster')
  }
  return shared
}

let template: Promise<void> | undefined
let databases = 0

/**
 * A new, migrated database on the run's cluster, copied from a template migrated once per run. Its pool is small:
 * many tests run at once against one cluster.
 */
export async function freshPostgresDatabase(): Promise<{ url: string; db: PgDb } & AsyncDisposable> {
  const cluster = await sharedPostgres()
  template ??= (async () => {
    await cluster.admin('create database threadhouse_template')
    const db = openPostgres(cluster.url('threadhouse_template'), { max: 1 })
    await migratePostgres(db)
    await db.$client.close()
  })()
  await template
  databases += 1
  const name = `test_${process.pid}_${databases}`
  await cluster.admin(`create database ${name} template threadhouse_template`)
  const url = cluster.url(name)
  const db = openPostgres(url, { max: 4 })
  return {
    url,
    db,
    async [Symbol.asyncDispose]() {
      await db.$client.close()
    },
  }
}

/**
 * The URL of a new database on the run's cluster with nothing in it, not even the migrations: what a process that
 * migrates on its own (the CLI's `migrate`, a first start) is pointed at.
 */
export async function emptyPostgresDatabase(): Promise<string> {
  const cluster = await sharedPostgres()
  databases += 1
  const name = `test_${process.pid}_${databases}_empty`
  await cluster.admin(`create database ${name}`)
  return cluster.url(name)
}

/** The URL of a database the run's cluster does not have. */
export async function missingPostgresDatabase(): Promise<string> {
  databases += 1
  return (await sharedPostgres()).url(`test_${process.pid}_${databases}_missing`)
}

/** Every row of the database at `url` as pg_dump writes it (data only, plain text): what a test reads for a secret. */
export function dumpDatabase(url: string): string {
  const result = spawnSync(join(binaries(), 'pg_dump'), ['--data-only', url], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`pg_dump failed: ${result.stderr || result.stdout}`)
  return result.stdout
}
