// `bun run bench`: seeds a fresh database, starts Threadhouse and the raw baseline (bench/baseline.ts)
// as real processes over identical copies of it, drives both with the same load, and prints one table
// of Threadhouse against the baseline, written to bench/results/latest.md with a chart (latest.svg);
// scenario 6 (uploads) is written to bench/results/uploads.md.
// BENCH_SCALE (default 1 = 100k threads, 1M messages), BENCH_SCENARIOS (e.g. "1,3"), BENCH_DURATION
// (seconds per measurement), BENCH_ROUNDS (turns the servers take within it), BENCH_CONNECTIONS (wrk) and
// BENCH_STREAMS (scenario 5) tune a run. BENCH_BACKEND=postgres measures Threadhouse on PostgreSQL against a raw
// Bun.SQL baseline (bench/baseline.pg.ts) instead, in a throwaway cluster, and writes bench/results/postgres.md;
// BENCH_REPORT names the results file otherwise (default latest).
import { Database } from 'bun:sqlite'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolvePersonalAccessToken } from '../src/auth/personal-access-tokens'
import { openDatabase } from '../src/db/client'
import { openPostgres } from '../src/db/postgres'
import { hashSecret } from '../src/shared/security'
import { sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { linksFor } from '../src/threads/links'
import { listThreads } from '../src/threads/listing'
import { type PostgresCluster, startPostgres } from '../test/support/postgres'
import { holdStreams, type Measure, percentile, type Server, sendAndStream, startServer, wrk } from './load'
import { chart, p99Ratio, type Row, table, throughputRatio } from './report'
import { ftsQuery, keyMask, phrasePage, searchFlusher, searchSql, threadTexts } from './search-sql'
import { threadTexts as pgThreadTexts, probeParams, probesSql, rewriteDocuments, startSearch } from './search-sql.pg'
import { seed } from './seed'
import { seedPostgres } from './seed.pg'
import { checkMs, type Pair, threadRotation, timedUploads, type UploadFile, uploadFiles, uploadLoop } from './uploads'

const scale = Number(process.env.BENCH_SCALE ?? 1)
const selected = new Set((process.env.BENCH_SCENARIOS ?? '1,2,3,4,5,6').split(',').map((s) => s.trim()))
const seconds = Number(process.env.BENCH_DURATION ?? (scale < 0.1 ? 3 : 10))
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32)
const streamCount = Number(process.env.BENCH_STREAMS ?? Math.max(100, Math.round(10_000 * scale)))
const publicUrl = 'http://127.0.0.1:3000'
const results = join(import.meta.dir, 'results')
const backend = process.env.BENCH_BACKEND ?? 'sqlite'
if (backend !== 'sqlite' && backend !== 'postgres') throw new Error('BENCH_BACKEND must be sqlite or postgres')
const onPostgres = backend === 'postgres'
const reportName = process.env.BENCH_REPORT ?? (onPostgres ? 'postgres' : 'latest')
/** The load average (1 minute) when the run starts: other work on the machine moves every figure. */
const loadBefore = loadavg()[0] as number

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bench-'))
const log = (line: string) => console.error(`[bench] ${line}`)
const rows: Row[] = []
const notes: string[] = []

log(`seeding at scale ${scale} in ${dir}`)
const info = await seed(join(dir, 'seed.sqlite'), scale)
log(`seeded ${info.threads} threads and ${info.messages} messages in ${info.seconds.toFixed(1)} s`)
copyFileSync(join(dir, 'seed.sqlite'), join(dir, 'app.sqlite'))
copyFileSync(join(dir, 'seed.sqlite'), join(dir, 'base.sqlite'))

