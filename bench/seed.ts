// Seeds a fresh benchmark database through the app's own migrations: organizations, users, threads and
// messages shaped like real use (conversations interleaved in time, Zipf-distributed vocabulary), written
// with raw prepared statements in large transactions so a million messages take about a minute. The
// search documents are built at the end from the same SQL the triggers run.
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { sqliteStore } from '../src/store'
import { rebuildSearchIndex } from '../src/threads/search.fts5'
import { testOrigin, tokenHolder } from '../test/support/audit'
import { cjkText, prng, textOf, vocabulary, zipfSampler } from './words'

export interface SeedUser {
  id: number
  organizationId: number
  token: string
}

export interface SeedInfo {
  users: SeedUser[]
  threads: number
  messages: number
  /**
   * Search queries by class: two words by frequency (common, mid, rare) whose words occur together in at least one
   * message; prefixes, alone or after a whole word; quoted phrases of two words that stand together in a message;
   * and runs of Chinese or Japanese characters (two characters, a word; three or more, a phrase of pairs).
   */
  terms: { common: string[]; mid: string[]; rare: string[]; prefix: string[]; phrase: string[]; cjk: string[] }
  seconds: number
}

const organizationCount = 5
const userCount = 50
const vocabularySize = 30_000
const zipfExponent = 1.05
/** The share of messages that end with a sentence without spaces. */
const cjkShare = 0.03
/** The seeded history ends here, so every run builds the same database. */
const end = Date.parse('2026-01-01T00:00:00.000Z')
const span = 2 * 365 * 24 * 3600_000

