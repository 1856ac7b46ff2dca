// Chaos: SIGKILL the real server at random points while clients create threads, send messages and
// stream answers. After each restart every request answered 2xx is durable, every accepted message is
// answered (or its thread is in `error`), no thread is stuck, no search document is stale, and SQLite
// reports no corruption.
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { count as countRows, inArray } from 'drizzle-orm'
import fc from 'fast-check'
import { attachments } from '../src/attachments/attachments.table.pg'
import { attachmentIdOf } from '../src/attachments/keys'
import { inFlightMs } from '../src/attachments/sweep'
import { openPostgres } from '../src/db/postgres'
import { generations } from '../src/generation/generations.table.pg'
import { idTime } from '../src/shared/ids'
import { S3BlobStore } from '../src/storage/blobs'
import { searchPending, threadSearch, threads } from '../src/threads/threads.table.pg'
import { backendEnv, onPostgres } from './support/backend'
import { collect, firstRunToken, parseEvents, startServer, until } from './support/helpers'

test('SIGKILL at random points loses nothing that was acknowledged', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-crash-'))
  // Resolved once, so that on PostgreSQL every restart opens the same database and bucket.
  const env = await backendEnv({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ECHO_TOKEN_DELAY_MS: '2',
    RATE_LIMIT_API_PER_MINUTE: '0',
    ADMIN_EMAIL: 'owner@example.com',
    ADMIN_PASSWORD: 'a long enough password',
  })
  // Seeded, so a failure can be replayed: the kill comes after this many acknowledged requests.
  const killAfter = fc.sample(fc.integer({ min: 3, max: 40 }), { numRuns: 4, seed: 7 })
  const acknowledged = { threads: new Set<string>(), messages: new Map<string, string>() }
  let token = ''
  try {
    for (const round of killAfter) {
      const server = await startServer(env)
      token ||= await firstRunToken(server)
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      let acks = 0
      let alive = true
      const client = async (): Promise<void> => {
        while (alive) {
          try {
            const created = await fetch(`${server.url}/api/v1/threads`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ text: `round ${round}` }),
            })
            if (created.status !== 201) continue
            const body = (await created.json()) as { thread_id: string; message_id: string }
            acknowledged.threads.add(body.thread_id)
            acknowledged.messages.set(body.message_id, body.thread_id)
            acks += 1
            const stream = await fetch(
              `${server.url}/api/v1/threads/${body.thread_id}/messages/${body.message_id}/response/stream`,
              { headers },
            )
            await collect(parseEvents(stream))
            const files = new FormData()
            files.append('attachments[0]', new File([`notes for round ${round}\n`.repeat(500)], 'notes.txt'))
            const uploaded = await fetch(`${server.url}/api/v1/threads/${body.thread_id}/attachments`, {
              method: 'POST',
              headers: { authorization: headers.authorization },
              body: files,
            })
            const attachmentIds =
              uploaded.status === 201 ? ((await uploaded.json()) as { id: string }[]).map((file) => file.id) : []
            const followUp = await fetch(`${server.url}/api/v1/threads/${body.thread_id}/messages`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ text: 'and then?', attachment_ids: attachmentIds }),
            })
            if (followUp.status === 201) {
              acknowledged.messages.set(((await followUp.json()) as { message_id: string }).message_id, body.thread_id)
              acks += 1
            }
          } catch {
            return // the server is gone
          }
        }
      }
      const clients = Array.from({ length: 6 }, client)
      await until(() => acks >= round)
      server.process.kill('SIGKILL')
      alive = false
      await server.process.exited
      await Promise.all(clients)
    }

    await using last = await startServer(env)
    const headers = { authorization: `Bearer ${token}` }
    if (onPostgres) await settledOnPostgres(env)
    else await settledOnSqlite(env)
    for (const threadId of acknowledged.threads) {
      const thread = await fetch(`${last.url}/api/v1/threads/${threadId}`, { headers })
      expect(thread.status).toBe(200)
    }
    for (const [messageId, threadId] of acknowledged.messages) {
      const poll = await fetch(`${last.url}/api/v1/threads/${threadId}/messages/${messageId}/response`, { headers })
      expect(poll.status).toBe(200)
      const body = (await poll.json()) as { status: string; messages: unknown[] }
      if (body.status === 'complete') expect(body.messages.length).toBe(1)
      else expect(body.status).toBe('error')
    }
    expect(acknowledged.messages.size).toBeGreaterThan(killAfter.reduce((a, b) => a + b, 0) - 1)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

