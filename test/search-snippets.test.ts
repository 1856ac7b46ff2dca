// GET /api/v1/search: the threads `q` finds, as the thread list pages them, each with its best passage and where
// the words matched in it (issue 39, "Snippets"). Queries use whole words, which match under today's whole-word
// index and under issue 39's prefixes alike.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { type Harness, harness, type TestUser } from './support/helpers'
import { form, upload } from './support/uploads'

type Thread = { id: string; name: string | null }
type Hit = {
  thread: Thread
  message_id: string | null
  attachment_id: string | null
  snippet: string
  highlights: [number, number][]
}
type Page<T> = { data: T[]; first_id: string | null; last_id: string | null; has_more: boolean; limit: number }

async function create(h: Harness, user: TestUser, body: { name?: string; text?: string; is_private?: boolean }) {
  const reply = await h.call('POST', '/api/v1/threads', { token: user.token, body })
  expect(reply.status).toBe(201)
  await h.app.decorator.engine.idle()
  return reply.body.thread_id as string
}

async function messages(h: Harness, user: TestUser, threadId: string) {
  const reply = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })
  return reply.body.data as { id: string; role: string }[]
}

const search = async (h: Harness, user: TestUser, query: string) => {
  const reply = await h.call('GET', `/api/v1/search?${query}`, { token: user.token })
  expect(reply.status).toBe(200)
  return reply.body as Page<Hit>
}

/** The marked parts of a hit's snippet, as the web app marks them. */
const marked = (hit: Hit) => hit.highlights.map(([start, end]) => hit.snippet.slice(start, end))

test('each thread the list finds, in its order and pages, with its best passage and the words marked', async () => {
  await using h = await harness()
  const owner = await h.user({ org: 'acme' })
  const mate = await h.user({ org: 'acme' })
  const stranger = await h.user({ org: 'other' })
  const own = await h.user({ org: 'acme', scopes: ['threads:read:own'] })

  const dinner = await create(h, owner, { name: 'Dinner', text: 'Where should we eat in Lyon tonight?' })
  const named = await create(h, owner, { name: 'Lyon notes' })
  await create(h, owner, { name: 'Elsewhere', text: 'Nothing about that city' })
  const matesTrip = await create(h, mate, { name: 'Weekend', text: 'Trains to LYON on Friday' })
  await create(h, mate, { name: 'Hidden', text: 'Lyon, privately', is_private: true })
  await create(h, stranger, { name: 'Lyon elsewhere', text: 'Lyon' })

  const page = await search(h, owner, 'q=lyon')
  const listed = (await h.call('GET', '/api/v1/threads?q=lyon', { token: owner.token })).body as Page<Thread>
  expect(page.data.map((hit) => hit.thread)).toEqual(listed.data)
  expect({ ...page, data: [] }).toEqual({ ...listed, data: [] })
  expect(page.data.map((hit) => hit.thread.id)).toEqual([matesTrip, named, dinner])

  // The newest message holding the word: here the echo answer, which quotes the question.
  const [, dinnerAnswer] = await messages(h, owner, dinner)
  const [, matesAnswer] = await messages(h, mate, matesTrip)
  const trains = 'You said, in turn 1: > Trains to LYON on Friday'
  const eat = 'You said, in turn 1: > Where should we eat in Lyon tonight?'
  const at = (snippet: string, word: string): [number, number][] => [
    [snippet.indexOf(word), snippet.indexOf(word) + word.length],
  ]
  expect(page.data.map(({ thread, ...hit }) => hit)).toEqual([
    { message_id: matesAnswer?.id as string, attachment_id: null, snippet: trains, highlights: at(trains, 'LYON') },
    { message_id: null, attachment_id: null, snippet: 'Lyon notes', highlights: [[0, 4]] },
    { message_id: dinnerAnswer?.id as string, attachment_id: null, snippet: eat, highlights: at(eat, 'Lyon') },
  ])
  expect(page.data.flatMap(marked)).toEqual(['LYON', 'Lyon', 'Lyon'])

  // Pages as the list does, from the previous page's last thread.
  const first = await search(h, owner, 'q=lyon&limit=2')
  expect(first).toMatchObject({ has_more: true, limit: 2, first_id: matesTrip, last_id: named })
  const second = await search(h, owner, `q=lyon&limit=2&after=${first.last_id}`)
  expect([...first.data, ...second.data]).toEqual(page.data)
  expect(second.has_more).toBe(false)

  // The list's filters and visibility: only one's own threads with `owned` or a `threads:read:own` token.
  expect((await search(h, owner, 'q=lyon&owned=true')).data.map((hit) => hit.thread.id)).toEqual([named, dinner])
  expect((await search(h, own, 'q=lyon')).data).toEqual([])
  expect((await search(h, stranger, 'q=lyon')).data.map((hit) => hit.thread.name)).toEqual(['Lyon elsewhere'])
})

