// What the costliest /mcp bodies a token holder may send do to every other request (issue 33): two clients post one
// body each, back to back, while a third asks for /healthz one request at a time; /healthz's p50 and p99 are set
// beside the same server idle and beside a raw Bun server (this file with MCP_BODIES_BASELINE=1) that does the
// least any server must do with such a body: read it, JSON.parse it, answer. The goal: p99 under 100 ms beside two
// worst-case bodies. Threadhouse runs on SQLite, and with BENCH_POSTGRES=1 also on a throwaway PostgreSQL cluster
// started as the tests start theirs. Not part of `bun run bench`:
//   bun bench/mcp-bodies.ts            (BENCH_DURATION seconds per measurement, default 10; MCP_BODIES picks
//                                       loads, default idle,1,2,3: the three bodies in bodiesFor's order)
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { migratePostgres, openPostgres } from '../src/db/postgres'
import { maxFileBytes, maxMcpMessageValues } from '../src/mcp/model'
import { maxJsonBodyBytes } from '../src/shared/body'
import { type Store, sqliteStore } from '../src/store'
import { pgStore } from '../src/store/postgres'
import { type PostgresCluster, startPostgres } from '../test/support/postgres'
import { percentile, type Server, settle, startServer } from './load'
import { benchOwner } from './micro'

interface Body {
  label: string
  bytes: Uint8Array
}

interface Row {
  server: string
  load: string
  p50: number
  p99: number
  probes: number
  /** The bodies answered in the time, by status: a fast run of refusals must say so. */
  answers: string
}

const seconds = Number(process.env.BENCH_DURATION ?? 10)
const senders = 2

if (process.env.MCP_BODIES_BASELINE === '1') serveBaseline()
else await measureAll()

/** The yardstick: Bun.serve and bun:sqlite, with /healthz running one statement as Threadhouse's pings its database. */
function serveBaseline(): void {
  const ping = new Database(':memory:').query('select 1')
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    maxRequestBodySize: 16 * 1024 * 1024,
    async fetch(request) {
      if (new URL(request.url).pathname === '/healthz') {
        ping.get()
        return Response.json({ status: 'ok' })
      }
      let id: unknown = null
      try {
        id = (JSON.parse(await request.text()) as { id?: unknown }).id ?? null
      } catch {}
      return Response.json({ jsonrpc: '2.0', id, result: {} })
    },
  })
  console.error(JSON.stringify({ msg: 'listening', port: server.port }))
}

/** What issue 33 sent, the largest upload, and the widest message /mcp still hands to the SDK. */
function bodiesFor(threadId: string): Body[] {
  const encode = (text: string) => new TextEncoder().encode(text)
  const wide = Array.from({ length: 330_000 }, (_, i) => `"k${i}":0`).join(',')
  // Random bytes, so base64 of a file the inspection refuses only after it was decoded and sniffed.
  const chunk = Buffer.from(crypto.getRandomValues(new Uint8Array(48 * 1024))).toString('base64')
  const base64 = chunk.repeat(Math.ceil(maxFileBytes / (48 * 1024))).slice(0, Math.floor(maxFileBytes / 3) * 4)
  const upload = {
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: {
      name: 'upload_attachment',
      arguments: { thread_id: threadId, filename: 'noise.bin', content_base64: base64 },
    },
  }
  // As many members as a message may hold besides its own four (jsonrpc, id, method, params), each a string long
  // enough to bring the whole near the API's bound.
  const members = maxMcpMessageValues - 4
  const pad = 'x'.repeat(Math.floor((maxJsonBodyBytes - 200) / members) - 12)
  const widest = Array.from({ length: members }, (_, i) => `"k${String(i).padStart(4, '0')}":"${pad}"`).join(',')
  return [
    {
      label: 'tools/list, 330,000 params keys',
      bytes: encode(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{${wide}}}`),
    },
    { label: 'upload_attachment, largest file', bytes: encode(JSON.stringify(upload)) },
    {
      label: `tools/list, ${members} params keys`,
      bytes: encode(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{${widest}}}`),
    },
  ]
}

/** Posts `body` to /mcp and reads the whole answer; its status. */
async function post(server: Server, token: string, body: Body): Promise<number> {
  const reply = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: body.bytes,
  })
  await reply.arrayBuffer()
  return reply.status
}

