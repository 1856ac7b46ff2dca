// Listing threads: keyset pagination for every sort, filters, limits and full-text search.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { type Harness, harness, ManualClock } from './support/helpers'

type Page = { data: { id: string; name: string }[]; first_id: string | null; last_id: string | null; has_more: boolean }

async function walk(h: Harness, token: string, query: string, between?: (page: number) => Promise<void>) {
  const seen: string[] = []
  let after: string | null = null
  for (let page = 0; page < 50; page++) {
    const reply = await h.call('GET', `/api/v1/threads?${query}${after ? `&after=${after}` : ''}`, { token })
    expect(reply.status).toBe(200)
    const body = reply.body as Page
    seen.push(...body.data.map((t) => t.name))
    expect(body.first_id).toBe(body.data[0]?.id ?? null)
    expect(body.last_id).toBe(body.data.at(-1)?.id ?? null)
    if (!body.has_more) return seen
    after = body.last_id
    await between?.(page)
  }
  throw new Error('pagination did not end')
}

describe('keyset pagination', () => {
  for (const sortBy of ['created_at', 'updated_at']) {
    for (const sortDir of ['asc', 'desc']) {
      test(`${sortBy} ${sortDir}: every thread exactly once, in order, with inserts between pages`, async () => {
        const clock = new ManualClock()
        await using h = await harness({ clock })
        const owner = await h.user()
        const names = Array.from({ length: 10 }, (_, i) => `t${String(i).padStart(2, '0')}`)
        for (const name of names) {
          clock.advance(1000)
          await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name } })
        }
        // Reverse the update order so updated_at and created_at disagree.
        for (const name of [...names].reverse()) {
          clock.advance(1000)
          await h.orm.update(h.tables.threads).set({ updatedAt: clock.now() }).where(eq(h.tables.threads.name, name))
        }
        let extra = 0
        const seen = await walk(h, owner.token, `limit=3&sort_by=${sortBy}&sort_dir=${sortDir}`, async () => {
          clock.advance(1000)
          await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: `new${extra++}` } })
        })
        const byCreation = sortBy === 'created_at' ? names : [...names].reverse()
        const expected = sortDir === 'asc' ? byCreation : [...byCreation].reverse()
        // Threads created during the run sort after the cursor only in ascending order: they show at the end.
        const old = seen.filter((name) => !name.startsWith('new'))
        expect(old).toEqual(expected)
        if (sortDir === 'desc') expect(seen).toEqual(expected)
        else
          expect(seen.filter((name) => name.startsWith('new'))).toEqual(
            Array.from({ length: extra }, (_, i) => `new${i}`),
          )
      })
    }
  }

  test('ties: update order for updated_at, ID for created_at, so equal timestamps never repeat or vanish', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const owner = await h.user()
    const names = Array.from({ length: 7 }, (_, i) => `same${i}`)
    for (const name of names) await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name } })
    // Updated at one instant in another order: the later update comes first.
    for (const name of ['same3', 'same0', 'same6'])
      await h.orm.update(h.tables.threads).set({ updatedAt: clock.now() }).where(eq(h.tables.threads.name, name))
    expect(await walk(h, owner.token, 'limit=2')).toEqual([
      'same6',
      'same0',
      'same3',
      'same5',
      'same4',
      'same2',
      'same1',
    ])
    expect(await walk(h, owner.token, 'limit=2&sort_by=created_at')).toEqual([...names].reverse())
  })

  test('updated_at never moves back when the clock does, so updated_since misses no update', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const owner = await h.user()
    const first = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'first' } })).body
    clock.advance(60_000)
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'second' } })
    const since = new Date(clock.now() - 1).toISOString()
    clock.advance(-30_000)
    const renamed = await h.call('PATCH', `/api/v1/threads/${first.thread_id}`, {
      token: owner.token,
      body: { name: 'first, renamed' },
    })
    expect(renamed.status).toBe(200)
    expect(Date.parse(renamed.body.updated_at)).toBe(clock.now() + 30_000)
    const changed = await h.call('GET', `/api/v1/threads?updated_since=${encodeURIComponent(since)}`, {
      token: owner.token,
    })
    expect(changed.body.data.map((t: { name: string }) => t.name)).toEqual(['first, renamed', 'second'])
  })

  test('updated_at: a thread updated mid-run moves, the others still appear exactly once', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const owner = await h.user()
    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      clock.advance(1000)
      ids.push(
        (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: `u${i}` } })).body.thread_id,
      )
    }
    const seen = await walk(h, owner.token, 'limit=2&sort_by=updated_at&sort_dir=desc', async (page) => {
      if (page !== 0) return
      clock.advance(1000)
      await h.orm.update(h.tables.threads).set({ updatedAt: clock.now() }).where(eq(h.tables.threads.name, 'u1'))
    })
    expect(seen.filter((name) => name !== 'u1')).toEqual(['u5', 'u4', 'u3', 'u2', 'u0'])
  })

  test('cursors do not expire: in created_at order a thread made private since still marks the place', async () => {
    await using h = await harness({ clock: new ManualClock() })
    const owner = await h.user()
    const colleague = await h.user()
    const stranger = await h.user({ org: 'elsewhere' })
    for (let i = 0; i < 4; i++) await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: `c${i}` } })
    const list = (query: string, token = colleague.token) => h.call('GET', `/api/v1/threads?${query}`, { token })
    const first = await list('limit=2&sort_by=created_at&sort_dir=asc')
    expect(first.body.data.map((t: { name: string }) => t.name)).toEqual(['c0', 'c1'])
    const cursor = first.body.last_id
    await h.call('PATCH', `/api/v1/threads/${cursor}`, { token: owner.token, body: { is_private: true } })
    const next = await list(`limit=2&sort_by=created_at&sort_dir=asc&after=${cursor}`)
    expect(next.status).toBe(200)
    expect(next.body.data.map((t: { name: string }) => t.name)).toEqual(['c2', 'c3'])
    // In updated_at order the place of a thread the caller cannot see would tell when it was written to.
    expect((await list(`sort_by=updated_at&after=${cursor}`)).status).toBe(400)
    // Other organizations' threads are no cursor in either order.
    expect((await list(`sort_by=created_at&after=${cursor}`, stranger.token)).status).toBe(400)
  })

  test('limit: default 50, above 200 clamped and echoed, below 1 or fractional is 400', async () => {
    await using h = await harness()
    const owner = await h.user()
    const get = (query: string) => h.call('GET', `/api/v1/threads?${query}`, { token: owner.token })
    expect((await get('')).body.limit).toBe(50)
    expect((await get('limit=500')).body.limit).toBe(200)
    for (const bad of ['limit=0', 'limit=-1', 'limit=1.5', 'limit=abc']) {
      const reply = await get(bad)
      expect(reply.status).toBe(400)
      expect(reply.body.error).toBe('invalid_request')
    }
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    expect(
      (await h.call('GET', `/api/v1/threads/${thread_id}/messages?limit=999`, { token: owner.token })).body.limit,
    ).toBe(200)
    expect((await h.call('GET', `/api/v1/threads/${thread_id}/messages?limit=0`, { token: owner.token })).status).toBe(
      400,
    )
  })

  test('an unknown cursor and bad query values are 400', async () => {
    await using h = await harness()
    const owner = await h.user()
    for (const query of [
      `after=${crypto.randomUUID()}`,
      'after=nope',
      'sort_by=name',
      'sort_dir=up',
      'owned=maybe',
      'updated_since=yesterday',
      'privat=true',
      `q=${'word '.repeat(100)}w`,
    ]) {
      const reply = await h.call('GET', `/api/v1/threads?${query}`, { token: owner.token })
      expect(reply.status).toBe(400)
      expect(reply.body).toEqual({ error: 'invalid_request', message: expect.any(String) })
    }
  })

  test('messages paginate oldest first and the cursor must belong to the thread', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'm0' } })).body
    for (let i = 1; i < 4; i++) {
      await h.app.decorator.engine.idle()
      await h.call('POST', `/api/v1/threads/${thread_id}/messages`, { token: owner.token, body: { text: `m${i}` } })
    }
    await h.app.decorator.engine.idle()
    const texts: string[] = []
    let after = ''
    for (;;) {
      const page = await h.call('GET', `/api/v1/threads/${thread_id}/messages?limit=3${after}`, { token: owner.token })
      texts.push(...page.body.data.map((m: { contents: { text: string }[] }) => m.contents[0]?.text))
      if (!page.body.has_more) break
      after = `&after=${page.body.last_id}`
    }
    expect(texts.filter((text) => /^m\d$/.test(text))).toEqual(['m0', 'm1', 'm2', 'm3'])
    expect(texts).toHaveLength(8)
    const other = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id
    const foreign = await h.call('GET', `/api/v1/threads/${other}/messages?after=${thread_id}`, { token: owner.token })
    expect(foreign.status).toBe(400)
  })
})

