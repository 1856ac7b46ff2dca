// What recording usage and checking budgets cost the send path (issue 37; docs/quotas.md), in one run per backend:
// the same sends against two real servers, this checkout's (every answer's usage written in its finishing
// transaction, and a budget set for the organization and for each member, so every send reads both) and one built
// from the commit before usage and quotas landed (`BENCH_WITHOUT`, default 71a8739^), each on a fresh database of
// its own, driven in alternating turns so that the machine's other work falls on both alike. Per backend:
//   - send + stream, 1 client: answers/s and POST → first token (the latency a person feels);
//   - send + stream, 16 clients: answers/s;
//   - send only (wrk POST, 32 connections over 2,000 threads): sends/s;
// each with the CPU per answer (server and database). Two servers of the same code differ by up to 10% here
// (bench/results/quotas.md), more than the 3% asked about, so each backend also times the added parts alone in
// process (bench/quota-parts.ts) and states them as a share of a whole answer's CPU.
// BENCH_WITH (a commit, or a folder holding a changed copy with node_modules) replaces this checkout, and
// BENCH_WITHOUT (the same) the commit before usage and quotas; BENCH_WITHOUT=accounting compares with this checkout's
// HEAD with accounting taken out (bench/without-accounting.patch), the measure of accounting alone; BENCH_BUDGETS=0
// sets no budget; BENCH_ONLY=2,3 runs only those scenarios; BENCH_PROFILE=DIR profiles both servers.
// Not part of `bun run bench`; needs wrk, git, and Debian's postgresql for the PostgreSQL half:
//   bun run bench:quotas     (BENCH_BACKENDS, default "sqlite postgres"; BENCH_DURATION seconds per turn, default 5;
//                             BENCH_ROUNDS turns each, default 5)
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { type PostgresCluster, startPostgres } from '../test/support/postgres'
import {
  cpuSeconds,
  type Measure,
  percentile,
  postgresCpuSeconds,
  type Server,
  sendAndStream,
  startServer,
  wrk,
} from './load'