/** /healthz one request at a time for `seconds`, beside `senders` clients posting `body` back to back. */
async function measure(server: Server, token: string, body: Body | null): Promise<Row> {
  // Once first, so that what the first of a kind starts (the MCP SDK's import, the inspect processes) is not timed.
  if (body) await post(server, token, body)
  await settle(server)
  const statuses = new Map<number, number>()
  let stopped = false
  async function send(): Promise<void> {
    while (!stopped && body) {
      const status = await post(server, token, body)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }
  const times: number[] = []
  async function probe(): Promise<void> {
    const end = performance.now() + seconds * 1000
    while (performance.now() < end) {
      const started = performance.now()
      const reply = await fetch(`${server.url}/healthz`)
      await reply.arrayBuffer()
      if (reply.status !== 200) throw new Error(`${server.name}: /healthz answered ${reply.status}`)
      times.push(performance.now() - started)
    }
    stopped = true
  }
  await Promise.all([probe(), ...Array.from({ length: senders }, send)])
  times.sort((a, b) => a - b)
  const answers = [...statuses].map(([status, count]) => `${count} × ${status}`).join(', ')
  return {
    server: server.name,
    load: body ? `${senders} × ${body.label} (${(body.bytes.byteLength / 1e6).toFixed(2)} MB)` : 'idle',
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    probes: times.length,
    answers: answers || '',
  }
}

/** Threadhouse's environment over its store, and an owner's token with a thread to upload to. */
async function prepare(
  store: Store,
  storeEnv: Record<string, string>,
  name: string,
  dir: string,
): Promise<{ server: Server; token: string; threadId: string }> {
  const { token } = await benchOwner(store, 'bench', ['threads:read', 'threads:write'])
  const server = await startServer(name, ['bun', 'src/index.ts'], {
    ...storeEnv,
    UPLOADS_DIR: join(dir, `${name}-uploads`),
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: 'http://127.0.0.1:3000',
    LLM_PROVIDER: 'echo',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    RATE_LIMIT_API_PER_MINUTE: '1000000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000000',
  })
  const created = await fetch(`${server.url}/api/v1/threads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'uploads' }),
  })
  if (created.status !== 201) throw new Error(`creating a thread answered ${created.status}`)
  const { thread_id: id } = (await created.json()) as { thread_id: string }
  return { server, token, threadId: id }
}

async function measureAll(): Promise<void> {
  const loadBefore = loadavg()[0] as number
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-mcp-bodies-'))
  const log = (line: string) => console.error(`[mcp-bodies] ${line}`)
  const servers: Server[] = []
  let cluster: PostgresCluster | undefined
  try {
    const db = openDatabase(join(dir, 'app.sqlite'))
    migrateDatabase(db)
    const sqlite = await prepare(sqliteStore(db), { DATABASE_PATH: join(dir, 'app.sqlite') }, 'threadhouse', dir)
    db.$client.close()
    servers.push(sqlite.server)
    const targets = [sqlite]
    if (process.env.BENCH_POSTGRES === '1') {
      cluster = await startPostgres()
      await cluster.admin('create database bench')
      const pg = openPostgres(cluster.url('bench'))
      await migratePostgres(pg)
      const onPg = await prepare(pgStore(pg), { DATABASE_URL: cluster.url('bench') }, 'threadhouse-pg', dir)
      await pg.$client.close()
      servers.push(onPg.server)
      targets.push(onPg)
    }
    const baseline = await startServer('baseline', ['bun', 'bench/mcp-bodies.ts'], { MCP_BODIES_BASELINE: '1' })
    servers.push(baseline)
    const chosen = (process.env.MCP_BODIES ?? 'idle,1,2,3').split(',')
    const bodies = [null, ...bodiesFor(sqlite.threadId)].filter((_, i) => chosen.includes(i ? String(i) : 'idle'))
    const rows: Row[] = []
    for (const body of bodies) {
      // The servers take turns within each load, so that the machine's drift is shared between them.
      for (const target of [...targets, { server: baseline, token: '', threadId: '' }]) {
        // Each Threadhouse uploads to a thread of its own owner.
        const own = body && target.threadId ? withThread(body, sqlite.threadId, target.threadId) : body
        log(`${target.server.name}: ${own?.label ?? 'idle'}`)
        rows.push(await measure(target.server, target.token, own))
      }
    }
    const loadAfter = loadavg()[0] as number
    console.log(
      `${seconds} s per row; /healthz one request at a time; load average ${loadBefore.toFixed(1)} before, ` +
        `${loadAfter.toFixed(1)} after\n`,
    )
    console.log('| server | beside | /healthz p50 (ms) | p99 (ms) | probes | bodies answered |')
    console.log('| --- | --- | --- | --- | --- | --- |')
    for (const row of rows) {
      const cells = [row.server, row.load, row.p50.toFixed(1), row.p99.toFixed(1), row.probes, row.answers]
      console.log(`| ${cells.join(' | ')} |`)
    }
  } finally {
    for (const server of servers) await server.stop()
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The same body naming another thread: the same length, since both are UUIDs. */
function withThread(body: Body, from: string, to: string): Body {
  if (from === to) return body
  const text = new TextDecoder().decode(body.bytes).replace(from, to)
  return { label: body.label, bytes: new TextEncoder().encode(text) }
}