test('messages keep the order they were written in when the clock steps back, and so does the history', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const owner = await h.user()
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'one' } })).body
  await h.app.decorator.engine.idle()
  const first = await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })
  clock.advance(-60_000)
  await h.call('POST', `/api/v1/threads/${thread_id}/messages`, { token: owner.token, body: { text: 'two' } })
  await h.app.decorator.engine.idle()
  const texts = (
    await h.call('GET', `/api/v1/threads/${thread_id}/messages?after=${first.body.last_id}`, {
      token: owner.token,
    })
  ).body.data.map((m: { contents: { text: string }[] }) => m.contents[0]?.text)
  // The echo responder counts the user turns it was given: the first turn reached the model too.
  expect(texts).toEqual(['two', 'You said, in turn 2:\n\n> two'])
  // Strictly after the first turn, so the order never rests on IDs made before and after a clock step.
  const all = (await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })).body.data
  const times = all.map((m: { created_at: string }) => Date.parse(m.created_at))
  expect(times[2]).toBeGreaterThan(times[1])
  expect(times).toEqual([...times].sort((a, b) => a - b))
})

describe('filters', () => {
  test('owned, private, archived and updated_since', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const me = await h.user({ org: 'acme' })
    const mate = await h.user({ org: 'acme' })
    const create = async (token: string, name: string, isPrivate = false) => {
      clock.advance(1000)
      return (await h.call('POST', '/api/v1/threads', { token, body: { name, is_private: isPrivate } })).body.thread_id
    }
    await create(me.token, 'mine-public')
    await create(me.token, 'mine-private', true)
    const old = await create(mate.token, 'theirs-archived')
    await h.orm.update(h.tables.threads).set({ archived: true }).where(eq(h.tables.threads.id, old))
    const since = new Date(clock.now()).toISOString()
    await create(mate.token, 'theirs-new')

    const names = async (query: string) =>
      (await h.call('GET', `/api/v1/threads?${query}`, { token: me.token })).body.data.map(
        (t: { name: string }) => t.name,
      )
    expect(await names('')).toEqual(['theirs-new', 'mine-private', 'mine-public'])
    expect(await names('archived=true')).toEqual(['theirs-new', 'theirs-archived', 'mine-private', 'mine-public'])
    expect(await names('owned=true')).toEqual(['mine-private', 'mine-public'])
    expect(await names('owned=false')).toEqual(['theirs-new'])
    expect(await names('private=true')).toEqual(['mine-private'])
    expect(await names('private=false&archived=true')).toEqual(['theirs-new', 'theirs-archived', 'mine-public'])
    expect(await names(`updated_since=${encodeURIComponent(since)}`)).toEqual(['theirs-new'])
  })
})