// On PostgreSQL: the same rows in a throwaway cluster, one database for Threadhouse and a copy for the baseline.
// Durability is off as in the tests' clusters (test/support/postgres.ts: fsync and synchronous_commit off), which is
// more than SQLite's `synchronous = NORMAL` gives up (it leaves commits unsynced but syncs at checkpoints); the
// buffers hold the whole database, as a server sized for it would, and the planner is told reads are cached
// (random_page_cost, as for SSDs).
const pgSettings = {
  shared_buffers: '4GB',
  effective_cache_size: '8GB',
  random_page_cost: '1.1',
  work_mem: '16MB',
  max_wal_size: '8GB',
}
const cluster = onPostgres ? await startPostgres(pgSettings) : undefined
if (cluster) {
  // A failed or interrupted run must not leave a server holding gigabytes behind it.
  const abandon = (error?: unknown) => {
    if (error) console.error(error)
    void cluster.stop().finally(() => process.exit(1))
  }
  process.on('uncaughtException', abandon)
  process.on('SIGINT', () => abandon())
}
const pgUrl = (database: 'app' | 'base') => (cluster as PostgresCluster).url(database)
if (cluster) {
  await cluster.admin('create database app')
  const times = await seedPostgres(join(dir, 'seed.sqlite'), pgUrl('app'))
  log(
    `PostgreSQL: copied in ${times.copySeconds.toFixed(1)} s, documents built in ${times.indexSeconds.toFixed(1)} s, ` +
      `vacuumed in ${times.vacuumSeconds.toFixed(1)} s`,
  )
  notes.push(
    `Seeding PostgreSQL from the SQLite seed: COPY ${times.copySeconds.toFixed(0)} s, search documents by the ` +
      `app's indexer ${times.indexSeconds.toFixed(0)} s, VACUUM ANALYZE ${times.vacuumSeconds.toFixed(0)} s.`,
  )
  await cluster.admin('create database base template app')
}

// Readers: the first member of each organization (users 5–9), reading what the visibility rule shows them.
const readers = info.users.slice(5, 10)
const seedDb = new Database(join(dir, 'seed.sqlite'), { readonly: true, strict: true })
const file = (name: string, lines: string[]) => {
  writeFileSync(join(dir, name), `${lines.join('\n')}\n`)
  return join(dir, name)
}
const tokensFile = file(
  'tokens.txt',
  readers.map((user) => user.token),
)
const visiblePairs: string[] = []
for (const reader of readers) {
  const ids = seedDb
    .query<{ id: string }, [number, number, number]>(
      `select id from threads where organization_id = ? and (is_private = 0 or owner_id = ?)
       order by random() limit ?`,
    )
    .all(reader.organizationId, reader.id, 2000)
  for (const { id } of ids) visiblePairs.push(`${reader.token} ${id}`)
}
const visibleFile = file('visible.txt', visiblePairs)
const tokenOf = new Map(info.users.map((user) => [user.id, user.token]))
const owned = seedDb
  .query<{ id: string; ownerId: number }, []>(
    'select id, owner_id as ownerId from threads where archived = 0 order by random() limit 40000',
  )
  .all()
  .map((row) => ({ token: tokenOf.get(row.ownerId) as string, threadId: row.id }))
seedDb.close()
// Disjoint threads per scenario, so no scenario finds a thread another one left busy.
const streamThreads = owned.slice(0, 256)
// Sixteen clients with up to 64 threads each for the send + stream loops; the rest for wrk's POSTs.
const perClient = Math.max(1, Math.min(64, Math.floor((owned.length - 256) / 32)))
const loopThreads = Array.from({ length: 16 }, (_, client) =>
  owned.slice(256 + client * perClient, 256 + (client + 1) * perClient),
)
const sendFile = file(
  'send.txt',
  owned.slice(256 + 16 * perClient).map((pair) => `${pair.token} ${pair.threadId}`),
)
/** The query classes of scenario 3 (seed.ts): word pairs by frequency, prefixes, phrases, runs without spaces. */
const searchKinds = Object.keys(info.terms) as (keyof typeof info.terms)[]
const queryFiles = Object.fromEntries(
  Object.entries(info.terms).map(([kind, list]) => [kind, file(`q-${kind}.txt`, list.map(encodeURIComponent))]),
) as Record<keyof typeof info.terms, string>

const columnsSql = `t.id, t.name, t.state, t.is_private as isPrivate, t.archived, t.owner_id as ownerId,
  u.sub as ownerSub, u.name as ownerName, t.created_at as createdAt, t.updated_at as updatedAt`

/** Where each server keeps its rows: its own copy of the seed, a file or a PostgreSQL database. */
const storeEnv = (side: 'app' | 'base', database: string): Record<string, string> =>
  onPostgres ? { DATABASE_URL: pgUrl(side) } : { DATABASE_PATH: database }
const appEnv = (database: string, delayMs: number, concurrency: number) => ({
  ...storeEnv('app', database),
  UPLOADS_DIR: join(dir, 'app-uploads'),
  PORT: '0',
  HOST: '127.0.0.1',
  PUBLIC_URL: publicUrl,
  LLM_PROVIDER: 'echo',
  ECHO_TOKEN_DELAY_MS: String(delayMs),
  GENERATION_CONCURRENCY: String(concurrency),
  LOG_LEVEL: 'info',
  NODE_ENV: 'production',
  // Far above anything a load tool sends from one token and one address, so no request is answered 429,
  // while the limiters still do their work on every request and so are part of what is measured.
  RATE_LIMIT_API_PER_MINUTE: '1000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000',
  RATE_LIMIT_AUTH_PER_MINUTE: '1000000000',
  // Scenario 5 holds thousands of streams for a handful of users.
  STREAM_LIMIT_PER_USER: '0',
  STREAM_LIMIT_TOTAL: '0',
})
const baseEnv = (database: string, delayMs: number) => ({
  ...storeEnv('base', database),
  UPLOADS_DIR: join(dir, 'base-uploads'),
  PORT: '0',
  PUBLIC_URL: publicUrl,
  TOKEN_DELAY_MS: String(delayMs),
})

