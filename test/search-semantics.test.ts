// What a search finds, through the API, on both backends (issue 39): prefixes, quoted words and phrases, folding of
// case, diacritics and normal forms, scripts without spaces, one-letter words, unbalanced quotes, the 16-word
// limit, file names, and the list's order, filters and cursors under every rule. The expectations come from
// search-text.ts itself (an oracle over the same rows), so both backends are held to one definition.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { newId } from '../src/shared/ids'
import { holdsPhrase, parseQuery, searchTokens, type Term } from '../src/threads/search-text'
import { type Harness, harness, ManualClock, ScriptedRunner, sharedInspector, type TestUser } from './support/helpers'
import { form, upload } from './support/uploads'

/** A thread as the oracle sees it: what its document holds, and what the list filters and sorts by. */
interface Seeded {
  id: string
  name: string
  texts: string[]
  owner: 'me' | 'mate'
  isPrivate: boolean
  archived: boolean
  /** Creation order, which is also the update order here (nothing is written after). */
  order: number
  at: number
}

/** Whether a thread's name and texts hold every term, each in one source (search-text.ts is the definition). */
function holds(thread: Seeded, terms: Term[]): boolean {
  const sources = [thread.name, ...thread.texts].map((text) => searchTokens(text).map(({ token }) => token))
  return terms.every((term) =>
    sources.some((tokens) =>
      term.kind === 'phrase'
        ? holdsPhrase(tokens, term.tokens)
        : tokens.some((token) => (term.kind === 'word' ? token === term.token : token.startsWith(term.token))),
    ),
  )
}

