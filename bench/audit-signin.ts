// What a failed sign-in costs with its audit event (docs/audit.md, "Failed sign-ins"), in process:
//   - signIn with a wrong password for a member (argon2id verify + the event in their organization's chain) and with
//     an unknown email (argon2id verify of a stand-in hash + the event in the chain of no organization);
//   - the event's write alone (one transaction: take the chain's head, insert the event, move the head), sequential,
//     and 8 at once into one chain (what a burst of failures costs when they queue on the head row).
// On SQLite (a file in a temporary folder, WAL, synchronous=NORMAL, as the server opens it) and on PostgreSQL (a
// throwaway cluster started as the tests do, but with fsync and synchronous commits on). Small on purpose.
//   bun bench/audit-signin.ts          (BENCH_SIGNINS, default 20; BENCH_APPENDS, default 400)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { signIn } from '../src/auth/sessions'
import { createUser } from '../src/auth/users'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { anonymousActor, auditEntry, systemOrigin } from '../src/shared/audit'
import { type Store, sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { startPostgres } from '../test/support/postgres'
import { percentile } from './micro'

const signIns = Number(process.env.BENCH_SIGNINS ?? 20)
const appends = Number(process.env.BENCH_APPENDS ?? 400)
const origin = { actor: anonymousActor, address: '192.0.2.1', userAgent: 'bench' }

/** Sequential latency in ms (p50 and p99) of `calls` calls, after a few to warm up. */
async function measure(name: string, calls: number, call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(5, calls); i++) await call()
  const times: number[] = []
  for (let i = 0; i < calls; i++) {
    const start = performance.now()
    await call()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  const p50 = percentile(times, 50)
  console.log(`${name.padEnd(58)} ${p50.toFixed(3).padStart(8)} ${percentile(times, 99).toFixed(3).padStart(8)}`)
  return p50
}

async function run(label: string, store: Store): Promise<void> {
  const email = `${label.toLowerCase()}@bench.example`
  const member = await createUser(
    store.users,
    { email, password: 'the right password', organizationSlug: 'bench', role: 'member' },
    Date.now(),
    systemOrigin,
  )
  console.log(`\n${label}`)
  await measure('sign-in, wrong password (argon2id + event)', signIns, () =>
    signIn(store, email, 'a wrong password', Date.now(), origin),
  )
  await measure('sign-in, unknown email (argon2id + event, no organization)', signIns, () =>
    signIn(store, 'nobody@bench.example', 'a wrong password', Date.now(), origin),
  )
  const event = () =>
    auditEntry(origin, Date.now(), {
      organizationId: member.organizationId,
      action: 'signin.failed',
      outcome: 'failure',
      target: null,
      detail: { method: 'password', reason: 'wrong_password' },
    })
  const alone = await measure('the event alone', appends, () => store.audit.append(event()))
  const burst = await measure('8 events at once into one chain (per burst)', appends / 8, () =>
    Promise.all(Array.from({ length: 8 }, () => store.audit.append(event()))),
  )
  console.log(`${'  per event in a burst of 8'.padEnd(58)} ${(burst / 8).toFixed(3).padStart(8)}`)
  console.log(`${'  events per second, one writer'.padEnd(58)} ${(1000 / alone).toFixed(0).padStart(8)}`)
}

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bench-audit-'))
// Durable commits, as a production server makes them: the tests' cluster turns fsync off.
const cluster = await startPostgres({ fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on' })
try {
  console.log(`${signIns} sign-ins and ${appends} events each; latency in ms`)
  console.log(`${'what'.padEnd(58)} ${'p50'.padStart(8)} ${'p99'.padStart(8)}`)
  const sqlite = openDatabase(join(dir, 'bench.sqlite'))
  migrateDatabase(sqlite)
  await run('SQLite', sqliteStore(sqlite))
  sqlite.$client.close()
  await cluster.admin('create database bench')
  const pg = openPostgres(cluster.url('bench'))
  await migratePostgres(pg)
  await run('PostgreSQL', pgStore(pg))
  await pg.$client.close()
} finally {
  await cluster.stop()
  rmSync(dir, { recursive: true, force: true })
}
process.exit(0)