export async function seed(path: string, scale: number): Promise<SeedInfo> {
  const started = performance.now()
  const db = openDatabase(path)
  migrateDatabase(db)
  const sqlite = db.$client
  const random = prng(42)
  const words = vocabulary(vocabularySize)
  const rank = zipfSampler(words.length, zipfExponent, random)
  const threadCount = Math.max(50, Math.round(100_000 * scale))
  const messageTarget = Math.max(500, Math.round(1_000_000 * scale))

  const users: SeedUser[] = []
  sqlite.transaction(() => {
    const org = sqlite.prepare('insert into organizations (slug, name, created_at) values (?, ?, ?)')
    for (let i = 1; i <= organizationCount; i++) org.run(`org${i}`, `Organization ${i}`, end - span)
    const user = sqlite.prepare(
      `insert into users (sub, organization_id, email, name, role, password_hash, created_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
    )
    for (let i = 0; i < userCount; i++) {
      const organizationId = (i % organizationCount) + 1
      const role = i < organizationCount ? 'owner' : 'member'
      // No one signs in during the benchmark: a placeholder hash keeps seeding free of argon2 work.
      const row = user.run(
        Bun.randomUUIDv7(),
        organizationId,
        `user${i}@bench.test`,
        `User ${i}`,
        role,
        '-',
        end - span,
      )
      users.push({ id: Number(row.lastInsertRowid), organizationId, token: '' })
    }
  })()
  const store = sqliteStore(db)
  const { accessTokens } = store
  for (const user of users) {
    user.token = await createPersonalAccessToken(
      accessTokens,
      { user: await tokenHolder(store, user.id), name: 'bench', scopes: ['threads:read', 'threads:write'] },
      end,
      testOrigin,
    )
  }

  // Threads: creation times spread over two years, an even number of turns each (user, assistant, ...).
  const threadCreated = new Float64Array(threadCount)
  for (let i = 0; i < threadCount; i++) threadCreated[i] = end - span + random() * (span - 3600_000)
  threadCreated.sort()
  const perThread = new Uint16Array(threadCount)
  let planned = 0
  for (let i = 0; i < threadCount; i++) {
    perThread[i] = 2 * (1 + Math.floor(random() * 9))
    planned += perThread[i] as number
  }
  // Bring the total to the target exactly, a pair of turns at a time.
  for (let i = 0; planned !== messageTarget; i = (i + 1) % threadCount) {
    if (planned < messageTarget) {
      perThread[i] = (perThread[i] as number) + 2
      planned += 2
    } else if ((perThread[i] as number) > 2) {
      perThread[i] = (perThread[i] as number) - 2
      planned -= 2
    }
    if (Math.abs(planned - messageTarget) === 1) break
  }

  // Message times: a burst of turns seconds to minutes apart, sometimes resumed days later.
  const messageCount = planned
  const messageTime = new Float64Array(messageCount)
  const messageThread = new Uint32Array(messageCount)
  const threadUpdated = new Float64Array(threadCount)
  let m = 0
  for (let t = 0; t < threadCount; t++) {
    let time = threadCreated[t] as number
    for (let k = 0; k < (perThread[t] as number); k++) {
      if (k > 0) time += random() < 0.05 ? random() * 30 * 86_400_000 : 2_000 + random() * 180_000
      time = Math.min(time, end - 1)
      messageTime[m] = time
      messageThread[m] = t
      m++
    }
    threadUpdated[t] = time
  }
  const order = new Uint32Array(messageCount)
  for (let i = 0; i < messageCount; i++) order[i] = i
  order.sort((a, b) => (messageTime[a] as number) - (messageTime[b] as number))

  const owner = new Uint16Array(threadCount)
  const threadIds: string[] = new Array(threadCount)
  const insertThread = sqlite.prepare(
    `insert into threads (id, organization_id, owner_id, name, state, is_private, archived, created_at, updated_at)
     values (?, ?, ?, ?, 'ready', ?, ?, ?, ?)`,
  )
  // Inserted in update order, as the app would have written them: the triggers give each the next
  // update sequence and never let updated_at fall behind an earlier insert's.
  const byUpdate = Array.from({ length: threadCount }, (_, t) => t).sort(
    (a, b) => (threadUpdated[a] as number) - (threadUpdated[b] as number),
  )
  const owners = Array.from({ length: threadCount }, () => users[Math.floor(random() * users.length)] as SeedUser)
  sqlite.transaction(() => {
    for (const t of byUpdate) {
      const user = owners[t] as SeedUser
      owner[t] = user.id
      const created = Math.floor(threadCreated[t] as number)
      threadIds[t] = Bun.randomUUIDv7('hex', created)
      const name = random() < 0.7 ? textOf(words, 2 + Math.floor(random() * 4), rank, random).slice(0, -1) : null
      insertThread.run(
        threadIds[t] as string,
        user.organizationId,
        user.id,
        name,
        random() < 0.2 ? 1 : 0,
        random() < 0.05 ? 1 : 0,
        created,
        Math.floor(threadUpdated[t] as number),
      )
    }
  })()

  const insertMessage = sqlite.prepare(
    `insert into messages (id, thread_id, role, contents, text, active, reply_to, created_at)
     values (?, ?, ?, ?, ?, 1, ?, ?)`,
  )
  const insertGeneration = sqlite.prepare(
    `insert into generations (message_id, thread_id, status, attempts, created_at, finished_at)
     values (?, ?, 'complete', 1, ?, ?)`,
  )
  const turn = new Uint16Array(threadCount)
  const lastUserMessage: (string | undefined)[] = new Array(threadCount)
  const batch = 50_000
  // A few messages end with a sentence in Chinese or Japanese, drawn from their own generator so that every other
  // text is what it was before they were added.
  const cjkRandom = prng(2024)
  for (let from = 0; from < messageCount; from += batch) {
    sqlite.transaction(() => {
      for (let i = from; i < Math.min(from + batch, messageCount); i++) {
        const index = order[i] as number
        const t = messageThread[index] as number
        const created = Math.floor(messageTime[index] as number)
        const isUser = (turn[t] as number) % 2 === 0
        turn[t] = (turn[t] as number) + 1
        // Lengths skewed like chat: short questions, longer answers.
        const length = isUser ? 4 + Math.floor(random() ** 2 * 40) : 20 + Math.floor(random() ** 1.5 * 180)
        let text = textOf(words, length, rank, random)
        if (cjkRandom() < cjkShare) text += ` ${cjkText(4 + Math.floor(cjkRandom() * 12), cjkRandom)}`
        const id = Bun.randomUUIDv7('hex', created)
        const threadId = threadIds[t] as string
        insertMessage.run(
          id,
          threadId,
          isUser ? 'user' : 'assistant',
          JSON.stringify([{ type: 'text', text }]),
          text,
          isUser ? null : (lastUserMessage[t] ?? null),
          created,
        )
        if (isUser) {
          lastUserMessage[t] = id
          insertGeneration.run(id, threadId, created, created + 1000)
        }
      }
    })()
  }

  // Messages were written without touching their threads: the documents are built once, at the end.
  rebuildSearchIndex(db)
  const terms = pickTerms(sqlite, words)
  sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
  sqlite.close()
  return { users, threads: threadCount, messages: messageCount, terms, seconds: (performance.now() - started) / 1000 }
}

/**
 * Queries by class. Common pairs come from the head of the distribution; mid and rare pairs, prefixes, phrases and
 * runs without spaces are taken from real messages, so each matches at least one.
 */
function pickTerms(sqlite: ReturnType<typeof openDatabase>['$client'], words: string[]): SeedInfo['terms'] {
  const rankOf = new Map(words.map((word, index) => [word, index]))
  const random = prng(99)
  const common: string[] = []
  for (let i = 0; i < 20; i++) {
    const a = Math.floor(random() * 15)
    const b = (a + 1 + Math.floor(random() * 14)) % 15
    common.push(`${words[a]} ${words[b]}`)
  }
  const sample = sqlite
    .query<{ text: string }, [number]>('select text from messages where seq % 97 = 0 limit ?')
    .all(5000)
  const wordsOf = (text: string) => [...new Set(text.toLowerCase().match(/[a-z]+/g) ?? [])]
  const inRange = (low: number, high: number, text: string) =>
    wordsOf(text).filter((word) => {
      const r = rankOf.get(word)
      return r !== undefined && r >= low && r < high
    })
  const pairs = (low: number, high: number) => {
    const found: string[] = []
    for (const { text } of sample) {
      const candidates = inRange(low, high, text)
      if (candidates.length >= 2) found.push(`${candidates[0]} ${candidates[1]}`)
      if (found.length === 20) break
    }
    return found
  }
  // Prefixes of 2 to 6 letters of mid words (those of 5+ are expanded through the vocabulary on PostgreSQL), alone
  // or after a whole mid word.
  const prefix: string[] = []
  for (const { text } of sample) {
    const candidates = inRange(150, 600, text).filter((word) => word.length >= 7)
    const [whole, cut] = candidates
    if (whole === undefined || cut === undefined) continue
    const stem = cut.slice(0, 2 + (prefix.length % 5))
    prefix.push(prefix.length % 2 === 0 ? stem : `${whole} ${stem}`)
    if (prefix.length === 20) break
  }
  // Two words that stand together in a sentence, the second past the 150 most common, as a phrase people look for
  // holds a word that tells it apart. (Two common words rarely side by side, such as "because work", make every
  // thread holding both a candidate to check: see bench/README.md.)
  const phrase: string[] = []
  for (const { text } of sample) {
    const sentence =
      text
        .toLowerCase()
        .split(/[.?,]/)[0]
        ?.match(/[a-z]+/g) ?? []
    const at = sentence.findIndex((word, i) => i > 0 && (rankOf.get(word) ?? 0) >= 150)
    if (at > 0) phrase.push(`"${sentence[at - 1]} ${sentence[at]}"`)
    if (phrase.length === 20) break
  }
  // Runs of 2 to 4 characters from the sentences without spaces: a pair is a word, a longer run a phrase.
  const cjk: string[] = []
  for (const { text } of sqlite
    .query<{ text: string }, []>(`select text from messages where seq % 13 = 0 and text like '%。' limit 200`)
    .all()) {
    const run = text.slice(text.lastIndexOf(' ') + 1, -1)
    const length = 2 + (cjk.length % 3)
    const at = Math.floor(random() * Math.max(1, run.length - length))
    cjk.push(run.slice(at, at + length))
    if (cjk.length === 20) break
  }
  return { common, mid: pairs(150, 600), rare: pairs(4000, 30_000), prefix, phrase, cjk }
}