describe('search semantics', () => {
  const clock = new ManualClock()
  let h: Harness
  let me: TestUser
  let mate: TestUser
  const seeded: Seeded[] = []

  /**
   * A thread whose messages hold `texts`, one each: a summary first, then messages written as rows (no answer adds
   * words of its own).
   */
  async function seed(
    name: string,
    texts: string[],
    options: Partial<Pick<Seeded, 'owner' | 'isPrivate' | 'archived'>> = {},
  ) {
    const owner = options.owner ?? 'me'
    const user = owner === 'me' ? me : mate
    const { users, threads } = h.tables
    const [row] = await h.orm.select({ organizationId: users.organizationId }).from(users).where(eq(users.id, user.id))
    clock.advance(1000)
    const { threadId } = await h.store.threads.createThread({
      organizationId: row?.organizationId as number,
      ownerId: user.id,
      name,
      isPrivate: options.isPrivate ?? false,
      first: { role: 'summary', contents: [{ type: 'text', text: texts[0] as string }] },
      now: clock.now(),
    })
    for (const text of texts.slice(1)) {
      const { messages } = h.tables
      await h.orm.insert(messages).values({
        id: newId(),
        threadId,
        role: 'user',
        contents: [{ type: 'text', text }],
        text,
        createdAt: clock.now(),
      })
    }
    // Written after its messages, as the app writes them: the thread's document is rewritten from them.
    if (texts.length > 1) await h.orm.update(threads).set({ updatedAt: clock.now() }).where(eq(threads.id, threadId))
    if (options.archived) await h.orm.update(threads).set({ archived: true }).where(eq(threads.id, threadId))
    seeded.push({
      id: threadId,
      name,
      texts,
      owner,
      isPrivate: options.isPrivate ?? false,
      archived: options.archived ?? false,
      order: seeded.length,
      at: clock.now(),
    })
    return threadId
  }

  const names = async (q: string, extra = '') => {
    const reply = await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}${extra}`, { token: me.token })
    expect(reply.status).toBe(200)
    return (reply.body.data as { name: string }[]).map((thread) => thread.name).sort()
  }

  beforeAll(async () => {
    h = await harness({ clock })
    me = await h.user()
    mate = await h.user()
    await seed('Lyon trip', ['We spent a weekend in Lyon at the café.'])
    await seed('Reverse', ['In Lyon for a long weekend, cafe\u0301 au lait']) // NFD é
    await seed('Plain cafe', ['cafe without accents'])
    await seed('Markdown notes', ['The markdown renderer is fast'])
    await seed('Mark', ['Ask mark about it'])
    await seed('Tokyo', ['我住在东京都'])
    await seed('Thai', ['สวัสดีครับ เพื่อน'])
    await seed('Letters', ['x marks the spot; xylophone'])
    await seed('Lone', ['xylophone only'])
    await seed('Greek', ['ΟΔΟΣ Ἀθηνῶν'])
    await seed('Hindi', ['नमस्ते दुनिया'])
    await seed('Private Lyon', ['lyonnais food'], { isPrivate: true })
    await seed('Their Lyon', ['Lyon by night'], { owner: 'mate' })
    await seed('Their secret Lyon', ['Lyon'], { owner: 'mate', isPrivate: true })
    await seed('Archived Lyon', ['Lyon, long ago'], { archived: true })
    await seed('Split phrase', ['a long weekend', 'in Lyon'])
    // Past the 50 newest messages snippets read: a phrase in the oldest is still found.
    await seed('Long thread', [
      'a zebra crossing downtown',
      ...Array.from({ length: 60 }, (_, i) => `filler note ${i}`),
    ])
    await seed('Many words', [
      'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa',
    ])
  })
  afterAll(() => h[Symbol.asyncDispose]())

  test('an unquoted word of 2+ characters matches the words starting with it; a quoted word only itself', async () => {
    expect(await names('lyo')).toEqual(['Lyon trip', 'Private Lyon', 'Reverse', 'Split phrase', 'Their Lyon'])
    expect(await names('mark')).toEqual(['Letters', 'Mark', 'Markdown notes'])
    expect(await names('"mark"')).toEqual(['Mark'])
    expect(await names('"lyon"')).toEqual(['Lyon trip', 'Private Lyon', 'Reverse', 'Split phrase', 'Their Lyon'])
  })

  test('a quoted phrase matches its words in order, within one message or name', async () => {
    expect(await names('"weekend in lyon"')).toEqual(['Lyon trip'])
    expect(await names('"in lyon"')).toEqual(['Lyon trip', 'Reverse', 'Split phrase'])
    expect(await names('“weekend in Lyon”')).toEqual(['Lyon trip'])
    expect(await names('"zebra crossing"')).toEqual(['Long thread'])
    expect(await names('"crossing zebra"')).toEqual([])
  })

  test('case, diacritics and normal forms fold both ways', async () => {
    const all = ['Lyon trip', 'Plain cafe', 'Reverse']
    for (const q of ['cafe', 'café', 'cafe\u0301', 'CAFÉ', '"café"', 'Ｃａｆｅ'])
      expect([q, await names(q)]).toEqual([q, all])
    expect(await names('οδος αθηνων')).toEqual(['Greek'])
  })

  test('scripts without spaces are found by any run of 2+ characters; marks keep words whole', async () => {
    expect(await names('东京')).toEqual(['Tokyo'])
    expect(await names('东京都')).toEqual(['Tokyo'])
    expect(await names('在东京')).toEqual(['Tokyo'])
    expect(await names('京东')).toEqual([])
    expect(await names('สวัสดี')).toEqual(['Thai'])
    expect(await names('नमस्ते')).toEqual(['Hindi'])
    expect(await names('नम')).toEqual(['Hindi'])
  })

  test('a one-letter word matches only itself; an unbalanced quote is ignored; the first 16 words count', async () => {
    expect(await names('x')).toEqual(['Letters'])
    expect(await names('xy')).toEqual(['Letters', 'Lone'])
    expect(await names('"weekend in ly')).toEqual(['Lyon trip', 'Reverse', 'Split phrase'])
    const sixteen = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa'
    expect(await names(`${sixteen} absent`)).toEqual(['Many words'])
    expect(await names(`absent ${sixteen}`)).toEqual([])
    expect(await names('-lyon OR')).toEqual([])
    expect(await names('"" ***')).toEqual([])
  })

  test('results keep every sort order, filter and cursor of the list', async () => {
    const queries = ['lyo', 'caf', '"in lyon"', 'lyon weekend', 'l', '东京']
    const orders: [string, (a: Seeded, b: Seeded) => number][] = [
      ['', (a, b) => b.order - a.order],
      ['&sort_dir=asc', (a, b) => a.order - b.order],
      ['&sort_by=created_at', (a, b) => b.order - a.order],
      ['&sort_by=created_at&sort_dir=asc', (a, b) => a.order - b.order],
    ]
    const since = (seeded[5] as Seeded).at
    const filters: [string, (t: Seeded) => boolean][] = [
      ['', (t) => !t.archived],
      ['&archived=true', () => true],
      ['&owned=true', (t) => t.owner === 'me' && !t.archived],
      ['&owned=false', (t) => t.owner !== 'me' && !t.archived],
      ['&private=true', (t) => t.isPrivate && t.owner === 'me' && !t.archived],
      ['&private=false&archived=true', (t) => !t.isPrivate],
      [`&updated_since=${encodeURIComponent(new Date(since).toISOString())}`, (t) => !t.archived && t.at > since],
    ]
    // What the caller may see: public threads of the organization and their own.
    const visible = (t: Seeded) => !t.isPrivate || t.owner === 'me'
    for (const q of queries) {
      const terms = parseQuery(q) as Term[]
      for (const [order, compare] of orders) {
        for (const [filter, keep] of filters) {
          const expected = seeded
            .filter((t) => visible(t) && keep(t) && holds(t, terms))
            .sort(compare)
            .map((t) => t.name)
          // Pages of two, walked by cursor, add up to the whole list.
          const walked: string[] = []
          let after = ''
          for (;;) {
            const page = await h.call(
              'GET',
              `/api/v1/threads?q=${encodeURIComponent(q)}${order}${filter}&limit=2${after}`,
              { token: me.token },
            )
            expect(page.status).toBe(200)
            walked.push(...page.body.data.map((t: { name: string }) => t.name))
            if (!page.body.has_more) break
            after = `&after=${page.body.last_id}`
          }
          expect({ q, order, filter, walked }).toEqual({ q, order, filter, walked: expected })
        }
      }
    }
  })
})

describe('search semantics: files', () => {
  const inspector = sharedInspector()
  test("a file's name is searchable as soon as a message attaches it", async () => {
    // The answer is held, so no text of it (the echo responder names files) comes into the thread's document.
    const runner = new ScriptedRunner()
    await using h = await harness({ inspector, runner })
    const me = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: me.token, body: { name: 'With a file' } })
    const threadId = created.body.thread_id
    const uploaded = await upload(h, me.token, threadId, form({ name: 'Budget-2024.txt', bytes: 'figures' }))
    expect(uploaded.status).toBe(201)
    const sent = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
      token: me.token,
      body: { text: 'see the attachment', attachment_ids: [uploaded.body[0].id] },
    })
    expect(sent.status).toBe(201)
    await runner.started(sent.body.message_id)
    for (const q of ['budget 2024', 'budg', '"budget 2024 txt"']) {
      const found = await h.call('GET', `/api/v1/threads?q=${encodeURIComponent(q)}`, { token: me.token })
      expect([q, found.body.data.map((thread: { name: string }) => thread.name)]).toEqual([q, ['With a file']])
    }
  })
})
