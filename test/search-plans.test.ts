// Search reads the thread documents in update order for `updated_at`, and picks one of two plans by how
// many documents match for `created_at` (src/threads/search.fts5.ts). Every way must return exactly what a
// plain list filtered by the words would: checked here against a simple oracle, with a word common
// enough to take the `walk` plan and rarer ones that take the `matches` plan.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { newId } from '../src/shared/ids'
import { searchWords } from '../src/threads/search'
import { flushSearchIndex, ftsQuery, matchBound, searchPlan } from '../src/threads/search.fts5'
import { messages, threads } from '../src/threads/threads.table'
import { onPostgres } from './support/backend'
import { harness, ManualClock } from './support/helpers'

// The plans are FTS5's (search.fts5.ts picks between them by its own match counts): SQLite only. PostgreSQL's search
// returns the same results through other plans, checked by the search tests of listing.test.ts on both backends.
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
    // A thread matches when every word is somewhere in its name or its active messages.
    const oracle = (words: string[], sortBy: 'created_at' | 'updated_at', dir: 'asc' | 'desc') => {
      const wordsOf = (t: (typeof rows)[number]) =>
        new Set([names[t.id] ?? '', ...(texts[t.id] ?? [])].join(' ').toLowerCase().split(/\W+/))
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
    for (const q of ['common', 'common alpha', 'beta gamma', 'topic beta', 'delta', 'common nothing', 'alpha delta']) {
      plans.add(searchPlan(h.db, ftsQuery(searchWords(q) ?? []), 1))
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
