// `bun bench/db-copy.ts`: how long `db:copy` takes to move a SQLite installation to PostgreSQL. Seeds the
// benchmark's database (seed.ts) at BENCH_SCALE (default 0.1: 10k threads, 100k messages), starts a throwaway
// PostgreSQL cluster (test/support/postgres.ts, Debian's `postgresql` package), copies the seeded file into an
// empty database with the CLI (`bun src/cli.ts db:copy`), and prints the time and the rate. The search index is
// then rebuilt once more on its own, to show its share of the total. Files are not part of it: the seed has
// no attachments, and a bucket's speed is the bucket's.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openPostgres } from '../src/db/postgres'
import { buildSearchIndex } from '../src/operations/db-copy'
import { startPostgres } from '../test/support/postgres'
import { seed } from './seed'

const scale = Number(process.env.BENCH_SCALE ?? 0.1)
const log = (line: string) => console.error(`[db-copy] ${line}`)

// `bun bench/db-copy.ts seed PATH`: the seeding alone, in a process of its own, so that its connection is closed
// for certain when db:copy claims the file (bun:sqlite closes one only once its statements are collected).
if (process.argv[2] === 'seed') {
  const info = await seed(process.argv[3] as string, scale)
  console.log(JSON.stringify({ threads: info.threads, messages: info.messages, seconds: info.seconds }))
  process.exit(0)
}

async function run(command: string[], env: Record<string, string> = {}): Promise<string> {
  const child = Bun.spawn(command, {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [printed, failure, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0) throw new Error(`${command.join(' ')} failed: ${failure}`)
  return printed
}
const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bench-copy-'))
const cluster = await startPostgres()
try {
  log(`seeding at scale ${scale} in ${dir}`)
  const info = JSON.parse(await run(['bun', 'bench/db-copy.ts', 'seed', join(dir, 'seed.sqlite')])) as {
    threads: number
    messages: number
    seconds: number
  }
  log(`seeded ${info.threads} threads and ${info.messages} messages in ${info.seconds.toFixed(1)} s`)
  await cluster.admin('create database bench_copy')
  const uploads = join(dir, 'uploads')
  mkdirSync(uploads)

  // The CLI as operators run it.
  const started = performance.now()
  const printed = await run(['bun', 'src/cli.ts', 'db:copy', '--to', cluster.url('bench_copy')], {
    DATABASE_PATH: join(dir, 'seed.sqlite'),
    UPLOADS_DIR: uploads,
  })
  const seconds = (performance.now() - started) / 1000
  log(printed.trimEnd())
  const rows = [...printed.matchAll(/^ {2}[a-z_]+ +(\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0)

  // The index's share: the same documents queued and built again, as db:copy builds them.
  const db = openPostgres(cluster.url('bench_copy'), { max: 3 })
  await db.execute(sql`delete from thread_search`)
  await db.execute(sql`insert into search_pending (thread_seq) select seq from threads`)
  const indexStarted = performance.now()
  const indexed = await buildSearchIndex(db)
  const indexSeconds = (performance.now() - indexStarted) / 1000
  await db.$client.close()

  console.log(`db:copy at scale ${scale}: ${info.threads} threads, ${info.messages} messages, ${rows} rows in all`)
  console.log(`  whole copy        ${seconds.toFixed(1)} s (${Math.round(rows / seconds)} rows/s)`)
  console.log(
    `  search index      ${indexSeconds.toFixed(1)} s of it (${indexed} threads, ${Math.round(indexed / indexSeconds)} threads/s)`,
  )
  console.log(`  rows, in one transaction  ${(seconds - indexSeconds).toFixed(1)} s`)
} finally {
  await cluster.stop()
  rmSync(dir, { recursive: true, force: true })
}
