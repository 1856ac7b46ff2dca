// Slow readers (not part of `bun run bench`): 512 change feeds (8 users of one organization × 64, the most
// STREAM_LIMIT_PER_USER lets each hold) whose clients send their request and never read a byte, while the users'
// threads are renamed about 184 times a second over HTTP. Every 5 s it prints the server's RSS, how many idle feeds
// are still open, and what `ss -tm` shows the kernel holding for the server's end of them. SQLite, loopback only.
//
//   bun bench/slow-readers.ts
//   BENCH_DURATION=90 BENCH_RATE=184 STREAM_BACKLOG_BYTES=1048576 bun bench/slow-readers.ts
//   BENCH_SERVER_DIR=/tmp/old bun bench/slow-readers.ts   # another checkout's server (its own node_modules), a baseline
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { sqliteStore } from '../src/store'
import { testOrigin, tokenHolder } from '../test/support/audit'
import { rssBytes, startServer } from './load'

const seconds = Number(process.env.BENCH_DURATION ?? 90)
const rate = Number(process.env.BENCH_RATE ?? 184)
const users = 8
const feedsPerUser = 64
// More threads than changes a second: a thread changed twice between two polls is one event (as it is now).
const threadsPerUser = 32
const mb = (bytes: number) => (bytes / 1e6).toFixed(1)

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-slow-readers-'))
const database = join(dir, 'app.sqlite')

/** Eight users of one organization, each with a few public threads: every feed hears of every change. */
async function seed(): Promise<{ token: string; threads: string[] }[]> {
  const sqlite = openDatabase(database)
  migrateDatabase(sqlite)
  const store = sqliteStore(sqlite)
  const seeded: { token: string; threads: string[] }[] = []
  for (let i = 0; i < users; i++) {
    const user = await store.users.create(
      {
        sub: Bun.randomUUIDv7(),
        email: `reader${i}@bench.example`,
        name: null,
        role: i === 0 ? 'owner' : 'member',
        passwordHash: 'not used',
        mustChangePassword: false,
        organizationSlug: 'default',
        mayCreateOrganization: i === 0,
      },
      Date.now(),
    )
    if (typeof user !== 'object') throw new Error(user)
    const scopes = ['threads:read' as const, 'threads:write' as const]
    const token = await createPersonalAccessToken(
      store.accessTokens,
      { user: await tokenHolder(store, user.id), name: 'bench', scopes },
      0,
      testOrigin,
    )
    seeded.push({ token, threads: [] })
  }
  sqlite.$client.close()
  return seeded
}

/** What the kernel holds for the server's end of each established connection: Send-Q, and skmem's w and tb. */
function kernelQueues(port: number): { sendQ: number; queued: number; sndbuf: number }[] {
  const out = Bun.spawnSync(['ss', '-tmnH', 'state', 'established', `( sport = :${port} )`]).stdout.toString()
  const sockets: { sendQ: number; queued: number; sndbuf: number }[] = []
  const lines = out.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const fields = (lines[i] ?? '').trim().split(/\s+/)
    const skmem = lines[i + 1]?.match(/tb(\d+),f\d+,w(\d+)/)
    if (fields.length < 4 || !skmem) continue
    sockets.push({ sendQ: Number(fields[1]), sndbuf: Number(skmem[1]), queued: Number(skmem[2]) })
    i++
  }
  return sockets
}

const seeded = await seed()
const root = process.env.BENCH_SERVER_DIR ?? join(import.meta.dir, '..')
const server = await startServer('threadhouse', ['bun', join(root, 'src/index.ts')], {
  DATABASE_PATH: database,
  UPLOADS_DIR: join(dir, 'uploads'),
  PORT: '0',
  HOST: '127.0.0.1',
  PUBLIC_URL: 'http://127.0.0.1',
  LLM_PROVIDER: 'echo',
  LOG_LEVEL: 'info',
  NODE_ENV: 'production',
  RATE_LIMIT_API_PER_MINUTE: '1000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000',
})
const api = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  })

