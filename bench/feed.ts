// The thread change feed's costs (not part of `bun run bench`): a thread write with the tombstone-aware update order,
// the shared poll when nothing changed and when a page did, a resuming feed's read, and the latency from a write
// to its event on an open feed (the one-second poll's). SQLite in memory, and with BENCH_POSTGRES=1 also a throwaway
// PostgreSQL cluster as the tests start it. `BENCH_THREADS` (default 10000) threads are seeded first.
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
import { testEvent } from '../test/support/audit'
import { startPostgres } from '../test/support/postgres'
import { parseEvents } from '../test/support/sse'
import { benchOwner, percentile } from './micro'

const threadCount = Number(process.env.BENCH_THREADS ?? 10_000)
const iterations = 2000

async function measure(name: string, call: () => Promise<unknown>, times = iterations): Promise<void> {
  const took: number[] = []
  for (let i = 0; i < times; i++) {
    const start = performance.now()
    await call()
    took.push((performance.now() - start) * 1000)
  }
  took.sort((a, b) => a - b)
  console.log(`${name.padEnd(52)}  ${percentile(took, 50).toFixed(1).padStart(8)}  ${percentile(took, 99).toFixed(1)}`)
}

async function seed(store: Store): Promise<{ userId: number; organizationId: number; token: string }> {
  const owner = await benchOwner(store)
  for (let i = 0; i < threadCount; i++) {
    await store.threads.createThread({
      organizationId: owner.organizationId,
      ownerId: owner.userId,
      name: `thread ${i}`,
      isPrivate: i % 10 === 0,
      now: Date.now(),
    })
  }
  return owner
}

async function run(label: string, store: Store): Promise<void> {
  const { userId, organizationId, token } = await seed(store)
  const viewer = { sees: 'organization' as const, organizationId, userId }
  const [first] = await store.threads.listThreads({
    viewer,
    sortBy: 'updated_at',
    descending: true,
    archived: true,
    seqFrom: 0,
    limit: 1,
  })
  if (!first) throw new Error('no thread')
  // A few thousand tombstones, as a week of deletions might leave.
  for (let i = 0; i < threadCount / 10; i++) {
    const { threadId } = await store.threads.createThread({
      organizationId,
      ownerId: userId,
      name: null,
      isPrivate: false,
      now: Date.now(),
    })
    await store.threads.deleteThread(threadId, Date.now(), testEvent('thread.deleted'))
  }
  let n = 0
  await measure(`${label}: thread write (rename)`, () =>
    store.threads.updateThread(first.id, { name: `n${n++}` }, Date.now()),
  )
  const { head } = await store.threads.feedBounds()
  await measure(`${label}: shared poll, nothing new`, () => store.threads.changes({ after: head + n, limit: 200 }))
  await measure(`${label}: shared poll, a page of 200`, () => store.threads.changes({ after: 0, limit: 200 }), 500)
  await measure(
    `${label}: a resuming feed's page of 200 (filtered)`,
    () => store.threads.changes({ viewer, after: 0, limit: 200 }),
    500,
  )

  // Latency over HTTP with the real one-second poll: a write at a random moment, then its event.
  const app = createApp({
    store,
    config: { ...loadConfig({}), RATE_LIMIT_API_PER_MINUTE: 0, RATE_LIMIT_IP_PER_MINUTE: 0 },
    runner: { run() {}, cancel() {}, close: async () => {} },
    inspector: createFileInspector(silentLogger, { idle: false }),
    blobs: new LocalBlobStore('/tmp'),
    clock: systemClock,
    log: silentLogger,
    validateResponses: false,
  })
  const server = app.listen({ port: 0, hostname: '127.0.0.1' }).server
  if (!server) throw new Error('not listening')
  const controller = new AbortController()
  const response = await fetch(new URL('/api/v1/threads/events', server.url), {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  })
  const events = parseEvents(response)
  await events.next() // ready
  const latencies: number[] = []
  for (let i = 0; i < 20; i++) {
    await Bun.sleep(Math.random() * 1000)
    const start = performance.now()
    await app.handle(
      new Request(`${server.url}api/v1/threads/${first.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `latency ${i}` }),
      }),
    )
    await events.next()
    latencies.push(performance.now() - start)
  }
  controller.abort()
  await app.stop()
  latencies.sort((a, b) => a - b)
  const mean = latencies.reduce((sum, value) => sum + value, 0) / latencies.length
  console.log(
    `${label}: write to event over HTTP (ms): mean ${mean.toFixed(0)}, p50 ${percentile(latencies, 50).toFixed(0)}, ` +
      `max ${(latencies.at(-1) ?? 0).toFixed(0)}`,
  )
}

console.log(`${threadCount} threads; p50 and p99 in µs`)
const sqlite = openDatabase(':memory:')
migrateDatabase(sqlite)
await run('SQLite', sqliteStore(sqlite))
if (process.env.BENCH_POSTGRES === '1') {
  const cluster = await startPostgres()
  try {
    await cluster.admin('create database bench')
    const pg = openPostgres(cluster.url('bench'))
    await migratePostgres(pg)
    await run('PostgreSQL', pgStore(pg))
    await pg.$client.close()
  } finally {
    await cluster.stop()
  }
}
process.exit(0)
