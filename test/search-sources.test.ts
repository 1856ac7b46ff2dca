// What a snippet may come from (ThreadRepository.searchSources): each thread's active messages newest first, the text
// of the files they attach, those files' names, the thread's name; bounded per thread however long it is. Rows are
// written directly so a test can hold thousands of characters and files the indexer has read, on either backend.
import { expect, test } from 'bun:test'
import type { PgDialect } from 'drizzle-orm/pg-core'
import type { NewAttachment } from '../src/attachments/repository'
import type { PgDb } from '../src/db/postgres'
import { newestMessagesQuery } from '../src/threads/repository.pg'
import { newestMessagesSql } from '../src/threads/repository.sqlite'
import { searchableText } from '../src/threads/search'
import type { SnippetSource } from '../src/threads/search-text'
import { searchSourceBounds } from '../src/threads/search-text'
import { onPostgres } from './support/backend'
import { harness } from './support/helpers'

type Block =
  | { type: 'text'; text: string }
  | { type: 'image'; attachment_id: string }
  | { type: 'document'; attachment_id: string }

async function setup() {
  const h = await harness()
  const owner = await h.user()
  const thread = async (name: string | null) =>
    (await h.call('POST', '/api/v1/threads', { token: owner.token, body: name === null ? {} : { name } })).body
      .thread_id as string
  let clock = 1_000
  /** A message of the thread, dated after every earlier one of the test (or at `at`). */
  const message = async (threadId: string, contents: Block[], options: { active?: boolean; at?: number } = {}) => {
    const id = Bun.randomUUIDv7()
    clock += 1
    await h.orm.insert(h.tables.messages).values({
      id,
      threadId,
      role: 'user',
      contents,
      text: searchableText(contents),
      active: options.active ?? true,
      createdAt: options.at ?? clock,
    })
    return id
  }
  /** A file of the thread, and its text as the file indexer leaves it (`state`), if any. */
  const file = async (threadId: string, filename: string, text?: { state: 'indexed' | 'pending'; text?: string }) => {
    const row: NewAttachment = {
      id: Bun.randomUUIDv7(),
      kind: 'text',
      mediaType: 'text/plain',
      filename,
      sizeBytes: 1,
      resized: false,
      createdAt: 0,
    }
    expect(await h.store.attachments.insertWithinQuota(threadId, [row], 1000)).toEqual({ inserted: true })
    if (text) {
      await h.orm
        .insert(h.tables.attachmentTexts)
        .values({ attachmentId: row.id, state: text.state, text: text.text ?? null, words: null })
    }
    return row.id
  }
  return {
    h,
    thread,
    message,
    file,
    sources: (ids: string[]) => h.store.threads.searchSources(ids),
  }
}

const text = (t: string): Block => ({ type: 'text', text: t })
const doc = (id: string): Block => ({ type: 'document', attachment_id: id })

test('messages newest first, then the files’ texts, their names, the thread’s name; each thread its own', async () => {
  const s = await setup()
  await using _ = s.h
  const trip = await s.thread('Trip to Lyon')
  const bare = await s.thread(null)
  const other = await s.thread('Other')
  const plan = await s.file(trip, 'plan.md', { state: 'indexed', text: 'Day one: the old town' })
  const photo = await s.file(trip, 'photo.png')
  const scan = await s.file(trip, 'scan.pdf', { state: 'pending' })
  const unattached = await s.file(trip, 'unattached.txt', { state: 'indexed', text: 'never attached' })
  const dropped = await s.file(trip, 'dropped.txt', { state: 'indexed', text: 'only in an old version' })
  const elsewhere = await s.file(other, 'elsewhere.txt', { state: 'indexed', text: 'another thread' })

  const first = await s.message(trip, [text('Where should we eat?'), doc(plan)])
  await s.message(trip, [text('An edited-away version'), doc(dropped)], { active: false })
  // Only files: no text of its own, so no source of its own; a block naming another thread's file finds nothing.
  const second = await s.message(trip, [{ type: 'image', attachment_id: photo }, doc(scan), doc(elsewhere)])
  const third = await s.message(trip, [text('Try the bouchons'), doc(plan)])
  await s.message(other, [text('Elsewhere')])

  const found = await s.sources([trip, bare, Bun.randomUUIDv7()])
  expect([...found.keys()].sort()).toEqual([trip, bare].sort())
  expect(found.get(bare)).toEqual([])
  expect(found.get(trip)).toEqual([
    { messageId: third, attachmentId: null, text: 'Try the bouchons' },
    { messageId: first, attachmentId: null, text: 'Where should we eat?' },
    // plan.md counts once, for the newer message that attaches it; the image and the pending PDF have no text.
    { messageId: third, attachmentId: plan, text: 'Day one: the old town' },
    { messageId: third, attachmentId: plan, text: 'plan.md' },
    { messageId: second, attachmentId: photo, text: 'photo.png' },
    { messageId: second, attachmentId: scan, text: 'scan.pdf' },
    { messageId: null, attachmentId: null, text: 'Trip to Lyon' },
  ])
  expect(JSON.stringify([...found.values()])).not.toContain(unattached)
  expect(await s.sources([])).toEqual(new Map())
})

