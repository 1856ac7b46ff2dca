// What counting for GET /metrics costs a request (docs/operations.md, Metrics), in one run:
//   - GET /healthz on two real servers started alike on fresh SQLite files, one with METRICS_TOKEN (every request
//     counted by route and status, and timed into the latency histogram) and one without (nothing counted), driven by
//     wrk in alternating turns so that the machine's other work falls on both alike; requests/s and p99 of each,
//     and their ratio;
//   - the counting alone, in process: one `request()` call (counter and histogram) in ns, over a spread of routes.
// Not part of `bun run bench`; needs wrk:
//   bun run bench:metrics            (BENCH_DURATION seconds per turn, default 3; BENCH_ROUNDS turns each, default 5;
//                                     BENCH_CONNECTIONS, default 16)
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMetrics } from '../src/metrics/metrics'
import { type Measure, percentile, type Server, startServer, wrk } from './load'

const seconds = Number(process.env.BENCH_DURATION ?? 3)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16)
const loadBefore = loadavg()[0] as number
const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bench-metrics-'))
const log = (line: string) => console.error(`[bench] ${line}`)

function env(name: string, extra: Record<string, string>): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_PATH: join(dir, `${name}.sqlite`),
    UPLOADS_DIR: join(dir, `${name}-uploads`),
    RATE_LIMIT_IP_PER_MINUTE: '0',
    ...extra,
  }
}

/** The in-process cost of counting one request, in ns: 20 routes × 3 statuses, as a server sees a spread. */
function countingCost(): { median: number; p99: number } {
  const metrics = createMetrics()
  metrics.attach({ instanceId: 'bench', answers: () => ({ queued: 0, running: 0 }), openStreams: () => 0 })
  const routes = Array.from({ length: 20 }, (_, i) => `/api/v1/route${i}/:id`)
  const statuses = [200, 404, 429]
  const batch = 10_000
  const perCall: number[] = []
  for (let round = 0; round < 50; round++) {
    const started = Bun.nanoseconds()
    for (let i = 0; i < batch; i++) {
      metrics.request('GET', routes[i % 20] as string, statuses[i % 3] as number, 1.5)
    }
    if (round >= 5) perCall.push((Bun.nanoseconds() - started) / batch)
  }
  return { median: percentile(perCall, 50), p99: percentile(perCall, 99) }
}

const servers: Server[] = []
try {
  const command = ['bun', 'src/index.ts']
  // Both log a line per request (LOG_LEVEL info, as in production), so the difference is the counting alone.
  const off = await startServer('metrics off', command, env('off', {}))
  servers.push(off)
  const on = await startServer('metrics on', command, env('on', { METRICS_TOKEN: 'bench-metrics-token-0123456789' }))
  servers.push(on)
  const run = { script: 'healthz.lua', path: '/healthz', args: [], seconds, connections }
  // A first turn each, not counted: JIT and caches warm.
  await wrk(off, { ...run, seconds: 1 })
  await wrk(on, { ...run, seconds: 1 })
  const turns = { off: [] as Measure[], on: [] as Measure[] }
  for (let round = 0; round < rounds; round++) {
    // Alternating which goes first, so neither always follows the other's garbage collection.
    const order = round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)
    for (const which of order) {
      const measured = await wrk(which === 'off' ? off : on, run)
      if (measured.failures > 0) throw new Error(`${which}: ${measured.failures} failed requests`)
      turns[which].push(measured)
      log(`round ${round + 1} ${which}: ${measured.rps.toFixed(0)} req/s, p99 ${measured.p99.toFixed(2)} ms`)
    }
  }
  const scraped = await fetch(`${on.url}/metrics`, {
    headers: { authorization: 'Bearer bench-metrics-token-0123456789' },
  }).then((reply) => reply.text())
  const counted = scraped.match(/threadhouse_http_requests_total\{[^}]*route="\/healthz"[^}]*\} (\d+)/)?.[1]
  const median = (values: number[]) => percentile(values, 50)
  const rps = { off: median(turns.off.map((m) => m.rps)), on: median(turns.on.map((m) => m.rps)) }
  const p99 = { off: median(turns.off.map((m) => m.p99)), on: median(turns.on.map((m) => m.p99)) }
  const cost = countingCost()
  const loadAfter = loadavg()[0] as number
  console.log(`GET /healthz, ${connections} connections, ${rounds} turns of ${seconds} s each (medians)`)
  console.log(`  metrics off  ${rps.off.toFixed(0).padStart(7)} req/s  p99 ${p99.off.toFixed(2)} ms`)
  console.log(`  metrics on   ${rps.on.toFixed(0).padStart(7)} req/s  p99 ${p99.on.toFixed(2)} ms`)
  console.log(`  on / off     ${(rps.on / rps.off).toFixed(3)} of the requests/s`)
  console.log(`  the on server counted ${counted ?? 'no'} /healthz requests`)
  console.log(`counting one request in process: median ${cost.median.toFixed(0)} ns, p99 ${cost.p99.toFixed(0)} ns`)
  console.log(`load average (1 min): ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`)
} finally {
  for (const server of servers) await server.stop()
  rmSync(dir, { recursive: true, force: true })
}
