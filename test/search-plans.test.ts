// Search reads the thread documents in update order for `updated_at`, and picks one of two plans by how
// many documents match for `created_at` (src/threads/search.fts5.ts); on PostgreSQL it probes recency blocks in the
// update order (src/threads/search.pg.ts). Every way must return exactly what a plain list filtered by the words
// would: checked here against a simple oracle, with a word common enough to take the `walk` plan and rarer ones that
// take the `matches` plan, and with threads spread over millions of update sequences.
import { expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import type { PgDb } from '../src/db/postgres'
import { newId } from '../src/shared/ids'
import { flushSearchIndex, matchBound, searchPlan, termsQuery } from '../src/threads/search.fts5'
import { documentLexemes, probeSchedule } from '../src/threads/search.pg'
import { parseQuery, type Term } from '../src/threads/search-text'
import { messages, threads } from '../src/threads/threads.table'
import { onPostgres } from './support/backend'
import { harness, ManualClock } from './support/helpers'

// The plans are FTS5's (search.fts5.ts picks between them by its own match counts): SQLite only. PostgreSQL's probes
// are checked below.
test.skipIf(onPostgres)(
  'every search plan returns the pages a filtered list would, in order, across cursors',
  async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const me = await h.user({ org: 'acme' })
    const mate = await h.user({ org: 'acme' })
    const stranger = await h.user({ org: 'other' })
    const users = [me, mate, stranger]
    const vocabulary = ['alpha', 'beta', 'gamma', 'delta']
    const texts: Record<string, string[]> = {}
    const names: Record<string, string | null> = {}
    const created = h.db.$client.transaction(() => {
      const ids: string[] = []
      for (let i = 0; i < 300; i++) {
        const owner = users[i % 3] as (typeof users)[number]
        const id = newId()
        const name = i % 4 === 0 ? `topic ${vocabulary[i % 3]}` : null
        h.db
          .insert(threads)
          .values({
            id,
            organizationId: owner === stranger ? 2 : 1,
            ownerId: owner.id,
            name,
            isPrivate: i % 5 === 0,
            archived: i % 17 === 0,
            createdAt: clock.now() + i,
            updatedAt: clock.now(),
          })
          .run()
        names[id] = name
        texts[id] = []
        for (let k = 0; k < 9; k++) {
          // "common" is in nearly every message, but every 13th thread has it only in an inactive one; the
          // other words are rarer and sometimes split across messages.
          const common = i % 13 !== 0 || k === 4 ? 'common' : ''
          const text = `${common} ${k % 3 === 0 ? vocabulary[(i + k) % 4] : ''} ${k === 4 && i % 7 === 0 ? 'beta gamma' : ''}`
          const active = !(k === 4 && (i % 14 === 0 || i % 13 === 0))
          h.db
            .insert(messages)
            .values({
              id: newId(),
              threadId: id,
              role: 'user',
              contents: [{ type: 'text', text }],
              text,
              active,
              createdAt: clock.now(),
            })
            .run()
          if (active) texts[id]?.push(text)
        }
        ids.push(id)
      }
      // Archived threads are indexed but never listed: enough of them push `common` past the bound.
      for (let i = 0; i < matchBound; i++) {
        const id = newId()
        names[id] = 'common filler'
        h.db
          .insert(threads)
          .values({
            id,
            organizationId: 1,
            ownerId: mate.id,
            name: names[id],
            archived: true,
            createdAt: clock.now(),
            updatedAt: clock.now(),
          })
          .run()
      }
      // Updates in an order unlike creation, several at one instant: the update order breaks those ties.
      for (let n = 0; n < 300; n++) {
        const id = ids[(n * 7919) % 300] as string
        h.db
          .update(threads)
          .set({ updatedAt: clock.now() + 1000 + Math.floor(n / 3) })
          .where(eq(threads.id, id))
          .run()
      }
      return ids
    })()
    // Orgs: the harness created 'acme' first, 'other' second.
    expect(h.db.select().from(threads).where(eq(threads.ownerId, stranger.id)).all()[0]?.organizationId).toBe(2)

    const rows = h.db.select().from(threads).all()
    // The update order never runs against the timestamps.
    const byUpdate = rows.toSorted((a, b) => a.updateSeq - b.updateSeq)
    expect(byUpdate.every((t, i) => i === 0 || t.updatedAt >= (byUpdate[i - 1] as typeof t).updatedAt)).toBe(true)
    expect(new Set(rows.map((t) => t.updatedAt)).size).toBeLessThan(rows.length)
    // A thread matches when every word starts a word somewhere in its name or its active messages.
    const oracle = (words: string[], sortBy: 'created_at' | 'updated_at', dir: 'asc' | 'desc') => {
      const wordsOf = (t: (typeof rows)[number]) => {
        const all = [names[t.id] ?? '', ...(texts[t.id] ?? [])].join(' ').toLowerCase().split(/\W+/)
        return { has: (prefix: string) => all.some((word) => word.startsWith(prefix)) }
      }
      return rows
        .filter((t) => t.organizationId === 1 && (!t.isPrivate || t.ownerId === me.id) && !t.archived)
        .filter((t) => words.every((word) => wordsOf(t).has(word)))
        .sort((a, b) => {
          const key = sortBy === 'created_at' ? a.createdAt - b.createdAt : a.updateSeq - b.updateSeq
          const order = key !== 0 ? key : a.id < b.id ? -1 : 1
          return dir === 'asc' ? order : -order
        })
        .map((t) => t.id)
    }

    expect(oracle(['common'], 'updated_at', 'desc').length).toBeGreaterThan(100)
    expect(oracle(['beta', 'gamma'], 'updated_at', 'desc').length).toBeGreaterThan(5)
    // The plan is read from the index directly, so first bring it up to date as a search would.
    flushSearchIndex(h.db)
    const plans = new Set<string>()
    for (const q of [
      'common',
      'common alpha',
      'beta gam',
      'topic beta',
      'delt',
      'common nothing',
      'alpha delta',
      'comm',
    ]) {
      plans.add(searchPlan(h.db, termsQuery(h.db.$client, parseQuery(q) as Term[]), 1))
      for (const [sortBy, dir] of [
        ['updated_at', 'desc'],
        ['updated_at', 'asc'],
        ['created_at', 'asc'],
        ['created_at', 'desc'],
      ] as const) {
        const seen: string[] = []
        let after = ''
        for (let page = 0; page < 100; page++) {
          const reply = await h.call(
            'GET',
            `/api/v1/threads?q=${encodeURIComponent(q)}&limit=7&sort_by=${sortBy}&sort_dir=${dir}${after}`,
            { token: me.token },
          )
          expect(reply.status).toBe(200)
          seen.push(...reply.body.data.map((t: { id: string }) => t.id))
          if (!reply.body.has_more) break
          after = `&after=${reply.body.last_id}`
        }
        expect({ q, sortBy, dir, seen }).toEqual({ q, sortBy, dir, seen: oracle(q.split(' '), sortBy, dir) })
      }
    }
    expect(created.length).toBe(300)
    expect(300 * 9).toBeGreaterThan(matchBound)
    expect([...plans].sort()).toEqual(['matches', 'walk'])
    // 1.8 s on an idle machine, all of it CPU: too close to the 5 s default on a slower or busier one.
  },
  30_000,
)

