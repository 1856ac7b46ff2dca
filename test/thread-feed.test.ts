// The thread change feed (GET /api/v1/threads/events), an addition to the specification: changes arrive in order
// over real HTTP, Last-Event-ID resumes with exactly what was missed, and nobody hears of a thread they cannot see.
// Tests call the feed's shared poll themselves after writing, rather than waiting for its one-second timer.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { EventSourceMessage } from 'eventsource-parser'
import { createApp } from '../src/app'
import { invalidateSession } from '../src/auth/sessions'
import { loadConfig } from '../src/config'
import { silentLogger } from '../src/shared/log'
import { feedAccessCheckMs, tombstoneKeepMs } from '../src/threads/feed'
import { sweepExpired } from '../src/upkeep'
import { cookieNames } from '../src/web/index'
import { testEvent, testOrigin } from './support/audit'
import {
  type Harness,
  harness,
  listening,
  ManualClock,
  parseEvents,
  publicUrl,
  ScriptedRunner,
  sharedInspector,
  stalledClient,
  until,
} from './support/helpers'
import { signedIn } from './support/oauth-helpers'

// For the second app of the test with two instances: one inspector for the file, closed after it.
const inspector = sharedInspector()

interface Feed extends AsyncDisposable {
  status: number
  /** The next event, whatever it is. */
  next(): Promise<EventSourceMessage>
  /** Events up to and including the first of this type about this thread (a sentinel), in order. */
  until(event: string, threadId?: string): Promise<EventSourceMessage[]>
}

