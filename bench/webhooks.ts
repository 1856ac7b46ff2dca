// What webhooks cost, measured in process on loopback, on SQLite and PostgreSQL:
//   - the lookup every thread creation and stored answer now makes (the thread's organization and its enabled
//     endpoints), with no endpoint: the price paid by installations that use no webhooks;
//   - queueing an answer.completed event for one endpoint (lookup, the answer's messages, the insert);
//   - sending: deliveries per second from one worker (8 at a time) to a loopback receiver, signing included.
// Starts a throwaway PostgreSQL cluster the way the tests do (test/support/postgres.ts). Not part of `bun run bench`:
//   bun bench/webhooks.ts            (BENCH_ITERATIONS, default 2000; BENCH_DELIVERIES, default 2000)

import { migrateDatabase, openDatabase } from '../src/db/client'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { systemOrigin } from '../src/shared/audit'
import { silentLogger } from '../src/shared/log'
import { systemClock } from '../src/shared/time'
import { type Store, sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { linksFor } from '../src/threads/links'
import { createDeliveryWorker } from '../src/webhooks/delivery'
import { createWebhookEmitter } from '../src/webhooks/events'
import { createEndpoint, sendTestEvent } from '../src/webhooks/service'
import { testEvent } from '../test/support/audit'
import { startPostgres } from '../test/support/postgres'
import { benchOwner, percentile } from './micro'

const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000)
const deliveries = Number(process.env.BENCH_DELIVERIES ?? 2000)

async function measure(name: string, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 100; i++) await call()
  const times: number[] = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    await call()
    times.push((performance.now() - start) * 1000)
  }
  times.sort((a, b) => a - b)
  console.log(
    `${name.padEnd(52)} ${percentile(times, 50).toFixed(0).padStart(5)} ${percentile(times, 99).toFixed(0).padStart(6)}`,
  )
}

async function run(label: string, store: Store, receiverUrl: string): Promise<void> {
  const links = linksFor('http://localhost')
  const emitter = createWebhookEmitter({
    webhooks: store.webhooks,
    threads: store.threads,
    links,
    clock: systemClock,
    log: silentLogger,
  })
  const quiet = await benchOwner(store, `quiet-${label.toLowerCase()}`)
  const quietThread = await store.threads.createThread({
    ...quiet,
    ownerId: quiet.userId,
    name: null,
    isPrivate: false,
    now: Date.now(),
  })
  await measure(`${label}: lookup, no endpoint (per thread or answer)`, () =>
    emitter.threadCreated(quietThread.threadId),
  )
  const busy = await benchOwner(store, `busy-${label.toLowerCase()}`)
  const { endpoint } = await createEndpoint(
    store.webhooks,
    { organizationId: busy.organizationId, createdBy: null, url: 'https://hooks.example.com/', events: null },
    { allowPrivateNetworks: false },
    Date.now(),
    systemOrigin,
  )
  const thread = await store.threads.createThread({
    organizationId: busy.organizationId,
    ownerId: busy.userId,
    name: null,
    isPrivate: false,
    first: { role: 'user', contents: [{ type: 'text', text: 'question' }] },
    now: Date.now(),
  })
  await measure(`${label}: queue answer.completed, one endpoint`, () =>
    emitter.answerEnded(thread.threadId, thread.messageId ?? '', 'complete'),
  )
  // Those are never sent: the endpoint goes, with them, before the throughput run.
  await store.webhooks.deleteEndpoint(busy.organizationId, endpoint.id, () => testEvent('webhook.endpoint_removed'))
  const target = await createEndpoint(
    store.webhooks,
    { organizationId: busy.organizationId, createdBy: null, url: receiverUrl, events: null },
    { allowPrivateNetworks: true },
    Date.now(),
    systemOrigin,
  )
  for (let i = 0; i < deliveries; i++)
    await sendTestEvent(store.webhooks, busy.organizationId, target.endpoint.id, Date.now())
  const worker = createDeliveryWorker({
    webhooks: store.webhooks,
    clock: systemClock,
    log: silentLogger,
    allowPrivateNetworks: true,
    timeoutMs: 10_000,
  })
  const start = performance.now()
  const sent = await worker.runOnce()
  const seconds = (performance.now() - start) / 1000
  console.log(
    `${`${label}: deliveries sent per second (${sent})`.padEnd(52)} ${(sent / seconds).toFixed(0).padStart(5)}`,
  )
}

const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(null, { status: 204 }) })
const cluster = await startPostgres()
try {
  await cluster.admin('create database bench')
  const pg = openPostgres(cluster.url('bench'))
  await migratePostgres(pg)
  const sqlite = openDatabase(':memory:')
  migrateDatabase(sqlite)
  console.log(`${iterations} calls each; sequential p50 and p99 in µs`)
  console.log(`${'what'.padEnd(52)}   p50    p99`)
  await run('SQLite', sqliteStore(sqlite), `${receiver.url.origin}/hooks`)
  await run('PostgreSQL', pgStore(pg), `${receiver.url.origin}/hooks`)
  await pg.$client.close()
  sqlite.$client.close()
} finally {
  await cluster.stop()
  await receiver.stop(true)
}
process.exit(0)