/** Once the restarted server has caught up: the SQLite file is sound, and nothing is stuck, stale or orphaned. */
async function settledOnSqlite(env: Record<string, string>): Promise<void> {
  const db = new Database(env.DATABASE_PATH, { readonly: true })
  try {
    await until(() => {
      const busy = db
        .query("select count(*) as n from threads where state in ('waiting', 'active', 'interrupted')")
        .get() as {
        n: number
      }
      return busy.n === 0
    })
    expect(db.query('pragma integrity_check').get()).toEqual({ integrity_check: 'ok' })
    // Search documents left pending by the crashes are rewritten by the running server, none left stale:
    // every thread (each was created saying "round") has exactly one document, under its current key.
    await until(() => (db.query('select count(*) as n from search_pending').get() as { n: number }).n === 0)
    const keys = (sql: string) => (db.query(sql).all() as { key: number }[]).map((row) => row.key)
    expect(
      keys(`select rowid as key from thread_search where thread_search match 'body : "round"' order by rowid`),
    ).toEqual(keys('select (organization_id << 40) | (1099511627775 - update_seq) as key from threads order by key'))
    expect(db.query("select count(*) as n from generations where status in ('queued', 'running')").get()).toEqual({
      n: 0,
    })
    // Uploads: no temporary or orphaned file survives the start-up sweep, and every row has its file.
    const rows = (db.query('select id from attachments').all() as { id: string }[]).map((row) => row.id)
    expect(rows.length).toBeGreaterThan(0)
    expect(readdirSync(env.UPLOADS_DIR ?? '').sort()).toEqual([...rows].sort())
  } finally {
    db.close()
  }
}

/**
 * The same facts on PostgreSQL, read from the server's database and bucket: nothing stuck, every thread's search
 * document current (one each, under its latest update), and every attachment's file kept, with no other.
 */
async function settledOnPostgres(env: Record<string, string>): Promise<void> {
  const db = openPostgres(env.DATABASE_URL ?? '', { max: 2 })
  try {
    const count = async (query: Promise<{ n: number }[]>) => (await query)[0]?.n ?? -1
    const busy = inArray(threads.state, ['waiting', 'active', 'interrupted'])
    await until(async () => (await count(db.select({ n: countRows() }).from(threads).where(busy))) === 0)
    await until(async () => (await count(db.select({ n: countRows() }).from(searchPending))) === 0)
    const documents = await db
      .select({ seq: threadSearch.threadSeq, updateSeq: threadSearch.updateSeq })
      .from(threadSearch)
      .orderBy(threadSearch.threadSeq)
    expect(documents).toEqual(
      await db.select({ seq: threads.seq, updateSeq: threads.updateSeq }).from(threads).orderBy(threads.seq),
    )
    const unfinished = inArray(generations.status, ['queued', 'running'])
    expect(await count(db.select({ n: countRows() }).from(generations).where(unfinished))).toBe(0)
    const rows = (await db.select({ id: attachments.id }).from(attachments)).map((row) => row.id)
    expect(rows.length).toBeGreaterThan(0)
    const bucket = new S3BlobStore({
      bucket: env.S3_BUCKET ?? '',
      endpoint: env.S3_ENDPOINT,
      region: env.S3_REGION,
      accessKeyId: env.S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: env.S3_SECRET_ACCESS_KEY ?? '',
    })
    const keys: string[] = []
    for await (const key of bucket.keys()) keys.push(key)
    // Every row has its file. A bucket's sweep spares a file without a row while it may be an upload in flight
    // (sweep.ts, inFlightMs): the uploads the kills cut short between file and row stay, all of them that young.
    expect(keys.filter((key) => rows.includes(key)).sort()).toEqual([...rows].sort())
    for (const key of keys.filter((key) => !rows.includes(key))) {
      expect(Date.now() - (idTime(attachmentIdOf(key) ?? '') ?? 0)).toBeLessThan(inFlightMs)
    }
    // No request body or checked file is left in the staging folder.
    expect(readdirSync(env.UPLOADS_DIR ?? '')).toEqual([])
  } finally {
    await db.$client.close()
  }
}