async function openFeed(url: URL, token: string, lastEventId?: string): Promise<Feed> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` }
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
  const controller = new AbortController()
  const response = await fetch(new URL('/api/v1/threads/events', url), { headers, signal: controller.signal })
  const events = parseEvents(response)
  const next = async () => {
    const { value, done } = await events.next()
    if (done) throw new Error('the feed ended')
    return value
  }
  return {
    status: response.status,
    next,
    async until(type, threadId) {
      const seen: EventSourceMessage[] = []
      while (true) {
        const event = await next()
        seen.push(event)
        if (event.event === type && (threadId === undefined || JSON.parse(event.data).id === threadId)) return seen
      }
    },
    async [Symbol.asyncDispose]() {
      controller.abort()
      await events.return(undefined).catch(() => {})
    },
  }
}

/** What a list of events says, compactly: type and thread ID (and name, for thread objects). */
function summary(events: EventSourceMessage[]): string[] {
  return events.map((event) => {
    const data = JSON.parse(event.data)
    return data.id === undefined ? (event.event ?? '') : `${event.event} ${data.id}${data.name ? ` ${data.name}` : ''}`
  })
}

const poll = (h: Harness) => h.app.decorator.feed.poll()

async function newThread(h: Harness, token: string, body: Record<string, unknown> = {}): Promise<string> {
  const created = await h.call('POST', '/api/v1/threads', { token, body })
  expect(created.status).toBe(201)
  return created.body.thread_id
}

async function patch(h: Harness, token: string, id: string, body: Record<string, unknown>): Promise<void> {
  expect((await h.call('PATCH', `/api/v1/threads/${id}`, { token, body })).status).toBe(200)
}

describe.concurrent('thread change feed', () => {
  test('creation, rename, archiving, state changes and deletion arrive in order, with growing IDs', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, feedPollMs: null })
    await using server = listening(h)
    const owner = await h.user()
    await using feed = await openFeed(server.url, owner.token)
    expect(feed.status).toBe(200)
    const ready = await feed.next()
    expect(ready.event).toBe('ready')

    const id = await newThread(h, owner.token, { name: 'First' })
    await poll(h)
    const created = await feed.next()
    expect(created.event).toBe('thread.created')
    const thread = (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body
    expect(JSON.parse(created.data)).toEqual(thread)

    await patch(h, owner.token, id, { name: 'Renamed' })
    await poll(h)
    const renamed = await feed.next()
    expect([renamed.event, JSON.parse(renamed.data).name]).toEqual(['thread.updated', 'Renamed'])

    await patch(h, owner.token, id, { archived: true })
    await poll(h)
    const archived = await feed.next()
    expect([archived.event, JSON.parse(archived.data).archived]).toEqual(['thread.updated', true])

    const sent = await h.call('POST', `/api/v1/threads/${id}/messages`, { token: owner.token, body: { text: 'hi' } })
    expect(sent.status).toBe(201)
    const job = await runner.started(sent.body.message_id)
    await poll(h)
    const busy = await feed.next()
    expect([busy.event, JSON.parse(busy.data).state]).toEqual(['thread.updated', 'active'])
    job.token('hello')
    job.done()
    await h.app.decorator.engine.idle()
    await poll(h)
    const answered = await feed.next()
    expect([answered.event, JSON.parse(answered.data).state]).toEqual(['thread.updated', 'ready'])

    expect((await h.call('DELETE', `/api/v1/threads/${id}`, { token: owner.token })).status).toBe(204)
    // A thread written after a deletion comes after it: the update order never goes back.
    const later = await newThread(h, owner.token, { name: 'Later' })
    await poll(h)
    const rest = [await feed.next(), await feed.next()]
    expect(summary(rest)).toEqual([`thread.deleted ${id}`, `thread.created ${later} Later`])

    const ids = [ready, created, renamed, archived, busy, answered, ...rest].map((event) => Number(event.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('Last-Event-ID resumes with exactly what was missed, each thread as it is now', async () => {
    await using h = await harness()
    await using server = listening(h)
    const owner = await h.user()
    let start: string
    {
      await using feed = await openFeed(server.url, owner.token)
      start = (await feed.next()).id ?? ''
    }
    const kept = await newThread(h, owner.token, { name: 'Kept' })
    const gone = await newThread(h, owner.token, { name: 'Gone' })
    await patch(h, owner.token, kept, { name: 'Kept, renamed' })
    expect((await h.call('DELETE', `/api/v1/threads/${gone}`, { token: owner.token })).status).toBe(204)

    await using resumed = await openFeed(server.url, owner.token, start)
    const missed = await resumed.until('ready')
    expect(summary(missed)).toEqual([`thread.created ${kept} Kept, renamed`, `thread.deleted ${gone}`, 'ready'])
    // The stream goes on from there, live.
    await patch(h, owner.token, kept, { name: 'Live' })
    await poll(h)
    expect(summary([await resumed.next()])).toEqual([`thread.updated ${kept} Live`])

    // From the middle: only what came after; from the end: nothing before `ready`.
    await using middle = await openFeed(server.url, owner.token, missed[0]?.id)
    expect(summary(await middle.until('ready'))).toEqual([
      `thread.deleted ${gone}`,
      `thread.updated ${kept} Live`,
      'ready',
    ])
    await using end = await openFeed(server.url, owner.token, missed[1]?.id)
    expect(summary(await end.until('ready'))).toEqual([`thread.updated ${kept} Live`, 'ready'])
  })

  test('another organization’s threads and others’ private threads never appear; made private, a thread is hidden', async () => {
    await using h = await harness({ feedPollMs: null })
    await using server = listening(h)
    const alice = await h.user()
    const bob = await h.user()
    // threads:read:own: only its user's threads, whoever else's are public.
    const mate = await h.user({ scopes: ['threads:read:own', 'threads:write'] })
    const carol = await h.user({ org: 'elsewhere' })
    await using aliceFeed = await openFeed(server.url, alice.token)
    await using bobFeed = await openFeed(server.url, bob.token)
    await using mateFeed = await openFeed(server.url, mate.token)
    await using carolFeed = await openFeed(server.url, carol.token)
    for (const feed of [aliceFeed, bobFeed, mateFeed, carolFeed]) expect((await feed.next()).event).toBe('ready')

    const shared = await newThread(h, bob.token, { name: 'Shared' })
    const secret = await newThread(h, bob.token, { name: 'Secret', is_private: true })
    const theirs = await newThread(h, carol.token, { name: 'Theirs' })
    const mine = await newThread(h, alice.token, { name: 'Mine' })
    const its = await newThread(h, mate.token, { name: 'Its own' })
    await patch(h, bob.token, secret, { name: 'Still secret' })
    await patch(h, bob.token, shared, { is_private: true })
    expect((await h.call('DELETE', `/api/v1/threads/${secret}`, { token: bob.token })).status).toBe(204)
    const sentinel = await newThread(h, alice.token, { name: 'Sentinel' })
    const mateSentinel = await newThread(h, mate.token, { name: 'Mate sentinel' })
    const carolSentinel = await newThread(h, carol.token, { name: 'Carol sentinel' })
    await poll(h)

    // Alice never knew the shared thread by the time she heard of it: it is hidden from her, nothing more.
    expect(summary(await aliceFeed.until('thread.created', sentinel))).toEqual([
      `thread.created ${mine} Mine`,
      `thread.created ${its} Its own`,
      `thread.hidden ${shared}`,
      `thread.created ${sentinel} Sentinel`,
    ])
    expect(summary(await bobFeed.until('thread.created', sentinel))).toEqual([
      `thread.created ${mine} Mine`,
      `thread.created ${its} Its own`,
      `thread.created ${shared} Shared`,
      `thread.deleted ${secret}`,
      `thread.created ${sentinel} Sentinel`,
    ])
    expect(summary(await mateFeed.until('thread.created', mateSentinel))).toEqual([
      `thread.created ${its} Its own`,
      `thread.created ${mateSentinel} Mate sentinel`,
    ])
    expect(summary(await carolFeed.until('thread.created', carolSentinel))).toEqual([
      `thread.created ${theirs} Theirs`,
      `thread.created ${carolSentinel} Carol sentinel`,
    ])

    // Resuming from the start reads the same through SQL's filters as the shared poll gave live.
    await using aliceAgain = await openFeed(server.url, alice.token, '0')
    expect(summary(await aliceAgain.until('thread.created', sentinel))).toEqual([
      `thread.created ${mine} Mine`,
      `thread.created ${its} Its own`,
      `thread.hidden ${shared}`,
      `thread.created ${sentinel} Sentinel`,
    ])
    await using mateAgain = await openFeed(server.url, mate.token, '0')
    expect(summary(await mateAgain.until('ready'))).toEqual([
      `thread.created ${its} Its own`,
      `thread.created ${mateSentinel} Mate sentinel`,
      'ready',
    ])
  })

  test('made public again, a hidden thread comes back to the others as an update; made private, only its owner keeps it', async () => {
    await using h = await harness({ feedPollMs: null })
    await using server = listening(h)
    const alice = await h.user()
    const bob = await h.user()
    const id = await newThread(h, bob.token, { name: 'Back and forth' })
    await using aliceFeed = await openFeed(server.url, alice.token)
    await using bobFeed = await openFeed(server.url, bob.token)
    expect((await aliceFeed.next()).event).toBe('ready')
    expect((await bobFeed.next()).event).toBe('ready')
    await patch(h, bob.token, id, { is_private: true })
    await poll(h)
    expect(summary([await aliceFeed.next()])).toEqual([`thread.hidden ${id}`])
    const own = await bobFeed.next()
    expect([own.event, JSON.parse(own.data).is_private]).toEqual(['thread.updated', true])
    // Already private: no second hiding.
    await patch(h, bob.token, id, { is_private: true, name: 'Still private' })
    await patch(h, bob.token, id, { is_private: false })
    await poll(h)
    const back = await aliceFeed.next()
    expect([back.event, JSON.parse(back.data).is_private]).toEqual(['thread.updated', false])
    expect(summary(await bobFeed.until('thread.updated'))).toEqual([`thread.updated ${id} Still private`])
  })

  test('feeds count among the open streams a person may hold, and are refused past the limit', async () => {
    await using h = await harness({ config: { STREAM_LIMIT_PER_USER: 1 } })
    await using server = listening(h)
    const owner = await h.user()
    await using feed = await openFeed(server.url, owner.token)
    expect((await feed.next()).event).toBe('ready')
    const refused = await fetch(new URL('/api/v1/threads/events', server.url), {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([429, 'too_many_streams'])
    expect(refused.headers.get('retry-after')).toBe('5')
    const reader = await h.user({ scopes: ['threads:write'] })
    const forbidden = await fetch(new URL('/api/v1/threads/events', server.url), {
      headers: { authorization: `Bearer ${reader.token}` },
    })
    expect(forbidden.status).toBe(403)
  })

  test('under concurrent writes and deletions, live and resumed feeds both end with every thread as it is', async () => {
    await using h = await harness()
    await using server = listening(h)
    const owner = await h.user()
    const ids = await Promise.all(Array.from({ length: 16 }, (_, i) => newThread(h, owner.token, { name: `t${i}` })))
    await using live = await openFeed(server.url, owner.token)
    const ready = await live.next()
    let writing = true
    const polling = (async () => {
      while (writing) await poll(h)
    })()
    await Promise.all(
      ids.map(async (id, i) => {
        await patch(h, owner.token, id, { name: `renamed ${i}` })
        if (i % 2 === 0)
          expect((await h.call('DELETE', `/api/v1/threads/${id}`, { token: owner.token })).status).toBe(204)
        else await patch(h, owner.token, id, { name: `final ${i}` })
      }),
    )
    writing = false
    await polling
    const sentinel = await newThread(h, owner.token, { name: 'Sentinel' })
    await poll(h)
    const expected = new Map(ids.map((id, i) => [id, i % 2 === 0 ? 'deleted' : `final ${i}`]))
    expected.set(sentinel, 'Sentinel')
    /** Where each thread ended up after a list of events, applied in order as a client would. */
    const apply = (events: EventSourceMessage[]) => {
      const state = new Map<string, string>()
      for (const event of events) {
        if (!event.event?.startsWith('thread.')) continue
        const data = JSON.parse(event.data)
        state.set(data.id, event.event === 'thread.deleted' ? 'deleted' : data.name)
      }
      return state
    }
    const heard = await live.until('thread.created', sentinel)
    const places = heard.map((event) => Number(event.id))
    expect(places).toEqual([...places].sort((a, b) => a - b))
    expect(new Set(places).size).toBe(places.length)
    expect(apply(heard)).toEqual(expected)
    await using resumed = await openFeed(server.url, owner.token, ready.id)
    expect(apply(await resumed.until('ready'))).toEqual(expected)
  })

  test('a change written through one instance reaches a feed open on another sharing the database', async () => {
    await using h = await harness()
    const owner = await h.user()
    // A second app over the same store: its own feed and shared poll, as another server process would have.
    const other = createApp({
      store: h.store,
      config: { ...loadConfig({}), PUBLIC_URL: publicUrl },
      runner: new ScriptedRunner(),
      inspector,
      blobs: h.blobs,
      clock: h.clock,
      log: silentLogger,
    })
    const server = other.listen({ port: 0, hostname: '127.0.0.1' }).server
    if (!server) throw new Error('not listening')
    try {
      await using feed = await openFeed(server.url, owner.token)
      expect((await feed.next()).event).toBe('ready')
      const id = await newThread(h, owner.token, { name: 'Elsewhere' })
      await other.decorator.feed.poll()
      expect(summary([await feed.next()])).toEqual([`thread.created ${id} Elsewhere`])
    } finally {
      await other.stop()
    }
  })

  test('a resume point the server cannot honour answers `reset`, and the stream goes on from the present', async () => {
    await using h = await harness()
    await using server = listening(h)
    const owner = await h.user()
    const id = await newThread(h, owner.token, { name: 'Old' })
    expect((await h.call('DELETE', `/api/v1/threads/${id}`, { token: owner.token })).status).toBe(204)
    const other = await newThread(h, owner.token, { name: 'Other' })
    expect((await h.call('DELETE', `/api/v1/threads/${other}`, { token: owner.token })).status).toBe(204)
    // A week on, the upkeep sweeps every tombstone but the newest, raising the horizon past the first deletion.
    await sweepExpired(h.store, h.clock.now() + tombstoneKeepMs + 1)
    expect((await h.store.threads.changes({ after: 0, limit: 10 })).map((change) => change.kind)).toEqual(['deleted'])
    for (const lastEventId of ['0', 'not-an-id', '999999999']) {
      await using feed = await openFeed(server.url, owner.token, lastEventId)
      expect(summary(await feed.until('ready'))).toEqual(['reset', 'ready'])
    }
    // Past the horizon the feed resumes as usual.
    const { horizon } = await h.store.threads.feedBounds()
    await using feed = await openFeed(server.url, owner.token, String(horizon))
    expect(summary(await feed.until('ready'))).toEqual([`thread.deleted ${other}`, 'ready'])
  })
})

test('an open feed ends once its token no longer admits it, checked every ten seconds of its clock', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  await using server = listening(h)
  const reader = await h.user()
  await using feed = await openFeed(server.url, reader.token)
  expect((await feed.next()).event).toBe('ready')
  const [token] = await h.store.accessTokens.listActive(reader.id)
  if (!token) throw new Error('no token')
  expect(await h.store.accessTokens.revoke(reader.id, token.id, clock.now(), testEvent('token.revoked'))).toBe(true)
  // Not yet looked at again: the feed still runs, and tells of a change.
  clock.advance(feedAccessCheckMs - 1)
  const owner = await h.user()
  const threadId = await newThread(h, owner.token)
  await poll(h)
  const told = await feed.next()
  expect({ event: told.event, id: JSON.parse(told.data).id }).toEqual({ event: 'thread.created', id: threadId })
  clock.advance(1)
  await poll(h)
  const ended = await feed.next()
  expect(ended.event).toBe('error')
  expect(JSON.parse(ended.data)).toEqual({ message: 'Your access to these threads has ended' })
  await expect(feed.next()).rejects.toThrow('the feed ended')
})

test('a feed whose client stops reading is cut off once its backlog passes the bound; a reader beside it is not, and both resume with Last-Event-ID', async () => {
  const backlogBytes = 64 * 1024
  await using h = await harness({ config: { STREAM_BACKLOG_BYTES: backlogBytes } })
  await using server = listening(h)
  const owner = await h.user()
  const ids: string[] = []
  for (let i = 0; i < 40; i++) ids.push(await newThread(h, owner.token, { name: `Thread ${i}` }))
  await poll(h)

  const reader = await openFeed(server.url, owner.token)
  const ready = await reader.next()
  expect(ready.event).toBe('ready')
  using stalled = stalledClient(server.port, '/api/v1/threads/events', { authorization: `Bearer ${owner.token}` })
  await until(() => h.app.decorator.feed.size === 2)
  const { threads } = h.tables
  /** Every thread renamed in one statement: one change each, all read by the next poll. */
  const renameAll = async (name: string) => {
    await h.orm.update(threads).set({ name, updatedAt: h.clock.now() }).where(eq(threads.ownerId, owner.id))
    await poll(h)
    const events = await Promise.all(ids.map(() => reader.next()))
    expect(new Set(events.map((event) => JSON.parse(event.data).name))).toEqual(new Set([name]))
    return events
  }

  // Less than the bound in all: whatever the kernel's buffers take, the stalled feed is not cut off for it.
  await renameAll('small')
  expect(stalled.open()).toBe(true)
  // Then about 800 kB a round: the kernel's buffers fill (a few MB on loopback), then the backlog passes the bound.
  let round = 0
  let last: EventSourceMessage | undefined
  for (; round < 20 && stalled.open(); round++) {
    last = (await renameAll(`${round} ${'x'.repeat(20_000)}`)).at(-1)
  }
  expect(stalled.open()).toBe(false)
  expect(await stalled.closed).toEqual({ reset: true })
  expect(h.app.decorator.feed.size).toBe(1)

  // The reader beside it had every event (checked round by round above) and goes on.
  const latest = `latest ${'y'.repeat(20_000)}`
  const lastEvents = await renameAll(latest)
  await reader[Symbol.asyncDispose]()
  // Resuming from its last event but one round: each thread once, as it is now, then `ready`.
  await using resumed = await openFeed(server.url, owner.token, last?.id)
  const caughtUp = await resumed.until('ready')
  expect(caughtUp.map((event) => [event.event, JSON.parse(event.data).name])).toEqual([
    ...ids.map(() => ['thread.updated', latest]),
    ['ready', undefined],
  ])
  expect(caughtUp.at(-1)?.id).toBe(lastEvents.at(-1)?.id)
  // The cut-off client comes back with the ID it last read (the `ready` before the changes): about 800 kB to catch
  // up, over twelve times the bound, which it is sent at its own pace.
  await using back = await openFeed(server.url, owner.token, ready.id)
  const missed = await back.until('ready')
  expect(missed.map((event) => [event.event, JSON.parse(event.data).name])).toEqual([
    ...ids.map(() => ['thread.updated', latest]),
    ['ready', undefined],
  ])
})

test('the pages’ feed takes the session cookie, starts where the sidebar was read, and ends once the session does', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const { browser, user } = await signedIn(h)
  expect((await h.app.handle(new Request(`${publicUrl}/threads/events`))).status).toBe(401)

  // The sidebar's list says where it was read; a thread made after that comes first on a feed opened from there.
  const list = await (await browser.get('/threads/list')).text()
  const after = /data-feed-after="(\d+)"/.exec(list)?.[1]
  expect(after).toMatch(/^\d+$/)
  const threadId = await newThread(h, user.token, { name: 'Made before the feed opened' })
  const response = await browser.get(`/threads/events?after=${after}`)
  expect([response.status, response.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8'])
  const events = parseEvents(response)
  const next = async () => (await events.next()).value as EventSourceMessage
  const created = await next()
  expect({ event: created.event, id: JSON.parse(created.data).id }).toEqual({ event: 'thread.created', id: threadId })
  expect((await next()).event).toBe('ready')

  // Signed out elsewhere: the next look at the session ends the feed.
  const signedOut = { id: user.id, organizationId: 0 }
  const cookie = browser.cookies.get(cookieNames(publicUrl).session) ?? ''
  await invalidateSession(h.store.sessions, cookie, signedOut, clock.now(), testOrigin)
  clock.advance(feedAccessCheckMs)
  await poll(h)
  const ended = await next()
  expect([ended.event, JSON.parse(ended.data)]).toEqual([
    'error',
    { message: 'Your access to these threads has ended' },
  ])
  expect((await events.next()).done).toBe(true)
  expect((await browser.get('/threads/events')).status).toBe(401)
})
