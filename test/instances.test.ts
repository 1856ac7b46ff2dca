// Several server processes on one PostgreSQL database and one bucket, as behind a load balancer with no sticky
// sessions: an answer generated on one instance streams from another, stops and 409s work wherever they land, and an
// instance's death (SIGKILL), its shutdown (SIGTERM) or a dropped LISTEN connection loses nothing. PostgreSQL only:
// SQLite is one process's database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { EventSourceMessage } from 'eventsource-parser'
import { backendEnv, onPostgres } from './support/backend'
import {
  collect,
  firstRunToken,
  parseEvents,
  runToEnd,
  type ServerProcess,
  startServer,
  tokensOf,
  until,
} from './support/helpers'

interface Instances {
  env: Record<string, string>
  sql: Bun.SQL
  a: ServerProcess
  b: ServerProcess
  headers: Record<string, string>
}

let cluster: Instances

/** The instance holding an answer's lease, by its process ID; null when no one does. */
async function holderPid(messageId: string): Promise<number | null> {
  const [row] = await cluster.sql`select leased_by from generations where message_id = ${messageId}`
  const holder = row?.leased_by as string | null | undefined
  return holder ? Number(holder.split(':')[1]) : null
}

async function send(server: ServerProcess, text: string, threadId?: string) {
  const path = threadId ? `/api/v1/threads/${threadId}/messages` : '/api/v1/threads'
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: cluster.headers,
    body: JSON.stringify({ text }),
  })
  const body = (await response.json()) as { thread_id?: string; message_id: string }
  return { status: response.status, threadId: body.thread_id ?? threadId ?? '', messageId: body.message_id }
}

function streamPath(threadId: string, messageId: string): string {
  return `/api/v1/threads/${threadId}/messages/${messageId}/response/stream`
}

async function stream(server: ServerProcess, threadId: string, messageId: string, lastEventId?: string) {
  const headers = { ...cluster.headers, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) }
  return parseEvents(await fetch(`${server.url}${streamPath(threadId, messageId)}`, { headers }))
}

async function answerText(server: ServerProcess, threadId: string, messageId: string): Promise<string> {
  const polled = await until(async () => {
    const response = await fetch(`${server.url}/api/v1/threads/${threadId}/messages/${messageId}/response`, {
      headers: cluster.headers,
    })
    return response.status === 200 && ((await response.json()) as { messages: { contents: { text?: string }[] }[] })
  })
  return polled.messages.flatMap((message) => message.contents.map((block) => block.text ?? '')).join('')
}

/** Every token event continues exactly where the one before it ended: no gap, no repeat. */
function expectContiguous(events: EventSourceMessage[], from = 0): void {
  let end = from
  for (const event of events.filter((e) => e.event === 'token')) {
    const token = JSON.parse(event.data).token as string
    expect(Number(event.id)).toBe(end + token.length)
    end = Number(event.id)
  }
}

function words(n: number): string {
  return Array.from({ length: n }, (_, i) => `w${i}`).join(' ')
}