try {
  for (const user of seeded) {
    for (let t = 0; t < threadsPerUser; t++) {
      const created = await api('/api/v1/threads', user.token, { method: 'POST', body: JSON.stringify({ name: 't' }) })
      user.threads.push(((await created.json()) as { thread_id: string }).thread_id)
    }
  }
  const rssStart = rssBytes(server.pid)

  // The idle feeds: the request, then not one byte read.
  const sockets: Socket[] = []
  let closed = 0
  let resets = 0
  for (const user of seeded) {
    for (let f = 0; f < feedsPerUser; f++) {
      const socket = connect(server.port, '127.0.0.1')
      socket.pause()
      socket.write(
        `GET /api/v1/threads/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user.token}\r\n\r\n`,
      )
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNRESET') resets++
      })
      socket.on('close', () => closed++)
      sockets.push(socket)
    }
  }
  // Every feed is open once the server holds a connection for each (the feeds start reading after their first poll).
  for (let tries = 0; tries < 100 && kernelQueues(server.port).length < sockets.length; tries++) await Bun.sleep(100)
  const rssOpen = rssBytes(server.pid)
  console.log(
    `uptime: ${require('node:os')
      .loadavg()
      .map((load: number) => load.toFixed(1))
      .join(' ')}`,
  )
  console.log(
    `${sockets.length} idle feeds open; RSS ${mb(rssStart)} MB before them, ${mb(rssOpen)} MB with them; ` +
      `${rate} changes/s for ${seconds} s`,
  )
  console.log(
    '   s  changes   RSS MB  feeds open  reset  server sockets  Send-Q total MB  Send-Q max kB  w max kB  tb max kB',
  )

  const tick = 50
  const perTick = rate / (1000 / tick)
  let changes = 0
  let owed = 0
  const started = performance.now()
  let nextReport = 5000
  const failures: string[] = []
  for (let n = 0; n < (seconds * 1000) / tick; n++) {
    owed += perTick
    const batch: Promise<unknown>[] = []
    for (; owed >= 1; owed--) {
      const user = seeded[changes % users] as (typeof seeded)[number]
      const thread = user.threads[Math.floor(changes / users) % threadsPerUser] as string
      const body = JSON.stringify({ name: `renamed ${changes}` })
      batch.push(
        api(`/api/v1/threads/${thread}`, user.token, { method: 'PATCH', body }).then(async (reply) => {
          if (reply.status !== 200 && failures.length < 5) failures.push(`${reply.status} ${await reply.text()}`)
        }),
      )
      changes++
    }
    await Promise.all(batch)
    const elapsed = performance.now() - started
    if (elapsed >= nextReport) {
      nextReport += 5000
      const queues = kernelQueues(server.port)
      const total = queues.reduce((sum, q) => sum + q.sendQ, 0)
      const max = (key: 'sendQ' | 'queued' | 'sndbuf') => Math.max(0, ...queues.map((q) => q[key])) / 1000
      console.log(
        `${(elapsed / 1000).toFixed(0).padStart(4)}  ${String(changes).padStart(7)}  ${mb(rssBytes(server.pid)).padStart(7)}` +
          `  ${String(sockets.length - closed).padStart(10)}  ${String(resets).padStart(5)}  ${String(queues.length).padStart(14)}` +
          `  ${mb(total).padStart(15)}  ${max('sendQ').toFixed(0).padStart(13)}  ${max('queued').toFixed(0).padStart(8)}` +
          `  ${max('sndbuf').toFixed(0).padStart(9)}`,
      )
    }
    const wait = (n + 1) * tick - (performance.now() - started)
    if (wait > 0) await Bun.sleep(wait)
  }
  if (failures.length > 0) console.log('failed changes:', failures)
  for (const socket of sockets) socket.destroy()
} finally {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
}
