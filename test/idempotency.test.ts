// Idempotency-Key on the three POST routes that make something (threads, messages, uploads), over real HTTP: a
// repeat answers the first response without doing the work again, a different request with the key is refused,
// a repeat while the first runs gets 409, keys are each user's, and a key is free again after 24 hours.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { abandonedKeyMs, digestBytes, fingerprintOf, idempotencyKeyLifetimeMs } from '../src/idempotency/service'
import { sweepExpired } from '../src/upkeep'
import { databaseOf, migratedEnv } from './support/backend'
import { type Harness, harness, listening, ManualClock, ScriptedRunner, sharedInspector } from './support/helpers'
import { form, png, storedFiles } from './support/uploads'

// Uploads are checked in inspect processes, which wait their turn with every other process on a busy machine.
const inspector = sharedInspector()

interface Sent {
  status: number
  replayed: string | null
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any
}

/** A POST over the loopback socket, with the same bytes each time it is called. */
function poster(server: URL, token: string) {
  return async (path: string, key: string | null, body: Uint8Array | string, contentType = 'application/json') => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': contentType }
    if (key !== null) headers['idempotency-key'] = key
    const response = await fetch(new URL(path, server), { method: 'POST', headers, body })
    const text = await response.text()
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      body: text === '' ? null : JSON.parse(text),
    } satisfies Sent
  }
}

/** A form's multipart bytes and content type, boundary included (read before the body, which empties it). */
async function encoded(body: FormData): Promise<{ bytes: Uint8Array; contentType: string }> {
  const response = new Response(body)
  const contentType = response.headers.get('content-type') as string
  return { bytes: new Uint8Array(await response.arrayBuffer()), contentType }
}

async function threadCount(h: Harness): Promise<number> {
  return (await h.orm.select().from(h.tables.threads)).length
}

async function setup(options: Parameters<typeof harness>[0] = {}) {
  const h = await harness({ inspector, ...options })
  const server = listening(h)
  const owner = await h.user()
  return {
    h,
    owner,
    post: poster(server.url, owner.token),
    url: server.url,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]()
      await h[Symbol.asyncDispose]()
    },
  }
}