test('a long thread gives its newest 50 messages, each up to 20,000 characters, sharing 50,000', async () => {
  const s = await setup()
  await using _ = s.h
  const { messages: count, messageChars, threadChars } = searchSourceBounds
  const long = await s.thread('Long')
  const ids: string[] = []
  for (let i = 0; i < count + 10; i++) ids.push(await s.message(long, [text(`message ${i}`)]))
  // Two messages at the same time as the 50th newest: the rank still keeps exactly 50.
  const tied = await s.thread('Tied')
  const tiedIds: string[] = []
  for (let i = 0; i < count + 2; i++)
    tiedIds.push(await s.message(tied, [text(`tied ${i}`)], { at: i < 5 ? 7 : 8 + i }))
  const wordy = await s.thread('Wordy')
  const big = 'w'.repeat(messageChars + 100)
  const wordyIds: string[] = []
  for (let i = 0; i < 4; i++) wordyIds.push(await s.message(wordy, [text(`${i}${big}`)]))

  const found = await s.sources([long, tied, wordy])
  const longSources = found.get(long) ?? []
  expect(longSources).toHaveLength(count + 1)
  expect(longSources.slice(0, count).map((source) => source.messageId)).toEqual(ids.slice(10).reverse())
  expect(longSources.at(-1)).toEqual({ messageId: null, attachmentId: null, text: 'Long' })
  expect((found.get(tied) ?? []).slice(0, count).map((source) => source.messageId)).toEqual(tiedIds.slice(2).reverse())
  // Each cut at 20,000; the third where the thread's 50,000 run out; the fourth gives none.
  expect(found.get(wordy)?.map((source) => `${source.messageId}: ${source.text.length}`)).toEqual([
    `${wordyIds[3]}: ${messageChars}`,
    `${wordyIds[2]}: ${messageChars}`,
    `${wordyIds[1]}: ${threadChars - 2 * messageChars}`,
    `null: ${'Wordy'.length}`,
  ])
})

test('a thread’s first 20 files count, newest message first, and their texts share 50,000 characters', async () => {
  const s = await setup()
  await using _ = s.h
  const { files: count, fileChars } = searchSourceBounds
  const many = await s.thread(null)
  const names = Array.from({ length: count + 5 }, (_, i) => `file-${String(i).padStart(2, '0')}.txt`)
  const big = 'f'.repeat(fileChars * 0.4)
  const ids: string[] = []
  for (const name of names) ids.push(await s.file(many, name, { state: 'indexed', text: `${name} ${big}` }))
  const older = await s.message(many, [text('older'), ...ids.slice(count).map(doc)])
  const newer = await s.message(many, [text('newer'), ...ids.slice(0, count).map(doc)])

  const sources = (await s.sources([many])).get(many) ?? []
  const files = sources.filter((source) => source.attachmentId !== null)
  expect(sources.slice(0, 2).map((source) => source.messageId)).toEqual([newer, older])
  // The newer message's 20, in its order; the older message's files are past the bound.
  const nameOf = (source: SnippetSource) => names[ids.indexOf(source.attachmentId as string)]
  const texts = files.filter((source) => source.text !== nameOf(source))
  const named = files.filter((source) => source.text === nameOf(source))
  expect(named.map((source) => [source.messageId, source.attachmentId])).toEqual(
    ids.slice(0, count).map((id) => [newer, id]),
  )
  const whole = `${names[0] as string} ${big}`.length
  expect(texts.map((source) => [source.attachmentId as string, source.text.length])).toEqual([
    [ids[0] as string, whole],
    [ids[1] as string, whole],
    [ids[2] as string, fileChars - 2 * whole],
  ])
})

test('each thread’s messages are read by the index up to the bound: never the whole thread', async () => {
  const s = await setup()
  await using _ = s.h
  const ids = [await s.thread('One'), await s.thread('Two')]
  for (const id of ids) for (let i = 0; i < 100; i++) await s.message(id, [text(`message ${i}`)])
  if (onPostgres) {
    const db = s.h.orm as unknown as PgDb
    // The database's own dialect object, which knows its naming (snake_case) to write the statement's text.
    const { dialect } = db as unknown as { dialect: PgDialect }
    const statement = dialect.sqlToQuery(newestMessagesQuery(ids))
    // Tables this small are read whole whatever the indexes; the plan shows what a large one gets.
    await db.$client`analyze messages`
    const plan = await db.$client.begin(async (tx) => {
      await tx`set local enable_seqscan = off`
      return (await tx.unsafe(`explain ${statement.sql}`, statement.params as never[])) as { 'QUERY PLAN': string }[]
    })
    const lines = plan.map((row) => row['QUERY PLAN'].trim())
    const limit = lines.findIndex((line) => line.startsWith('->  Limit'))
    expect(limit).toBeGreaterThan(-1)
    expect(lines[limit + 1]).toStartWith('->  Index Scan Backward using messages_thread_idx on messages')
    expect(lines[limit + 2]).toBe('Index Cond: (thread_id = threads.id)')
  } else {
    const plan = s.h.db.$client
      .query<{ detail: string }, never[]>(`explain query plan ${newestMessagesSql}`)
      .all(...([JSON.stringify(ids), '%'] as never[]))
      .map((row) => row.detail)
    // From each thread's 50th newest message on, by the index: the range is bounded however long the thread.
    expect(plan).toContain('SEARCH m USING INDEX messages_thread_idx (thread_id=? AND created_at>?) LEFT-JOIN')
    expect(plan).toContain('SEARCH messages USING INDEX messages_thread_idx (thread_id=?)')
  }
})
