// What an Idempotency-Key costs a request, and how fast retention deletes, measured in process on loopback:
//   - POST /api/v1/threads without a key, with a fresh key each time (reserve, then store the response), and a
//     replay of one key (the stored response, no work);
//   - the retention sweep deleting idle threads past their period (threads deleted per second).
// On SQLite (in memory) and on PostgreSQL (a throwaway cluster started as the tests do, test/support/postgres.ts).
// Not part of `bun run bench`:
//   bun bench/idempotency.ts            (BENCH_ITERATIONS, default 2000; BENCH_RETENTION_THREADS, default 5000)

import { createApp } from '../src/app'
import { createFileInspector } from '../src/attachments/inspector'
import { loadConfig } from '../src/config'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { silentLogger } from '../src/shared/log'
import { systemClock } from '../src/shared/time'
import { LocalBlobStore } from '../src/storage/blobs'
import { type Store, sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { sweepRetention } from '../src/threads/retention'
import { testEvent } from '../test/support/audit'
import { startPostgres } from '../test/support/postgres'
import { benchOwner, percentile } from './micro'

const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000)
const retentionThreads = Number(process.env.BENCH_RETENTION_THREADS ?? 5000)
const day = 24 * 60 * 60_000

/** Sequential latency in µs (p50 and p99). */
async function measure(name: string, call: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 100; i++) await call(-1 - i)
  const times: number[] = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    await call(i)
    times.push((performance.now() - start) * 1000)
  }
  times.sort((a, b) => a - b)
  console.log(
    `${name.padEnd(52)}  ${percentile(times, 50).toFixed(0).padStart(5)}  ${percentile(times, 99).toFixed(0).padStart(5)}`,
  )
}

function appOver(store: Store) {
  return createApp({
    store,
    config: { ...loadConfig({}), RATE_LIMIT_API_PER_MINUTE: 0, RATE_LIMIT_IP_PER_MINUTE: 0 },
    // No answer is generated here: threads are created without text.
    runner: { run() {}, cancel() {}, close: async () => {} },
    inspector: createFileInspector(silentLogger, { idle: false }),
    blobs: new LocalBlobStore('/tmp'),
    clock: systemClock,
    log: silentLogger,
    validateResponses: false,
  })
}

async function run(label: string, store: Store): Promise<void> {
  const { token, userId, organizationId } = await benchOwner(store)
  // Retention's threads, idle for a year, go in first: a thread written later is never dated before an earlier one
  // (the update order), so these must precede the POSTs below.
  const old = Date.now() - 365 * day
  for (let i = 0; i < retentionThreads; i++) {
    await store.threads.createThread({ organizationId, ownerId: userId, name: null, isPrivate: false, now: old })
  }
  const app = appOver(store)
  const post = async (key: string | null) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    if (key !== null) headers['idempotency-key'] = key
    const response = await app.handle(
      new Request('http://localhost/api/v1/threads', { method: 'POST', headers, body: '{"name":"bench"}' }),
    )
    if (response.status !== 201) throw new Error(`POST /threads answered ${response.status}`)
    await response.arrayBuffer()
  }
  await measure(`${label}: POST /threads, no key`, () => post(null))
  await measure(`${label}: POST /threads, a fresh key each`, (i) => post(`fresh-${i}`))
  await post('replayed')
  await measure(`${label}: POST /threads, a replay of one key`, () => post('replayed'))

  // Retention: the organization keeps threads 30 days; the POSTs' threads are recent and stay.
  await store.users.setRetention(organizationId, 30, testEvent('settings.retention_changed'))
  const start = performance.now()
  const deleted = await sweepRetention(
    { users: store.users, threads: store.threads, blobs: new LocalBlobStore('/tmp'), log: silentLogger },
    Date.now(),
  )
  const seconds = (performance.now() - start) / 1000
  console.log(
    `${label}: retention deleted ${deleted} threads in ${seconds.toFixed(2)} s (${Math.round(deleted / seconds)}/s)`,
  )
}

const cluster = await startPostgres()
try {
  await cluster.admin('create database bench')
  const pg = openPostgres(cluster.url('bench'))
  await migratePostgres(pg)
  const sqlite = openDatabase(':memory:')
  migrateDatabase(sqlite)
  console.log(`${iterations} calls each; sequential latency in µs`)
  console.log(`${'what'.padEnd(52)}    p50    p99`)
  await run('SQLite', sqliteStore(sqlite))
  await run('PostgreSQL', pgStore(pg))
  await pg.$client.close()
  sqlite.$client.close()
} finally {
  await cluster.stop()
}
process.exit(0)