// This VM's speed drifts by tens of percent within a minute, so measuring one server for the whole time and
// then the other compared two different machines. The servers take turns instead (app, base, base, app, …),
// each round a share of the measurement's time, and each figure is the median of a server's rounds.
const rounds = Number(process.env.BENCH_ROUNDS ?? (seconds >= 5 ? 5 : 1))
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('BENCH_ROUNDS must be a whole number of at least 1')
/** wrk takes whole seconds. */
const roundSeconds = (turns: number) => Math.max(1, Math.round(seconds / turns))

function combined(measures: Measure[]): Measure {
  const median = (pick: (m: Measure) => number) => percentile(measures.map(pick), 50)
  const extraKeys = Object.keys(measures[0]?.extra ?? {})
  return {
    rps: median((m) => m.rps),
    p50: median((m) => m.p50),
    p99: median((m) => m.p99),
    rss: Math.max(...measures.map((m) => m.rss)),
    failures: measures.reduce((sum, m) => sum + m.failures, 0),
    requests: measures.reduce((sum, m) => sum + m.requests, 0),
    ...(extraKeys.length > 0 && {
      extra: Object.fromEntries(extraKeys.map((key) => [key, median((m) => m.extra?.[key] ?? Number.NaN)])),
    }),
  }
}

/** Both servers measured in interleaved rounds; `run` gets the seconds of one round. */
async function both(
  run: (server: Server, seconds: number) => Promise<Measure>,
  servers: [Server, Server],
  turns = rounds,
) {
  const [app, base] = servers
  const measured = { app: [] as Measure[], base: [] as Measure[] }
  for (let round = 0; round < turns; round++) {
    const order = round % 2 === 0 ? (['app', 'base'] as const) : (['base', 'app'] as const)
    for (const side of order) measured[side].push(await run(side === 'app' ? app : base, roundSeconds(turns)))
  }
  return { app: combined(measured.app), base: combined(measured.base) }
}

const warm = (script: string, path: string, args: string[]) => (server: Server) =>
  wrk(server, { script, path, args, seconds: Math.min(2, seconds), connections })
const measure = (script: string, path: string, args: string[]) => (server: Server, time: number) =>
  wrk(server, { script, path, args, seconds: time, connections })