// PostgreSQL probes recency blocks, newest (or oldest) first, then the rest of the range at once (search.pg.ts,
// probeSchedule): threads spread over millions of update sequences, so that searches cross blocks of every level and
// reach the last probe, must still list exactly what a filtered list would, in order, across cursors.
test.skipIf(!onPostgres)(
  'probes of recency blocks return the pages a filtered list would, both ways, across cursors',
  async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock })
    const me = await h.user({ org: 'acme' })
    const mate = await h.user({ org: 'acme' })
    const stranger = await h.user({ org: 'other' })
    const db = h.orm as unknown as PgDb
    const { users, threads: threadRows } = h.tables
    const organizationOf = new Map(
      (await h.orm.select({ id: users.id, org: users.organizationId }).from(users)).map((row) => [row.id, row.org]),
    )
    const vocabulary = ['apple', 'apricot', 'banana', 'cherry', 'damson', 'elder']
    const texts = new Map<string, string>()
    let state = 7
    const random = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return state / 2 ** 31
    }
    const ids: string[] = []
    for (let i = 0; i < 160; i++) {
      // Most writes follow closely; some follow after thousands or millions of others.
      const gap = random() < 0.1 ? Math.floor(random() * 3_000_000) : Math.floor(random() * 300)
      await db.execute(sql`update thread_update_clock set update_seq = update_seq + ${gap}`)
      const owner = [me, mate, stranger][i % 3] as typeof me
      const text = vocabulary.filter((_, k) => (i >> k) % 2 === 1 || k === i % 6).join(' ')
      clock.advance(1000)
      const { threadId } = await h.store.threads.createThread({
        organizationId: organizationOf.get(owner.id) as number,
        ownerId: owner.id,
        name: null,
        isPrivate: i % 5 === 0,
        first: { role: 'summary', contents: [{ type: 'text', text }] },
        now: clock.now(),
      })
      texts.set(threadId, text)
      ids.push(threadId)
      if (i % 17 === 0) await h.orm.update(threadRows).set({ archived: true }).where(eq(threadRows.id, threadId))
    }
    // Some threads move to the front again, as a write moves them.
    for (const id of ids.filter((_, i) => i % 9 === 4)) await h.store.threads.updateThread(id, {}, clock.now())
    const rows = await h.orm
      .select({
        id: threadRows.id,
        seq: threadRows.updateSeq,
        ownerId: threadRows.ownerId,
        isPrivate: threadRows.isPrivate,
        archived: threadRows.archived,
      })
      .from(threadRows)
    expect(Math.max(...rows.map((row) => row.seq))).toBeGreaterThan(2 ** (8 + 15))
    const holds = (id: string, terms: Term[]) => {
      const words = (texts.get(id) ?? '').split(' ')
      return terms.every((term) => term.kind === 'prefix' && words.some((word) => word.startsWith(term.token)))
    }
    for (const q of ['apple', 'ap', 'apr banana', 'elder damson cherry', 'cherry ban', 'zzz']) {
      for (const [extra, owned] of [
        ['', false],
        ['&owned=true', true],
      ] as const) {
        for (const dir of ['desc', 'asc'] as const) {
          const terms = parseQuery(q) as Term[]
          const expected = rows
            .filter((t) => organizationOf.get(t.ownerId) === organizationOf.get(me.id))
            .filter((t) => (!t.isPrivate || t.ownerId === me.id) && !t.archived && (!owned || t.ownerId === me.id))
            .filter((t) => holds(t.id, terms))
            .sort((a, b) => (dir === 'asc' ? a.seq - b.seq : b.seq - a.seq))
            .map((t) => t.id)
          const seen: string[] = []
          let after = ''
          for (let page = 0; page < 100; page++) {
            const reply = await h.call(
              'GET',
              `/api/v1/threads?q=${encodeURIComponent(q)}&limit=7&sort_dir=${dir}${extra}${after}`,
              { token: me.token },
            )
            expect(reply.status).toBe(200)
            seen.push(...reply.body.data.map((t: { id: string }) => t.id))
            if (!reply.body.has_more) break
            after = `&after=${reply.body.last_id}`
          }
          expect({ q, extra, dir, seen }).toEqual({ q, extra, dir, seen: expected })
        }
      }
    }
  },
)