test('a passage from a file’s text names the file and the message that attached it', async () => {
  await using h = await harness()
  const owner = await h.user()
  const threadId = await create(h, owner, { name: 'Weekend in Lyon' })
  const uploaded = await upload(h, owner.token, threadId, form({ name: 'plan.md', bytes: '# Plan' }))
  expect(uploaded.status).toBe(201)
  const fileId = uploaded.body[0].id as string
  const sent = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
    token: owner.token,
    body: { text: 'Here is the plan', attachment_ids: [fileId] },
  })
  expect(sent.status).toBe(201)
  await h.app.decorator.engine.idle()
  // As the file indexer leaves a file it has read.
  const { attachmentTexts } = h.tables
  await h.orm
    .update(attachmentTexts)
    .set({ state: 'indexed', text: 'Day one: the old town of Lyon, then the market.', words: null })
    .where(eq(attachmentTexts.attachmentId, fileId))

  const [hit] = (await search(h, owner, 'q=lyon')).data
  expect(hit).toMatchObject({
    message_id: sent.body.message_id,
    attachment_id: fileId,
    snippet: 'Day one: the old town of Lyon, then the market.',
  })
  expect(marked(hit as Hit)).toEqual(['Lyon'])
})

test('a long message shows 200 characters around the words, cut at word boundaries', async () => {
  await using h = await harness()
  const owner = await h.user()
  const filler = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ')
  const text = `${filler(60, 'before')} the marmalade recipe is here ${filler(60, 'after')}`
  const threadId = await create(h, owner, { name: 'Breakfast' })
  await h.call('POST', `/api/v1/threads/${threadId}/messages`, { token: owner.token, body: { text } })
  await h.app.decorator.engine.idle()

  const [hit] = (await search(h, owner, 'q=recipe+marmalade')).data as Hit[]
  expect(hit?.snippet.length).toBeLessThanOrEqual(200)
  expect(hit?.snippet).toMatch(/^….*…$/)
  expect(hit?.snippet).toContain('the marmalade recipe is here')
  expect(marked(hit as Hit)).toEqual(['marmalade', 'recipe'])
  // Cut between words: every word shown is one of the message's whole words.
  const words = new Set(text.split(' '))
  for (const word of hit?.snippet.slice(1, -1).split(' ') ?? []) expect(words).toContain(word)
})

test('a q without a word finds nothing; a missing or too long q, a bad cursor or scope is refused', async () => {
  await using h = await harness()
  const owner = await h.user()
  await create(h, owner, { name: 'Anything', text: 'something' })
  for (const q of ['', '%20%20', '%3F!']) {
    expect(await search(h, owner, `q=${q}`)).toEqual({
      data: [],
      first_id: null,
      last_id: null,
      has_more: false,
      limit: 50,
    })
  }
  const refused = async (query: string, token = owner.token) => {
    const reply = await h.call('GET', `/api/v1/search${query}`, { token })
    return [reply.status, reply.body.error]
  }
  expect(await refused('')).toEqual([400, 'invalid_request'])
  expect(await refused(`?q=${'a'.repeat(501)}`)).toEqual([400, 'invalid_request'])
  expect(await refused(`?q=x&after=${Bun.randomUUIDv7()}`)).toEqual([400, 'invalid_request'])
  expect(await refused('?q=x&limit=0')).toEqual([400, 'invalid_request'])
  const writeOnly = await h.user({ scopes: ['threads:write'] })
  expect((await refused('?q=x', writeOnly.token))[0]).toBe(403)
  expect((await h.call('GET', '/api/v1/search?q=x')).status).toBe(401)
  // The applied limit is echoed, clamped as the list clamps it.
  expect((await search(h, owner, 'q=something&limit=500')).limit).toBe(200)
})