const wantsHttp = ['1', '2', '3', '4'].some((s) => selected.has(s))
if (wantsHttp) {
  const servers: [Server, Server] = [
    await startServer('threadhouse', ['bun', 'src/index.ts'], appEnv(join(dir, 'app.sqlite'), 0, 8)),
    await startServer(
      'baseline',
      ['bun', onPostgres ? 'bench/baseline.pg.ts' : 'bench/baseline.ts'],
      baseEnv(join(dir, 'base.sqlite'), 0),
    ),
  ]
  try {
    if (selected.has('1')) {
      log('scenario 1: thread by id')
      await both(warm('thread.lua', '/', [visibleFile]), servers, 1)
      rows.push({
        scenario: '1 thread by id',
        ...(await both(measure('thread.lua', '/', [visibleFile]), servers)),
        goals: [
          { ratio: 0.8, label: 'req/s ≥ 0.8', higherIsBetter: true, value: throughputRatio },
          { ratio: 1.5, label: 'p99 ≤ 1.5×', higherIsBetter: false, value: p99Ratio },
        ],
      })
    }
    if (selected.has('2')) {
      log('scenario 2: list pages following cursors')
      await both(warm('list.lua', '/', [tokensFile]), servers, 1)
      rows.push({
        scenario: '2 list page, cursors',
        ...(await both(measure('list.lua', '/', [tokensFile]), servers)),
        goals: [{ ratio: 0.7, label: 'req/s ≥ 0.7', higherIsBetter: true, value: throughputRatio }],
      })
    }
    if (selected.has('3')) {
      for (const kind of searchKinds) {
        log(`scenario 3: search, ${kind} term pairs`)
        await both(warm('search.lua', '/', [tokensFile, queryFiles[kind]]), servers, 1)
        rows.push({
          scenario: `3 search ${kind}`,
          ...(await both(measure('search.lua', '/', [tokensFile, queryFiles[kind]]), servers)),
          goals: [{ ratio: 0.8, label: 'req/s ≥ 0.8', higherIsBetter: true, value: throughputRatio }],
        })
      }
      // The snippet endpoint against the plain search, both on Threadhouse, taking turns as two servers do: a
      // second handle on the same server answers the plain search.
      const [app] = servers
      const plain: Server = { ...app, name: 'threadhouse, plain search' }
      const snippets = (kind: keyof typeof queryFiles) => (server: Server, time: number) =>
        wrk(server, {
          script: 'search.lua',
          path: '/',
          args: [tokensFile, queryFiles[kind], server === plain ? '/api/v1/threads' : '/api/v1/search'],
          seconds: time,
          connections,
        })
      for (const kind of searchKinds) {
        log(`scenario 3: search with snippets, ${kind} term pairs`)
        await snippets(kind)(app, Math.min(2, seconds))
        rows.push({
          scenario: `3 search ${kind} with snippets ÷ without`,
          ...(await both(snippets(kind), [app, plain])),
          goals: [{ ratio: 0.5, label: 'req/s ≥ 0.5 (cost ≤ 2×)', higherIsBetter: true, value: throughputRatio }],
        })
      }
      for (const kind of searchKinds) {
        rows.push(await (onPostgres ? pgSearchSqlRow(kind) : searchSqlRow(kind)))
      }
    }
    if (selected.has('4')) {
      // One client shows the latency of an idle server; sixteen show the throughput. The PostgreSQL baseline has
      // no streams: there only the sends are measured.
      for (const clients of onPostgres ? [] : [1, loopThreads.length]) {
        log(`scenario 4: send + stream, ${clients} client(s)`)
        const row: Row = {
          scenario: `4 send + stream, ${clients} client${clients === 1 ? '' : 's'} (msg/s; first token)`,
          ...(await both((server, time) => sendAndStream(server, loopThreads.slice(0, clients), time), servers)),
        }
        rows.push(row)
        const done = (m: Measure | undefined) => `${m?.extra?.doneP50?.toFixed(2)}/${m?.extra?.doneP99?.toFixed(2)} ms`
        notes.push(
          `4, ${clients} client(s): POST → first \`token\` p50 ${row.app?.p50.toFixed(2)} ms (baseline ` +
            `${row.base?.p50.toFixed(2)} ms); POST → \`done\` p50/p99 ${done(row.app)} (baseline ${done(row.base)}).`,
        )
      }
      log('scenario 4: send only (wrk POST)')
      rows.push({
        scenario: '4 send (wrk POST)',
        ...(await both(measure('send.lua', '/', [sendFile]), servers)),
        goals: [{ ratio: 0.8, label: 'msg/s ≥ 0.8', higherIsBetter: true, value: throughputRatio }],
      })
    }
  } finally {
    for (const server of servers) await server.stop()
  }
  if (selected.has('4'))
    notes.push(onPostgres ? await pgRawInsertNote(rows.at(-1) as Row) : rawInsertNote(rows.at(-1) as Row))
}

if (onPostgres && (selected.has('5') || selected.has('6'))) log('scenarios 5 and 6 run on SQLite only')
if (selected.has('5') && !onPostgres) {
  log(`scenario 5: ${streamCount} streams at 10 tokens/s`)
  const measured: Partial<Record<'app' | 'base', Measure>> = {}
  for (const side of ['app', 'base'] as const) {
    const database = join(dir, side === 'app' ? 'app.sqlite' : 'base.sqlite')
    const server =
      side === 'app'
        ? await startServer('threadhouse', ['bun', 'src/index.ts'], appEnv(database, 100, 256))
        : await startServer('baseline', ['bun', 'bench/baseline.ts'], baseEnv(database, 100))
    try {
      measured[side] = await streamsScenario(server)
    } finally {
      await server.stop()
    }
  }
  const extraRatio = (key: string) => (r: Row) =>
    (r.app?.extra?.[key] ?? Number.NaN) / (r.base?.extra?.[key] ?? Number.NaN)
  rows.push({
    scenario: '5 SSE streams (events/s; lag)',
    app: measured.app,
    base: measured.base,
    goals: [
      { ratio: 2, label: 'memory/stream ≤ 2×', higherIsBetter: false, value: extraRatio('memoryPerStreamKiB') },
      { ratio: 1.3, label: 'CPU/event ≤ 1.3×', higherIsBetter: false, value: extraRatio('cpuPerEventUs') },
    ],
  })
  const describe = (m: Measure | undefined) =>
    m?.extra
      ? `${m.extra.held}/${m.extra.streams} held, ${m.extra.lost} lost, ${m.extra.tokens} tokens, ` +
        `${m.extra.inTimePercent?.toFixed(2)}% in time, ${m.extra.memoryPerStreamKiB?.toFixed(1)} KiB/stream, ` +
        `${m.extra.cpuPerEventUs?.toFixed(1)} µs CPU/event`
      : '–'
  notes.push(
    `5: Threadhouse: ${describe(measured.app)}. Baseline: ${describe(measured.base)}. ` +
      `"In time" = at most one period (100 ms) later than one period after the stream's previous event.`,
  )
}