describe.concurrent('Idempotency-Key', () => {
  test('a repeated thread creation answers the first response, marked replayed, and makes one thread', async () => {
    await using s = await setup({ runner: new ScriptedRunner() })
    const body = JSON.stringify({ name: 'Once', text: 'hello' })
    const first = await s.post('/api/v1/threads', 'create-1', body)
    expect(first.status).toBe(201)
    expect(first.replayed).toBeNull()
    const again = await s.post('/api/v1/threads', 'create-1', body)
    expect(again).toEqual({ status: 201, replayed: 'true', body: first.body })
    expect(await threadCount(s.h)).toBe(1)
    // A replay is an API answer like any other: the request ID and the security headers come with it.
    const raw = await fetch(new URL('/api/v1/threads', s.url), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.owner.token}`,
        'content-type': 'application/json',
        'idempotency-key': 'create-1',
      },
      body,
    })
    expect(await raw.json()).toEqual(first.body)
    expect({
      requestId: raw.headers.get('x-request-id') !== null,
      nosniff: raw.headers.get('x-content-type-options'),
      type: raw.headers.get('content-type'),
    }).toEqual({ requestId: true, nosniff: 'nosniff', type: 'application/json' })
    // Without a key every request is a new one, as before.
    expect((await s.post('/api/v1/threads', null, body)).body.thread_id).not.toBe(first.body.thread_id)
    expect(await threadCount(s.h)).toBe(2)
  })

  test('five identical requests at once: one does the work, the others get its response or 409', async () => {
    await using s = await setup({ runner: new ScriptedRunner() })
    const body = JSON.stringify({ text: 'all at once' })
    const replies = await Promise.all(Array.from({ length: 5 }, () => s.post('/api/v1/threads', 'burst', body)))
    const ran = replies.filter((reply) => reply.status === 201 && reply.replayed === null)
    expect(ran).toHaveLength(1)
    for (const reply of replies) {
      if (reply.status === 201) expect(reply.body).toEqual(ran[0]?.body)
      else expect(reply).toMatchObject({ status: 409, body: { error: 'idempotency_key_in_use' } })
    }
    expect(await threadCount(s.h)).toBe(1)
    expect(await s.h.orm.select().from(s.h.tables.messages)).toHaveLength(1)
  })

  test('a repeated message is stored once and replayed even though the thread is now busy answering it', async () => {
    await using s = await setup({ runner: new ScriptedRunner() })
    const thread = await s.post('/api/v1/threads', null, '{}')
    const path = `/api/v1/threads/${thread.body.thread_id}/messages`
    const body = JSON.stringify({ text: 'only once please' })
    const replies = await Promise.all(Array.from({ length: 5 }, () => s.post(path, 'message-1', body)))
    const ran = replies.filter((reply) => reply.status === 201 && reply.replayed === null)
    expect(ran).toHaveLength(1)
    expect(replies.every((reply) => reply.status === 201 || reply.status === 409)).toBe(true)
    expect(await s.post(path, 'message-1', body)).toEqual({ status: 201, replayed: 'true', body: ran[0]?.body })
    const { messages } = s.h.tables
    const stored = await s.h.orm.select().from(messages).where(eq(messages.threadId, thread.body.thread_id))
    expect(stored).toHaveLength(1)
  })

  test('a repeated upload stores one set of files, the multipart body hashed as sent', async () => {
    await using s = await setup()
    const thread = await s.post('/api/v1/threads', null, '{}')
    const path = `/api/v1/threads/${thread.body.thread_id}/attachments`
    // One serialization, so that every repeat sends the same bytes with the same boundary.
    const { bytes, contentType } = await encoded(form({ name: 'pic.png', bytes: await png() }))
    const first = await s.post(path, 'upload-1', bytes, contentType)
    expect(first.status).toBe(201)
    const filesAfterFirst = await storedFiles(s.h)
    const again = await s.post(path, 'upload-1', bytes, contentType)
    expect(again).toEqual({ status: 201, replayed: 'true', body: first.body })
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toHaveLength(1)
    expect(await storedFiles(s.h)).toEqual(filesAfterFirst)
    // Another file under the same key is another request.
    const other = await encoded(form({ name: 'pic.png', bytes: await png(32, 32) }))
    const mismatch = await s.post(path, 'upload-1', other.bytes, other.contentType)
    expect(mismatch).toMatchObject({ status: 422, body: { error: 'idempotency_key_mismatch' } })
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toHaveLength(1)
  })

  test('the same key with another body or another path is refused with 422 and does nothing', async () => {
    await using s = await setup({ runner: new ScriptedRunner() })
    const created = await s.post('/api/v1/threads', 'k', JSON.stringify({ text: 'a' }))
    expect(created.status).toBe(201)
    const otherBody = await s.post('/api/v1/threads', 'k', JSON.stringify({ text: 'b' }))
    expect(otherBody).toEqual({
      status: 422,
      replayed: null,
      body: {
        error: 'idempotency_key_mismatch',
        message: 'This Idempotency-Key was used with a different request: send a new key for a new request',
      },
    })
    // The same JSON written differently is different bytes: Stripe compares parameters, this compares the body.
    expect((await s.post('/api/v1/threads', 'k', JSON.stringify({ text: 'a' }, null, 1))).status).toBe(422)
    const ready = await s.post('/api/v1/threads', null, '{}')
    const otherPath = await s.post(
      `/api/v1/threads/${ready.body.thread_id}/messages`,
      'k',
      JSON.stringify({ text: 'a' }),
    )
    expect(otherPath).toMatchObject({ status: 422, body: { error: 'idempotency_key_mismatch' } })
    expect(await threadCount(s.h)).toBe(2)
    expect(await s.h.orm.select().from(s.h.tables.messages)).toHaveLength(1)
  })

  test('keys are each user’s: another user’s request with the same key runs', async () => {
    await using s = await setup({ runner: new ScriptedRunner() })
    const other = poster(s.url, (await s.h.user()).token)
    const body = JSON.stringify({ name: 'shared key' })
    const mine = await s.post('/api/v1/threads', 'same-key', body)
    const theirs = await other('/api/v1/threads', 'same-key', body)
    expect(theirs.status).toBe(201)
    expect(theirs.replayed).toBeNull()
    expect(theirs.body.thread_id).not.toBe(mine.body.thread_id)
    expect(await threadCount(s.h)).toBe(2)
  })

  test('a refusal is not stored: the same request runs again once the thread is ready', async () => {
    const runner = new ScriptedRunner()
    await using s = await setup({ runner })
    const created = await s.post('/api/v1/threads', null, JSON.stringify({ text: 'first' }))
    const path = `/api/v1/threads/${created.body.thread_id}/messages`
    const body = JSON.stringify({ text: 'second' })
    const busy = await s.post(path, 'retry-me', body)
    expect(busy).toMatchObject({ status: 409, body: { error: 'conflict' } })
    ;(await runner.started(created.body.message_id)).done()
    await s.h.app.decorator.engine.idle()
    const sent = await s.post(path, 'retry-me', body)
    expect(sent.status).toBe(201)
    expect(sent.replayed).toBeNull()
  })

  test('a key that is not 1 to 255 printable ASCII characters is refused with 400', async () => {
    await using s = await setup()
    for (const key of ['', 'x'.repeat(256), 'tab\there']) {
      const reply = await s.post('/api/v1/threads', key, '{}')
      expect(reply).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
    }
    expect((await s.post('/api/v1/threads', 'x'.repeat(255), '{}')).status).toBe(201)
    expect(await threadCount(s.h)).toBe(1)
  })

  test('a key is free again after 24 hours, and the upkeep deletes it', async () => {
    const clock = new ManualClock()
    await using s = await setup({ clock, runner: new ScriptedRunner() })
    const body = JSON.stringify({ name: 'daily' })
    const first = await s.post('/api/v1/threads', 'day-key', body)
    clock.advance(idempotencyKeyLifetimeMs - 1)
    expect((await s.post('/api/v1/threads', 'day-key', body)).replayed).toBe('true')
    await sweepExpired(s.h.store, clock.now())
    expect(await s.h.orm.select().from(s.h.tables.idempotencyKeys)).toHaveLength(1)
    clock.advance(2)
    const later = await s.post('/api/v1/threads', 'day-key', body)
    expect(later.replayed).toBeNull()
    expect(later.body.thread_id).not.toBe(first.body.thread_id)
    clock.advance(idempotencyKeyLifetimeMs + 1)
    await sweepExpired(s.h.store, clock.now())
    expect(await s.h.orm.select().from(s.h.tables.idempotencyKeys)).toEqual([])
  })

  test('a key held by a request still running gets 409; one its crashed holder left is free after ten minutes', async () => {
    const clock = new ManualClock()
    await using s = await setup({ clock, runner: new ScriptedRunner() })
    const owner = s.owner
    const body = JSON.stringify({ name: 'in flight' })
    // A request that reserved the key and has not finished, as one running (or lost with its process) leaves it.
    const fingerprint = fingerprintOf('POST', '/api/v1/threads', digestBytes(new TextEncoder().encode(body)))
    const now = clock.now()
    const held = await s.h.store.idempotency.reserve({
      userId: owner.id,
      key: 'held',
      fingerprint,
      now,
      expiredBefore: now - idempotencyKeyLifetimeMs,
      abandonedBefore: now - abandonedKeyMs,
    })
    expect(held.kind).toBe('reserved')
    expect(await s.post('/api/v1/threads', 'held', body)).toMatchObject({
      status: 409,
      body: { error: 'idempotency_key_in_use' },
    })
    expect(await threadCount(s.h)).toBe(0)
    clock.advance(abandonedKeyMs + 1)
    const retried = await s.post('/api/v1/threads', 'held', body)
    expect(retried.status).toBe(201)
    expect(await s.post('/api/v1/threads', 'held', body)).toEqual({ status: 201, replayed: 'true', body: retried.body })
    expect(await threadCount(s.h)).toBe(1)
  })
})

test('servers sharing one database agree: of racing reservations and takeovers exactly one wins', async () => {
  // Three stores, each with its own connections, as three instances on one PostgreSQL database (or three
  // processes' handles on one SQLite file) have.
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-idempotency-'))
  const env = await migratedEnv(join(dir, 'db.sqlite'))
  const databases = await Promise.all([databaseOf(env), databaseOf(env), databaseOf(env)])
  try {
    const [first] = databases
    const created = await first?.store.users.create(
      {
        sub: Bun.randomUUIDv7(),
        email: 'race@example.com',
        name: null,
        role: 'member',
        passwordHash: 'not used',
        mustChangePassword: false,
        organizationSlug: 'default',
        mayCreateOrganization: true,
      },
      0,
    )
    if (typeof created !== 'object') throw new Error('no user')
    const reserveAll = (now: number) =>
      Promise.all(
        databases.flatMap(({ store }) =>
          Array.from({ length: 4 }, () =>
            store.idempotency.reserve({
              userId: created.id,
              key: 'race',
              fingerprint: 'same',
              now,
              expiredBefore: now - idempotencyKeyLifetimeMs,
              abandonedBefore: now - abandonedKeyMs,
            }),
          ),
        ),
      )
    const racing = await reserveAll(1_000_000)
    expect(racing.filter((r) => r.kind === 'reserved')).toHaveLength(1)
    expect(racing.filter((r) => r.kind === 'taken' && r.status === null)).toHaveLength(11)
    // Its holder lost, ten minutes on the racers take it over: again exactly one.
    const takeovers = await reserveAll(1_000_000 + abandonedKeyMs + 1)
    const winner = takeovers.find((r) => r.kind === 'reserved')
    expect(takeovers.filter((r) => r.kind === 'reserved')).toHaveLength(1)
    // Only the latest holder's claim stores a response; the first, taken over, no longer can.
    const firstClaim = racing.find((r) => r.kind === 'reserved')
    if (firstClaim?.kind !== 'reserved' || winner?.kind !== 'reserved') throw new Error('no winner')
    await first?.store.idempotency.complete(created.id, 'race', firstClaim.claim, { status: 201, body: '"stale"' })
    await first?.store.idempotency.complete(created.id, 'race', winner.claim, { status: 201, body: '"fresh"' })
    const [after] = await reserveAll(1_000_000 + abandonedKeyMs + 2)
    expect(after).toEqual({ kind: 'taken', fingerprint: 'same', status: 201, body: '"fresh"' })
  } finally {
    await Promise.all(databases.map((database) => database[Symbol.asyncDispose]()))
    rmSync(dir, { recursive: true, force: true })
  }
})
