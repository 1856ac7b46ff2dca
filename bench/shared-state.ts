// What sharing security state through PostgreSQL costs a request, measured in process on loopback:
//   - resolving a bearer token (personal access token) with no in-process cache, as every API request on PostgreSQL
//     does, against SQLite with and without its one-second cache;
//   - GET /api/v1/me through the whole app on each;
//   - counting a sign-in attempt in the shared rate-limit table.
// Starts a throwaway PostgreSQL cluster the way the tests do (test/support/postgres.ts). Not part of `bun run bench`:
//   bun bench/shared-state.ts            (BENCH_ITERATIONS, default 5000)

import { createApp } from '../src/app'
import { createFileInspector } from '../src/attachments/inspector'
import { resolvePersonalAccessToken } from '../src/auth/personal-access-tokens'
import { loadConfig } from '../src/config'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { silentLogger } from '../src/shared/log'
import { sharedLimiter } from '../src/shared/rate-limit'
import { hashSecret } from '../src/shared/security'
import { systemClock } from '../src/shared/time'
import { LocalBlobStore } from '../src/storage/blobs'
import { type Store, sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { startPostgres } from '../test/support/postgres'
import { benchOwner, percentile } from './micro'

const iterations = Number(process.env.BENCH_ITERATIONS ?? 5000)
const inFlight = 16

/** Sequential latency (µs, p50 and p99) and throughput with 16 calls in flight (calls/s). */
async function measure(name: string, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 200; i++) await call()
  const times: number[] = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    await call()
    times.push((performance.now() - start) * 1000)
  }
  times.sort((a, b) => a - b)
  const start = performance.now()
  let left = iterations
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await call()
    }),
  )
  const perSecond = iterations / ((performance.now() - start) / 1000)
  const row = [name.padEnd(48), percentile(times, 50).toFixed(1), percentile(times, 99).toFixed(1)]
  console.log(`${row.join('  ')}  ${Math.round(perSecond)}`)
}

function appOver(store: Store) {
  return createApp({
    store,
    config: { ...loadConfig({}), RATE_LIMIT_API_PER_MINUTE: 0, RATE_LIMIT_IP_PER_MINUTE: 0 },
    // No answer is generated here: a runner that is never asked to run.
    runner: { run() {}, cancel() {}, close: async () => {} },
    inspector: createFileInspector(silentLogger, { idle: false }),
    blobs: new LocalBlobStore('/tmp'),
    clock: systemClock,
    log: silentLogger,
    validateResponses: false,
  })
}

const cluster = await startPostgres()
try {
  await cluster.admin('create database bench')
  const pg = openPostgres(cluster.url('bench'))
  await migratePostgres(pg)
  const onPostgres = pgStore(pg)
  const sqlite = openDatabase(':memory:')
  migrateDatabase(sqlite)
  const onSqlite = sqliteStore(sqlite)

  // The floor of any read per request, such as a shared counter validating a cache: one round trip.
  const roundTrip = () => pg.$client`select 1`
  console.log(`${iterations} calls each; sequential p50 and p99 in µs; calls/s with ${inFlight} in flight`)
  console.log(`${'what'.padEnd(48)}  p50  p99  calls/s`)
  await measure('PostgreSQL: select 1 (a round trip)', async () => roundTrip())
  for (const [label, store] of [
    ['PostgreSQL', onPostgres],
    ['SQLite', onSqlite],
  ] as const) {
    const { token } = await benchOwner(store, 'default', ['threads:read'])
    const hash = hashSecret(token)
    await measure(`${label}: token lookup (repository)`, () =>
      resolvePersonalAccessToken(store.accessTokens, hash, Date.now()),
    )
    const app = appOver(store)
    const request = () =>
      app.handle(new Request('http://localhost/api/v1/me', { headers: { authorization: `Bearer ${token}` } }))
    await measure(`${label}: GET /api/v1/me${store.tokenCache ? ' (cache)' : ''}`, async () => {
      const response = await request()
      if (response.status !== 200) throw new Error(`GET /me answered ${response.status}`)
      await response.arrayBuffer()
    })
    if (store.tokenCache) {
      const cache = store.tokenCache
      await measure(`${label}: GET /api/v1/me (no cache)`, async () => {
        cache.forget()
        await (await request()).arrayBuffer()
      })
    }
  }
  let attempt = 0
  const limiter = sharedLimiter(onPostgres.rateLimits, 'bench', { max: 1e9, windowMs: 60_000 }, systemClock)
  await measure('PostgreSQL: count a sign-in attempt (one key)', async () => limiter.hit('one address'))
  await measure('PostgreSQL: count a sign-in attempt (many keys)', async () =>
    limiter.hit(`address ${attempt++ % 1000}`),
  )
  await pg.$client.close()
  sqlite.$client.close()
} finally {
  await cluster.stop()
}
process.exit(0)