test('the probes of a search cover its range once, in the page’s order, each block holding its documents', () => {
  const scope = { organizationId: 3 }
  for (const [lo, hi] of [
    [0, 0],
    [0, 255],
    [5, 100_000],
    [1_000, 9_999_999],
    [0, 2 ** 40],
  ] as const) {
    for (const descending of [true, false]) {
      const probes = probeSchedule("'x'", scope, lo, hi, descending)
      const ranges = probes.map((probe) => [probe.from, probe.to] as const)
      const ordered = descending ? ranges.toReversed() : ranges
      // Contiguous, disjoint, exactly [lo, hi].
      expect(ordered[0]?.[0]).toBe(lo)
      expect(ordered.at(-1)?.[1]).toBe(hi)
      for (let i = 1; i < ordered.length; i++) expect(ordered[i]?.[0]).toBe((ordered[i - 1]?.[1] as number) + 1)
      expect(probes.length).toBeLessThanOrEqual(21)
      // A document at either end of a probe holds the probe's block lexeme (or the probe is the whole scope).
      for (const probe of probes) {
        const block = probe.query.match(/'(~b[^']+)'$/)?.[1]
        if (block === undefined) {
          expect(probe).toBe(probes.at(-1) as (typeof probes)[number])
          continue
        }
        for (const seq of [probe.from, probe.to]) {
          expect(documentLexemes([], { organizationId: 3, ownerId: 1, updateSeq: seq })).toContain(block)
        }
      }
    }
  }
})