const uploadRows: Row[] = []
const uploadNotes: string[] = []
if (selected.has('6') && !onPostgres) await uploadsScenario()

/**
 * Scenario 6, on its own pair of servers: each file uploaded by one client (the time an upload takes) and by
 * four (throughput), then thread-by-ID latency idle and while four clients upload. The baseline here does the
 * same checks on its main thread, as Threadhouse did before its inspect processes.
 */
async function uploadsScenario(): Promise<void> {
  log('scenario 6: making the upload files')
  const files = await uploadFiles()
  for (const file of files) {
    uploadNotes.push(
      `6: ${file.label}: ${file.bytes.length} bytes; the byte checks (sniffing, PDF parse, UTF-8) take ` +
        `${(await checkMs(file)).toFixed(2)} ms p50 on one thread${file.name.endsWith('.jpg') ? ' (sharp decodes on its own threads)' : ''}.`,
    )
  }
  // Every sampled thread, each given at most 25 files (the thread quota): uploads leave threads ready, so
  // sharing them with the earlier scenarios changes nothing.
  const rotation = { app: threadRotation(owned), base: threadRotation(owned) }
  const servers = {
    app: await startServer('threadhouse', ['bun', 'src/index.ts'], appEnv(join(dir, 'app.sqlite'), 0, 8)),
    base: await startServer('baseline', ['bun', 'bench/baseline.ts'], baseEnv(join(dir, 'base.sqlite'), 0)),
  }
  try {
    for (const file of files) {
      for (const clients of [1, 4]) {
        log(`scenario 6: ${file.label}, ${clients} client(s)`)
        const run = (side: 'app' | 'base') => timedUploads(servers[side], file, clients, rotation[side], seconds)
        uploadRows.push({
          scenario: `6 upload ${file.label}, ${clients} client${clients === 1 ? '' : 's'} (uploads/s; latency)`,
          app: await run('app'),
          base: await run('base'),
        })
      }
    }
    for (const side of ['app', 'base'] as const) {
      log(`scenario 6: thread by id on ${servers[side].name}, idle and beside four uploads`)
      uploadRows.push(await latencyBesideUploads(servers[side], files, rotation[side]))
    }
  } finally {
    await servers.app.stop()
    await servers.base.stop()
  }
}

/** GET /api/v1/threads/{id} on one server with nothing else running, then while four clients upload. */
async function latencyBesideUploads(server: Server, files: UploadFile[], nextThread: () => Pair): Promise<Row> {
  // Few connections: the question is how long a request waits behind upload checks, not how a saturated
  // server queues.
  const run = (s: Server) => wrk(s, { script: 'thread.lua', path: '/', args: [visibleFile], seconds, connections: 4 })
  await wrk(server, {
    script: 'thread.lua',
    path: '/',
    args: [visibleFile],
    seconds: Math.min(2, seconds),
    connections: 4,
  })
  const idle = await run(server)
  let stop = () => {}
  const uploads = uploadLoop(server, files, 4, nextThread, new Promise<void>((resolve) => (stop = resolve)))
  await Bun.sleep(500)
  const busy = await run(server)
  stop()
  const uploaded = await uploads
  const which = server.name === 'threadhouse' ? 'Threadhouse' : 'raw baseline, checks on its main thread'
  uploadNotes.push(
    `6: ${which}: ${uploaded.requests} uploads (${uploaded.rps.toFixed(1)}/s, ${uploaded.failures} failed) ` +
      `ran beside the busy thread-by-ID measurement.`,
  )
  return {
    scenario: `6 thread by id beside 4 uploads ÷ idle (${which})`,
    app: busy,
    base: idle,
    goals: [{ ratio: 2, label: 'p99 ≤ 2× idle', higherIsBetter: false, value: p99Ratio }],
  }
}