const backends = (process.env.BENCH_BACKENDS ?? 'sqlite postgres').split(/\s+/).filter(Boolean)
const seconds = Number(process.env.BENCH_DURATION ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const without = process.env.BENCH_WITHOUT ?? '71a8739^'
// Whether this checkout's server has budgets set (default): without them a send reads only that there are none.
const budgets = process.env.BENCH_BUDGETS !== '0'
const only = process.env.BENCH_ONLY?.split(',').map(Number)
const repo = join(import.meta.dir, '..')
const dir = mkdtempSync(join(tmpdir(), 'threadhouse-bench-quotas-'))
const log = (line: string) => console.error(`[bench] ${line}`)
const loadBefore = loadavg()[0] as number

/** The server before usage and quotas: that commit's tree, with this checkout's node_modules (a superset). */
function checkoutOf(commit: string, name: string): string {
  const target = join(dir, name)
  const archive = Bun.spawnSync(
    ['sh', '-c', `mkdir -p "${target}" && git archive "${commit}" | tar -x -C "${target}"`],
    {
      cwd: repo,
    },
  )
  if (!archive.success) throw new Error(`git archive ${commit} failed: ${archive.stderr.toString()}`)
  symlinkSync(join(repo, 'node_modules'), join(target, 'node_modules'))
  return target
}

async function cli(checkout: string, env: Record<string, string>, ...args: string[]): Promise<string> {
  const child = Bun.spawn(['bun', join(checkout, 'src/cli.ts'), ...args], {
    cwd: checkout,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([child.stdout.text(), child.stderr.text(), child.exited])
  if (code !== 0) throw new Error(`cli ${args[0]} failed: ${err}`)
  return out
}

interface Side {
  name: 'with' | 'without'
  server: Server
  /** 16 clients' threads for the send + stream loops. */
  loops: { token: string; threadId: string }[][]
  /** "token thread-id" lines for wrk's POSTs. */
  sendFile: string
}

/** A server from `checkout` on a fresh database, with one member, their token and their threads. */
async function prepare(
  name: Side['name'],
  checkout: string,
  store: Record<string, string>,
  budgets: boolean,
): Promise<Side> {
  const env = {
    ...store,
    UPLOADS_DIR: join(dir, `${name}-uploads`),
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: 'http://127.0.0.1',
    LLM_PROVIDER: 'echo',
    ECHO_TOKEN_DELAY_MS: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    RATE_LIMIT_API_PER_MINUTE: '1000000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000000',
    RATE_LIMIT_AUTH_PER_MINUTE: '1000000000',
  }
  // BENCH_PROFILE=DIR writes each server's CPU profile (Markdown) under DIR/<side> when it stops.
  const profile = process.env.BENCH_PROFILE
    ? ['--cpu-prof-md', `--cpu-prof-dir=${join(process.env.BENCH_PROFILE, name)}`]
    : []
  const server = await startServer(name, ['bun', ...profile, join(checkout, 'src/index.ts')], env)
  try {
    return await populate(name, checkout, env, server, budgets)
  } catch (error) {
    await server.stop()
    throw error
  }
}

/** The member, their token, budgets when asked, and their threads, on a started server. */
async function populate(
  name: Side['name'],
  checkout: string,
  env: Record<string, string>,
  server: Server,
  budgets: boolean,
): Promise<Side> {
  await cli(
    checkout,
    env,
    'user:create',
    '--email',
    'ada@example.com',
    '--password',
    'a long password',
    '--org',
    'team',
  )
  const token = (
    await cli(checkout, env, 'token:create', '--email', 'ada@example.com', '--scopes', 'threads:read threads:write')
  )
    .trim()
    .split('\n')
    .at(-1) as string
  if (budgets) {
    // Far above what the run uses: every send reads the budgets and the month's totals, and none is refused.
    await cli(checkout, env, 'quota:set', '--org', 'team', '--tokens', '1000000000000', '--cost', '1000000')
    await cli(checkout, env, 'quota:set', '--org', 'team', '--member-default', '--tokens', '1000000000000')
  }
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const threads: string[] = []
  for (let i = 0; i < 16 * 16 + 2000; i++) {
    const created = await fetch(`${server.url}/api/v1/threads`, { method: 'POST', headers, body: '{}' })
    if (created.status !== 201) throw new Error(`${name}: creating a thread gave ${created.status}`)
    threads.push(((await created.json()) as { thread_id: string }).thread_id)
  }
  const pair = (threadId: string) => ({ token, threadId })
  const loops = Array.from({ length: 16 }, (_, client) => threads.slice(client * 16, (client + 1) * 16).map(pair))
  const sendFile = join(dir, `${name}-send.txt`)
  writeFileSync(
    sendFile,
    `${threads
      .slice(256)
      .map((id) => `${token} ${id}`)
      .join('\n')}\n`,
  )
  return { name, server, loops, sendFile }
}

/**
 * A turn's measure with the CPU it cost per answer or send, in ms: the server's (its worker included) and, on
 * PostgreSQL, the database's. Throughput on a 2-core machine swings with whatever else runs; CPU per request less so.
 */
async function withCpu(side: Side, backend: string, run: () => Promise<Measure>): Promise<Measure> {
  const cpu = () => cpuSeconds(side.server.pid) + (backend === 'postgres' ? postgresCpuSeconds() : 0)
  const before = cpu()
  const measured = await run()
  const spent = cpu() - before
  return { ...measured, extra: { ...measured.extra, cpuMs: (spent * 1000) / Math.max(1, measured.requests) } }
}

type Scenario = { label: string; run: (side: Side) => Promise<Measure> }

const scenarios: Scenario[] = [
  { label: 'send + stream, 1 client', run: (side) => sendAndStream(side.server, side.loops.slice(0, 1), seconds) },
  { label: 'send + stream, 16 clients', run: (side) => sendAndStream(side.server, side.loops, seconds) },
  {
    label: 'send only (wrk POST, 32 connections)',
    run: (side) => wrk(side.server, { script: 'send.lua', path: '/', args: [side.sendFile], seconds, connections: 32 }),
  },
]

const median = (values: number[]) => percentile(values, 50)
const lines: string[] = []
/** The CPU one answer costs with 16 clients sending (this checkout's server), by backend: the parts' denominator. */
const perAnswerCpuMs: Record<string, number> = {}

/** The parts timed alone in process (bench/quota-parts.ts), as a share of what a whole answer costs. */
async function partsLine(backend: string): Promise<string> {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'quota-parts.ts')], {
    env: { ...process.env, THREADHOUSE_TEST_BACKEND: backend },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const parts = JSON.parse((await child.stdout.text()).trim().split('\n').at(-1) as string) as Record<string, number>
  const writes = (parts.finishWithUs ?? 0) - (parts.finishWithoutUs ?? 0)
  const writesCpu = (parts.finishCpuWithUs ?? 0) - (parts.finishCpuWithoutUs ?? 0)
  const addedCpu = (parts.checkCpuUs ?? 0) + writesCpu + (parts.meterUs ?? 0)
  const whole = (perAnswerCpuMs[backend] ?? Number.NaN) * 1000
  const us = (value: number | undefined) => `${(value ?? Number.NaN).toFixed(1)} µs`
  return (
    `  in process, wall: check ${us(parts.checkUs)}, usage writes ${us(writes)} (finish ${us(parts.finishWithoutUs)} → ` +
    `${us(parts.finishWithUs)}), meter ${us(parts.meterUs)}\n` +
    `  in process, CPU (Threadhouse's and the database's): check ${us(parts.checkCpuUs)}, usage writes ${us(writesCpu)}, ` +
    `meter ${us(parts.meterUs)}: ${us(addedCpu)} an answer, ${((100 * addedCpu) / whole).toFixed(1)}% of the ` +
    `${whole.toFixed(0)} µs of CPU a whole answer took (16 clients)`
  )
}

/**
 * This checkout with accounting taken out (bench/without-accounting.patch: no budget read before a send, no usage
 * written with an answer): the two sides then differ in nothing else.
 */
function withoutAccounting(): string {
  const target = checkoutOf('HEAD', 'without')
  const applied = Bun.spawnSync(['git', 'apply', join(repo, 'bench/without-accounting.patch')], { cwd: target })
  if (!applied.success) throw new Error(`the patch did not apply: ${applied.stderr.toString()}`)
  return target
}

const checkout =
  without === 'accounting' ? withoutAccounting() : existsSync(without) ? without : checkoutOf(without, 'without')
// Another commit in place of this checkout (BENCH_WITH), to find which change costs what.
// A folder (a changed copy of this checkout, with node_modules) is taken as it is.
const withCheckout = process.env.BENCH_WITH
  ? existsSync(process.env.BENCH_WITH)
    ? process.env.BENCH_WITH
    : checkoutOf(process.env.BENCH_WITH, 'with')
  : repo
let cluster: PostgresCluster | undefined
try {
  for (const backend of backends) {
    const store = async (name: string): Promise<Record<string, string>> => {
      if (backend === 'sqlite') return { DATABASE_PATH: join(dir, `${name}.sqlite`) }
      cluster ??= await startPostgres()
      await cluster.admin(`create database ${name}`)
      return { DATABASE_URL: cluster.url(name) }
    }
    log(`${backend}: starting both servers`)
    const sides = [
      await prepare('with', withCheckout, await store(`${backend}_with`), budgets),
      await prepare('without', checkout, await store(`${backend}_without`), false),
    ]
    try {
      lines.push(`${backend}:`)
      for (const scenario of scenarios.filter((_, index) => !only || only.includes(index + 1))) {
        // A first turn each, not counted: JIT and caches warm.
        for (const side of sides) await scenario.run(side)
        const turns: Record<Side['name'], Measure[]> = { with: [], without: [] }
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? sides : [...sides].reverse()
          for (const side of order) {
            const measured = await withCpu(side, backend, () => scenario.run(side))
            if (measured.failures > 0) log(`${backend} ${scenario.label} ${side.name}: ${measured.failures} failed`)
            turns[side.name].push(measured)
            log(
              `${backend} ${scenario.label} ${side.name}: ${measured.rps.toFixed(0)}/s, p50 ${measured.p50.toFixed(2)} ms`,
            )
          }
        }
        const rps = { with: median(turns.with.map((m) => m.rps)), without: median(turns.without.map((m) => m.rps)) }
        const p50 = { with: median(turns.with.map((m) => m.p50)), without: median(turns.without.map((m) => m.p50)) }
        const cpu = {
          with: median(turns.with.map((m) => m.extra?.cpuMs ?? Number.NaN)),
          without: median(turns.without.map((m) => m.extra?.cpuMs ?? Number.NaN)),
        }
        const failures = [...turns.with, ...turns.without].reduce((sum, m) => sum + m.failures, 0)
        if (scenario.label.includes('16 clients')) perAnswerCpuMs[backend] = cpu.with
        lines.push(
          `  ${scenario.label.padEnd(38)} with ${rps.with.toFixed(0).padStart(6)}/s p50 ${p50.with.toFixed(2)} ms` +
            ` CPU ${cpu.with.toFixed(3)} ms  without ${rps.without.toFixed(0).padStart(6)}/s p50 ` +
            `${p50.without.toFixed(2)} ms CPU ${cpu.without.toFixed(3)} ms  rate ratio ` +
            `${(rps.with / rps.without).toFixed(3)}, CPU ratio ${(cpu.with / cpu.without).toFixed(3)}` +
            `${failures ? `  (${failures} failures)` : ''}`,
        )
      }
    } finally {
      for (const side of sides) await side.server.stop()
    }
    lines.push(await partsLine(backend))
  }
} finally {
  await cluster?.stop()
  rmSync(dir, { recursive: true, force: true })
}
console.log(`${rounds} turns of ${seconds} s each per side (medians); ratio is with / without, of the rate`)
for (const line of lines) console.log(line)
console.log(`load average (1 min): ${loadBefore.toFixed(2)} before, ${(loadavg()[0] as number).toFixed(2)} after`)