describe.skipIf(!onPostgres)('several instances on one database', () => {
  beforeAll(async () => {
    // One database and bucket for every instance; leases short enough for a takeover to be waited on in a test.
    const env = await backendEnv({
      ECHO_TOKEN_DELAY_MS: '20',
      GENERATION_LEASE_MS: '1500',
      SHUTDOWN_GRACE_MS: '0',
      ADMIN_EMAIL: 'owner@example.com',
      ADMIN_PASSWORD: 'a long enough password',
    })
    const a = await startServer(env)
    const token = await firstRunToken(a)
    const b = await startServer(env)
    const sql = new Bun.SQL(env.DATABASE_URL as string, { max: 2 })
    cluster = { env, sql, a, b, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }
  })

  afterAll(async () => {
    await cluster?.a[Symbol.asyncDispose]()
    await cluster?.b[Symbol.asyncDispose]()
    await cluster?.sql.close()
  })

  test('an answer generated on one instance streams from the other in order, joined early or late', async () => {
    const { a, b } = cluster
    const sent = await send(a, words(40))
    const early = await stream(b, sent.threadId, sent.messageId)
    const first = await early.next()
    expect(first.value?.event).toBe('token')
    expect(await holderPid(sent.messageId)).toBe(a.process.pid)
    const late = await stream(b, sent.threadId, sent.messageId)
    const earlyEvents = [first.value as EventSourceMessage, ...(await collect(early))]
    const lateEvents = await collect(late)
    const stored = await answerText(b, sent.threadId, sent.messageId)
    expect(tokensOf(earlyEvents)).toBe(stored)
    expect(tokensOf(lateEvents)).toBe(stored)
    expectContiguous(earlyEvents)
    expectContiguous(lateEvents)
    expect(earlyEvents.at(-1)?.event).toBe('done')
    expect(lateEvents.at(-1)?.event).toBe('done')
  })

  test('Last-Event-ID from one instance resumes on the other', async () => {
    const { a, b } = cluster
    const sent = await send(a, words(30))
    const onA = await stream(a, sent.threadId, sent.messageId)
    const seen: EventSourceMessage[] = []
    for await (const event of onA) {
      seen.push(event)
      if (seen.length === 5) break
    }
    const lastId = seen.at(-1)?.id as string
    const rest = await collect(await stream(b, sent.threadId, sent.messageId, lastId))
    const stored = await answerText(a, sent.threadId, sent.messageId)
    expect(tokensOf(seen) + tokensOf(rest)).toBe(stored)
    expectContiguous(rest, Number(lastId))
    expect(rest.at(-1)?.event).toBe('done')
  })

  test('an answer too long for one notification reaches the other instance whole', async () => {
    const { a, b } = cluster
    // One word of 6,000 two-byte characters: its single token is past what a notification may carry.
    const sent = await send(a, 'ü'.repeat(6000))
    const events = await collect(await stream(b, sent.threadId, sent.messageId))
    expect(tokensOf(events)).toBe(await answerText(a, sent.threadId, sent.messageId))
    expect(tokensOf(events)).toContain('ü'.repeat(6000))
    expectContiguous(events)
  })

  test('a send racing a running answer gets 409 on the other instance, and a stop there ends it', async () => {
    const { a, b } = cluster
    const sent = await send(a, words(200))
    const events = await stream(b, sent.threadId, sent.messageId)
    expect((await events.next()).value?.event).toBe('token')
    expect((await send(b, 'me too', sent.threadId)).status).toBe(409)
    const stop = await fetch(`${b.url}/api/v1/threads/${sent.threadId}/stop`, {
      method: 'POST',
      headers: cluster.headers,
    })
    expect(stop.status).toBe(202)
    expect(((await stop.json()) as { state: string }).state).toBe('ready')
    const rest = await collect(events)
    expect(rest.at(-1)?.event).toBe('error')
    const poll = await fetch(`${a.url}/api/v1/threads/${sent.threadId}/messages/${sent.messageId}/response`, {
      headers: cluster.headers,
    })
    expect(((await poll.json()) as { status: string }).status).toBe('interrupted')
  })

  test('a regenerate on one instance streams from the other, and a regenerate there races a send to one 201', async () => {
    const { a, b } = cluster
    const sent = await send(a, words(60))
    await answerText(a, sent.threadId, sent.messageId)
    const regenerate = (server: ServerProcess) =>
      fetch(`${server.url}/api/v1/threads/${sent.threadId}/messages/${sent.messageId}/regenerate`, {
        method: 'POST',
        headers: { authorization: cluster.headers.authorization as string },
      })
    expect((await regenerate(a)).status).toBe(201)
    const live = await stream(b, sent.threadId, sent.messageId)
    const first = (await live.next()).value as EventSourceMessage
    expect(first.event).toBe('token')
    // Generated on A while B streams it.
    expect(await holderPid(sent.messageId)).toBe(a.process.pid)
    const events = [first, ...(await collect(live))]
    expect(events.at(-1)?.event).toBe('done')
    expectContiguous(events)
    const stored = await answerText(b, sent.threadId, sent.messageId)
    expect(tokensOf(events)).toBe(stored)
    expect(stored).toContain('w59')
    const listed = await fetch(`${b.url}/api/v1/threads/${sent.threadId}/messages`, { headers: cluster.headers })
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(2)
    // Two instances, two writes to one ready thread: exactly one wins.
    const statuses = (await Promise.all([regenerate(b), send(a, 'me too', sent.threadId)])).map((reply) => reply.status)
    expect(statuses.sort()).toEqual([201, 409])
    await answerText(a, sent.threadId, sent.messageId)
  })

  test('a dropped LISTEN connection is survived: the stream catches up and completes', async () => {
    const { a, b, sql } = cluster
    const sent = await send(a, words(60))
    const events = await stream(b, sent.threadId, sent.messageId)
    const first = (await events.next()).value as EventSourceMessage
    expect(first.event).toBe('token')
    const killed = await sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where query ilike 'listen%' and pid <> pg_backend_pid()`
    expect(killed.length).toBeGreaterThanOrEqual(2)
    const all = [first, ...(await collect(events))]
    expect(all.at(-1)?.event).toBe('done')
    expectContiguous(all)
    expect(tokensOf(all)).toBe(await answerText(a, sent.threadId, sent.messageId))
  })

  test('SIGKILL of the generating instance: the other takes the answer over and its stream completes', async () => {
    const { a, b } = cluster
    const sent = await send(a, words(150))
    const events = await stream(b, sent.threadId, sent.messageId)
    const first = (await events.next()).value as EventSourceMessage
    expect(await holderPid(sent.messageId)).toBe(a.process.pid)
    a.process.kill('SIGKILL')
    await a.process.exited
    const rest = [first, ...(await collect(events))]
    expect(rest.at(-1)?.event).toBe('done')
    expectContiguous(rest)
    const stored = await answerText(b, sent.threadId, sent.messageId)
    expect(tokensOf(rest)).toBe(stored)
    expect(stored).toContain('w149')
    expect(b.stderr()).toContain('took over unfinished answers')
    // The next instance replaces the one killed, for the tests after this one.
    cluster.a = await startServer(cluster.env)
  })

  test("a budget used up by answers on one instance refuses sends on the other, and each instance counts the other's", async () => {
    const { a, b, sql } = cluster
    const [org] = await sql`select id, slug from organizations`
    const period = new Date().toISOString().slice(0, 7)
    const used = async (): Promise<number> => {
      const [row] = await sql`select tokens from usage_totals
        where period = ${period} and organization_id = ${org?.id} and user_id = 0`
      return Number(row?.tokens ?? 0)
    }
    const quota = async (tokens: string) => {
      const set = await runToEnd(
        ['bun', 'run', 'cli', 'quota:set', '--org', org?.slug, '--tokens', tokens],
        cluster.env,
      )
      expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: '' })
    }
    // Room for one more answer, whichever instance runs it: what the earlier tests used, plus one token.
    await quota(String((await used()) + 1))
    try {
      const onA = await send(a, words(5))
      expect(onA.status).toBe(201)
      await answerText(b, onA.threadId, onA.messageId)
      // A's answer is counted on B (no counter of A's own decides), and on A.
      for (const server of [b, a]) {
        const refused = await fetch(`${server.url}/api/v1/threads/${onA.threadId}/messages`, {
          method: 'POST',
          headers: cluster.headers,
          body: JSON.stringify({ text: 'one more' }),
        })
        expect(refused.status).toBe(429)
        expect(((await refused.json()) as { error: string }).error).toBe('quota_exceeded')
      }
      // And the other way round: a larger budget, used up on B, refuses on A.
      await quota(String((await used()) + 1))
      const onB = await send(b, words(5), onA.threadId)
      expect(onB.status).toBe(201)
      await answerText(a, onA.threadId, onB.messageId)
      expect((await send(a, 'one more', onA.threadId)).status).toBe(429)
    } finally {
      await quota('none')
    }
  })

  test('answers queued on a busy instance are taken by one with free places', async () => {
    await using c = await startServer({ ...cluster.env, GENERATION_CONCURRENCY: '1' })
    const first = await send(c, words(100))
    const second = await send(c, words(10))
    const events = await collect(await stream(c, second.threadId, second.messageId))
    expect(events.at(-1)?.event).toBe('done')
    expect(tokensOf(events)).toBe(await answerText(c, second.threadId, second.messageId))
    // The second was generated elsewhere while c was still busy with the first.
    const [row] = await cluster.sql`select status from generations where message_id = ${first.messageId}`
    expect(row?.status).toBe('running')
    expect(await holderPid(second.messageId)).not.toBe(c.process.pid)
  })

  test('SIGTERM hands a running answer over at once, long before its lease would run out', async () => {
    const env = { ...cluster.env, GENERATION_LEASE_MS: '600000' }
    await using c = await startServer(env)
    const sent = await send(c, words(150))
    const events = await stream(cluster.b, sent.threadId, sent.messageId)
    expect((await events.next()).value?.event).toBe('token')
    expect(await holderPid(sent.messageId)).toBe(c.process.pid)
    c.process.kill('SIGTERM')
    expect(await c.process.exited).toBe(0)
    expect(c.stderr()).toContain('handed unfinished answers over to other instances')
    const rest = await collect(events)
    expect(rest.at(-1)?.event).toBe('done')
    expect(await answerText(cluster.b, sent.threadId, sent.messageId)).toContain('w149')
  })
})