async function searchSqlRow(kind: keyof typeof info.terms): Promise<Row> {
  // The search without HTTP: the app's own service function (its SQL plus row mapping) against the
  // baseline's raw prepared statement, both in this process over the app's copy of the database.
  const db = openDatabase(join(dir, 'app.sqlite'))
  const links = linksFor(publicUrl)
  const reader = readers[0] as (typeof readers)[number]
  const caller = (await resolvePersonalAccessToken(sqliteStore(db).accessTokens, hashSecret(reader.token), Date.now()))
    ?.caller
  if (!caller) throw new Error('reader token did not resolve')
  const raw = db.$client.query<{ id: string; updateSeq: number }, [number, number, number, number, string, number]>(
    searchSql(columnsSql, '?1 = ?1 and t.organization_id = ?2 and (t.is_private = 0 or t.owner_id = ?3)'),
  )
  const textsOf = threadTexts(db.$client)
  const threads = sqliteStore(db).threads
  const app = await timeSearches(kind, (q) => listThreads(threads, caller, { q, limit: 50 }, links))
  const base = await timeSearches(kind, (q) => {
    const query = ftsQuery(db.$client, q)
    if (query === null) return []
    const candidates = (below: number, size: number) =>
      raw.all(0, caller.organizationId, caller.userId, size, query.fts, below)
    if (query.phrases.length === 0) return candidates(keyMask, 51)
    return phrasePage(51, query.phrases, candidates, textsOf, keyMask)
  })
  db.$client.close()
  return { scenario: `3 search SQL ${kind} (queries/s)`, app: { ...app, rss: Number.NaN }, base }
}

/** One search after another for a few seconds (at least 200), each term pair of the class in turn. */
async function timeSearches(kind: keyof typeof info.terms, run: (q: string) => unknown): Promise<Measure> {
  const samples: number[] = []
  const deadline = performance.now() + Math.min(seconds, 5) * 1000
  for (let i = 0; performance.now() < deadline || i < 200; i++) {
    const q = info.terms[kind][i % info.terms[kind].length] as string
    const started = performance.now()
    await run(q)
    samples.push(performance.now() - started)
  }
  const total = samples.reduce((a, b) => a + b, 0)
  return {
    rps: (samples.length / total) * 1000,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    rss: 0,
    failures: 0,
    requests: samples.length,
  }
}

async function pgSearchSqlRow(kind: keyof typeof info.terms): Promise<Row> {
  // As searchSqlRow, on PostgreSQL: the app's service function over its repository against the baseline's raw
  // statement (with its check for queued documents, as the app's), both from this process over the app's database
  // on loopback, one query at a time.
  const db = openPostgres(pgUrl('app'), { max: 2 })
  const raw = new Bun.SQL(pgUrl('app'), { max: 1 })
  const store = pgStore(db)
  const links = linksFor(publicUrl)
  const reader = readers[0] as (typeof readers)[number]
  const caller = (await resolvePersonalAccessToken(store.accessTokens, hashSecret(reader.token), Date.now()))?.caller
  if (!caller) throw new Error('reader token did not resolve')
  const statement = probesSql('$1::int = $1 and t.organization_id = $2 and (t.is_private = false or t.owner_id = $3)')
  const app = await timeSearches(kind, (q) => listThreads(store.threads, caller, { q, limit: 50 }, links))
  const base = await timeSearches(kind, async (q) => {
    const started = await startSearch(raw, q)
    if (started === null) return []
    const { head, search } = started
    const scope = { organizationId: caller.organizationId }
    const candidates = (below: number, size: number) =>
      raw.unsafe<{ id: string; updateSeq: string }[]>(statement, [
        0,
        caller.organizationId,
        caller.userId,
        ...probeParams(search, scope, below, size),
      ])
    if (search.phrases.length === 0) return candidates(head, 51)
    return phrasePage(51, search.phrases, candidates, (ids) => pgThreadTexts(raw, ids), head)
  })
  await db.$client.close()
  await raw.close()
  return { scenario: `3 search SQL ${kind} (queries/s)`, app: { ...app, rss: Number.NaN }, base }
}