describe('search', () => {
  test('matches every word across names and message text, keeps the sort order, paginates', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const owner = await h.user()
    const make = async (body: object) => {
      clock.advance(1000)
      await h.call('POST', '/api/v1/threads', { token: owner.token, body })
      await h.app.decorator.engine.idle()
    }
    await make({ name: 'Garden plans', text: 'tomatoes and basil' })
    await make({ name: 'Kitchen', text: 'basil pesto recipe' })
    await make({ name: 'Travel', text: 'train to Zürich' })
    await make({ name: 'Basil the cat' })

    const names = async (q: string, extra = '') =>
      (await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}${extra}`, { token: owner.token })).body.data.map(
        (t: { name: string }) => t.name,
      )
    expect(await names('basil')).toEqual(['Basil the cat', 'Kitchen', 'Garden plans'])
    expect(await names('basil pesto')).toEqual(['Kitchen'])
    expect(await names('zurich')).toEqual(['Travel'])
    expect(await names('garden')).toEqual(['Garden plans'])
    expect(await names('nothing-like-this')).toEqual([])
    // No syntax but quotes: `OR` and `NEAR` are words (prefixes here) that every match must also hold.
    expect(await names('"basil" OR NEAR(')).toEqual([])
    expect(await names('basil or')).toEqual([])
    expect(await names('"basil"')).toEqual(['Basil the cat', 'Kitchen', 'Garden plans'])
    expect(await names('***')).toEqual([])
    // A blank q is no filter; only the first 16 words count.
    expect(await names('  ')).toEqual(['Basil the cat', 'Travel', 'Kitchen', 'Garden plans'])
    expect(await names(`${'basil '.repeat(16)}absent`)).toEqual(['Basil the cat', 'Kitchen', 'Garden plans'])
    expect(await names('basil', '&sort_by=created_at&sort_dir=asc')).toEqual([
      'Garden plans',
      'Kitchen',
      'Basil the cat',
    ])

    // A message sent later is searchable at once, and its thread moves to the front.
    const travel = (await h.call('GET', '/api/v1/threads?q=zurich', { token: owner.token })).body.data[0]
    clock.advance(1000)
    await h.call('POST', `/api/v1/threads/${travel.id}/messages`, { token: owner.token, body: { text: 'and basil' } })
    await h.app.decorator.engine.idle()
    expect(await names('basil')).toEqual(['Travel', 'Basil the cat', 'Kitchen', 'Garden plans'])
    expect(await names('zurich basil')).toEqual(['Travel'])
    expect(await names('basil', '&owned=false')).toEqual([])
    expect(await names('basil', '&private=true')).toEqual([])

    const first = await h.call('GET', '/api/v1/threads?q=basil&limit=2', { token: owner.token })
    expect(first.body.has_more).toBe(true)
    const second = await h.call('GET', `/api/v1/threads?q=basil&limit=2&after=${first.body.last_id}`, {
      token: owner.token,
    })
    expect(second.body.data.map((t: { name: string }) => t.name)).toEqual(['Kitchen', 'Garden plans'])
    expect(second.body.has_more).toBe(false)
  })

  test('a thread with more distinct words than one PostgreSQL document holds is found by any of them', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { users } = h.tables
    const [row] = await h.orm.select({ organizationId: users.organizationId }).from(users).where(eq(users.id, owner.id))
    // About 1.2 MB of distinct words: past the 1 MB one tsvector holds, so on PostgreSQL the document is split.
    const words = Array.from({ length: 120_000 }, (_, i) => `word${i}`)
    await h.store.threads.createThread({
      organizationId: row?.organizationId as number,
      ownerId: owner.id,
      name: 'Huge',
      isPrivate: false,
      first: { role: 'summary', contents: [{ type: 'text', text: words.join(' ') }] },
      now: Date.now(),
    })
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Small', text: 'word5 and more' } })
    await h.app.decorator.engine.idle()
    const names = async (q: string) =>
      (await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}`, { token: owner.token })).body.data
        .map((t: { name: string }) => t.name)
        .sort()
    expect(await names('word5')).toEqual(['Huge', 'Small'])
    expect(await names('word119999')).toEqual(['Huge'])
    expect(await names('word5 word119999')).toEqual(['Huge'])
    expect(await names('word5 more')).toEqual(['Small'])
    expect(await names('word119999 absent')).toEqual([])
  })

  test('a word with letters and marks newer than SQLite’s Unicode tables stays one word', async () => {
    await using h = await harness()
    const owner = await h.user()
    // U+19B0 and U+1CF2 are letters or marks to JavaScript, separators to FTS5's unicode61 tables (Unicode 6.1):
    // the index splits only where search-text.ts does.
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Script', text: 'lamp kaᦰlo viᳲra' } })
    await h.app.decorator.engine.idle()
    for (const order of ['', '&sort_by=created_at']) {
      for (const q of ['kaᦰlo', 'viᳲra lamp', 'kaᦰ', '"kaᦰlo"']) {
        const found = await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}${order}`, { token: owner.token })
        expect(found.status).toBe(200)
        expect([q, found.body.data.map((t: { name: string }) => t.name)]).toEqual([q, ['Script']])
      }
      for (const q of ['ka lo', 'ᦰ ᳲ', '"kaᦰ"']) {
        const none = await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}${order}`, { token: owner.token })
        expect([q, none.body.data]).toEqual([q, []])
      }
    }
  })
})

test('updated_since takes RFC 3339 times and dates; a time without a zone or a day that does not exist is 400', async () => {
  await using h = await harness()
  const owner = await h.user()
  const status = async (since: string) =>
    (await h.call('GET', `/api/v1/threads?updated_since=${encodeURIComponent(since)}`, { token: owner.token })).status
  for (const since of ['2026-01-01', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00+02:00', '2024-02-29']) {
    expect(await status(since)).toBe(200)
  }
  // No zone, or a day that does not exist (which Date.parse would roll over into March).
  for (const since of ['2026-01-01T00:00:00', '2026-02-30T00:00:00Z', '2026-02-29', '2026-04-31']) {
    expect([since, await status(since)]).toEqual([since, 400])
  }
  // IDs are matched as the API writes them.
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  expect((await h.call('GET', `/api/v1/threads/${thread_id.toUpperCase()}`, { token: owner.token })).status).toBe(404)
})