function rawInsertNote(sendRow: Row): string {
  // The physical limit for a message write, one transaction each: the message row alone, and the row with
  // the thread's search document rewritten in the same transaction (its updated_at write, then the rewrite
  // the app defers: the triggers in db/migrations/sqlite/0006_deferred_search.sql and flushSearchIndex). Spread
  // over many threads, as real writes are.
  const sqlite = new Database(join(dir, 'seed.sqlite'), { strict: true })
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  const threadIds = sqlite.query<{ id: string }, []>('select id from threads order by random() limit 5000').all()
  const insert = sqlite.query(
    `insert into messages (id, thread_id, role, contents, text, active, created_at) values (?, ?, 'user', ?, ?, 1, ?)`,
  )
  const touch = sqlite.query('update threads set updated_at = ? where id = ?')
  const flush = searchFlusher(sqlite)
  const text = 'Could you summarise the budget for the weekend trip and list what is still missing from the plan?'
  const contents = JSON.stringify([{ type: 'text', text }])
  const rate = (indexed: boolean) => {
    const write = sqlite.transaction((threadId: string) => {
      insert.run(Bun.randomUUIDv7(), threadId, contents, text, Date.now())
      if (indexed) {
        touch.run(Date.now(), threadId)
        flush()
      }
    })
    const started = performance.now()
    let count = 0
    while (performance.now() - started < 2000) write((threadIds[count++ % threadIds.length] as { id: string }).id)
    return count / ((performance.now() - started) / 1000)
  }
  const rowOnly = rate(false)
  const withIndex = rate(true)
  sqlite.close()
  const app = sendRow.app?.rps ?? Number.NaN
  return (
    `4: raw message writes, one transaction each, no HTTP: ${rowOnly.toFixed(0)}/s for the row alone, ` +
    `${withIndex.toFixed(0)}/s with the thread's search document rewritten (the FTS index). Threadhouse's ` +
    `POST …/messages rate is ${(app / withIndex).toFixed(2)} of the latter, and it writes ${(2 * app).toFixed(0)} ` +
    `messages/s (${((2 * app) / withIndex).toFixed(2)}): each POST writes the question and its answer.`
  )
}

async function pgRawInsertNote(sendRow: Row): Promise<string> {
  // rawInsertNote on PostgreSQL, over the baseline's database once its server has stopped: one transaction per
  // message, the row alone or with its thread's updated_at written (the clock's turn and the queue, by the trigger)
  // and the thread's document rewritten (the app's rewrite, in raw SQL). A server writes from many connections at
  // once, so each is measured with one writer and with eight (over a pool of ten, the app's), and the better
  // figure is the reference.
  const raw = new Bun.SQL(pgUrl('base'), { max: 10 })
  const picked = await raw<{ id: string; seq: number }[]>`select id, seq from threads order by random() limit 5000`
  const text = 'Could you summarise the budget for the weekend trip and list what is still missing from the plan?'
  const contents = JSON.stringify([{ type: 'text', text }])
  const rate = async (indexed: boolean, writers: number) => {
    let count = 0
    const started = performance.now()
    const writer = async () => {
      while (performance.now() - started < 2000) {
        const thread = picked[count++ % picked.length] as { id: string; seq: number }
        await raw.begin(async (tx) => {
          await tx`insert into messages (id, thread_id, role, contents, text, created_at)
            values (${Bun.randomUUIDv7()}, ${thread.id}, 'user', ${contents}, ${text}, ${Date.now()})`
          if (indexed) {
            await tx`update threads set updated_at = ${Date.now()} where id = ${thread.id}`
            await rewriteDocuments(tx, [thread.seq])
          }
        })
      }
    }
    await Promise.all(Array.from({ length: writers }, writer))
    return count / ((performance.now() - started) / 1000)
  }
  const [rowOnly1, rowOnly8, withIndex1, withIndex8] = [
    await rate(false, 1),
    await rate(false, 8),
    await rate(true, 1),
    await rate(true, 8),
  ]
  await raw.close()
  const withIndex = Math.max(withIndex1, withIndex8)
  // wrk counts refused sends (409: the thread still waits for its previous answer) among its requests: only the
  // accepted ones wrote a message.
  const measured = sendRow.app
  const app = measured ? measured.rps * (1 - measured.failures / Math.max(1, measured.requests)) : Number.NaN
  return (
    `4: raw message writes, one transaction each, no HTTP: ${rowOnly1.toFixed(0)}/s (one writer) and ` +
    `${rowOnly8.toFixed(0)}/s (eight) for the row alone, ${withIndex1.toFixed(0)}/s and ${withIndex8.toFixed(0)}/s ` +
    `with the thread's search document rewritten. Threadhouse accepted ${app.toFixed(0)} POST …/messages a second ` +
    `(${(app / withIndex).toFixed(2)} of the better), each writing the question at once and its answer when ` +
    `generated: ${(2 * app).toFixed(0)} messages/s (${((2 * app) / withIndex).toFixed(2)}) if the answers keep pace.`
  )
}

async function streamsScenario(server: Server): Promise<Measure> {
  const answers = Math.min(256, streamCount)
  // Long enough to outlast opening every stream (slow on a busy machine) plus the measuring window.
  const words = Math.ceil((seconds + 15 + streamCount / 500) * 10)
  const text = Array.from({ length: words }, (_, i) => `word${i}`).join(' ')
  const targets: { token: string; threadId: string; messageId: string }[] = []
  for (const pair of streamThreads.slice(0, answers)) {
    const reply = await fetch(`${server.url}/api/v1/threads/${pair.threadId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pair.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    })
    const body = (await reply.json()) as { message_id: string }
    if (reply.status !== 201) throw new Error(`${server.name}: POST failed with ${reply.status}`)
    targets.push({ ...pair, messageId: body.message_id })
  }
  return holdStreams(server, targets, streamCount, seconds, 100)
}

const date = new Date().toISOString().slice(0, 10)
const pgVersion = cluster ? `, PostgreSQL ${await serverVersion()}` : ''
const heading =
  `Threadhouse benchmark${onPostgres ? ' on PostgreSQL' : ''}, ${date}: scale ${scale} (${info.threads} threads, ${info.messages} messages), ` +
  `${seconds} s per measurement (scenarios 1–4 over HTTP: ${rounds} × ${roundSeconds(rounds)} s per server, taking turns), wrk -t1 -c${connections}, ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}${pgVersion}. ` +
  `Load average (1 min) at the start ${loadBefore.toFixed(2)}, at the end ${(loadavg()[0] as number).toFixed(2)}.`
const footer =
  (onPostgres
    ? 'Ratios are Threadhouse on PostgreSQL ÷ baseline (bench/baseline.pg.ts: raw Bun.serve + Bun.SQL, the same ' +
      'statements and transactions) measured in the same run, each over its own copy of the database in one ' +
      `cluster (${Object.entries(pgSettings)
        .map(([name, value]) => `${name}=${value}`)
        .join(', ')}, fsync and synchronous_commit off), ` +
      'both with a pool of 10 connections; '
    : 'Ratios are Threadhouse ÷ baseline (bench/baseline.ts: raw Bun.serve + bun:sqlite) measured in the same run, ') +
  "the servers taking turns in rounds; each HTTP figure of scenarios 1-4 is the median of its server's rounds. " +
  'Latency columns are milliseconds; for scenario 4 they are POST → first `token` event, for scenario 5 the ' +
  'delivery lag. RSS is the peak during the measurement, child processes included (Threadhouse checks uploads ' +
  'in child processes). "3 search SQL" rows time the search without HTTP. "With snippets ÷ without" rows ' +
  'compare Threadhouse with itself: GET /api/v1/search (each thread with its passage) against the same page of ' +
  'GET /api/v1/threads?q=.'
const uploadsFooter =
  'Upload rows: Threadhouse against the raw baseline doing the same checks on its main thread; latency is the ' +
  'whole upload request. "Beside 4 uploads ÷ idle" rows compare one server with itself, wrk -c4: the ratio is ' +
  'how much its thread-by-ID p99 rises while four clients upload the three files in turn. RSS includes child ' +
  "processes: Threadhouse's inspect processes."
const report = (tableRows: Row[], lines: string[], explained: string) =>
  [`# ${heading}`, '', table(tableRows), '', ...lines.map((note) => `- ${note}`), '', explained, ''].join('\n')
mkdirSync(results, { recursive: true })
// Scenario 6 has its own file, so that a run of it alone never replaces the other scenarios' results.
if (rows.length > 0) {
  const output = report(rows, notes, footer)
  console.log(output)
  writeFileSync(join(results, `${reportName}.md`), output)
  const title = `Threadhouse${onPostgres ? ' on PostgreSQL' : ''} ÷ baseline, ${date}, scale ${scale}`
  writeFileSync(join(results, `${reportName}.svg`), chart(rows, title))
  log(`wrote ${join(results, `${reportName}.md`)} and ${reportName}.svg`)
}
if (uploadRows.length > 0) {
  const output = report(uploadRows, uploadNotes, uploadsFooter)
  console.log(output)
  writeFileSync(join(results, 'uploads.md'), output)
  log(`wrote ${join(results, 'uploads.md')}`)
}
await cluster?.stop()
rmSync(dir, { recursive: true, force: true })

async function serverVersion(): Promise<string> {
  const sql = new Bun.SQL(pgUrl('app'), { max: 1 })
  const [row] = await sql<{ server_version: string }[]>`show server_version`
  await sql.close()
  return row?.server_version ?? '?'
}
