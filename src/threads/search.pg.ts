// Thread search on PostgreSQL: one `tsvector` document per thread in `thread_search` (GIN-indexed), built here from
// the app's own word splitting so that a search means what it means on SQLite's FTS5 (search.fts5.ts): whole words,
// every word must match, case and diacritics folded, no stemming, no stop words. Words are folded in JavaScript as
// FTS5's `unicode61 remove_diacritics 2` folds them, and stored and queried verbatim (`array_to_tsvector` and a
// quoted `tsquery`), so neither the server's text search parser nor its locale has a say.
//
// A write of `threads.updated_at` queues its thread in `search_pending` (the trigger in
// db/migrations/postgres/0001_update_order.sql); `flush` rewrites the queued documents and a search flushes first.
// The queue holds two rules, whatever runs at once (writers, background batches, searches on other instances):
// - A thread leaves the queue only in the transaction that rewrote its document, and only while no write to it is
//   in flight (its row is share-locked, skipping rows a writer holds): a write that commits later queues it again.
// - Documents are rewritten from the committed rows and never replaced by an older one (`update_seq` decides).
// So a document not queued is current, and a search that first rewrites every queued document (waiting for any
// batch another flush holds) sees every write committed before it started.
import { and, asc, eq, gt, inArray, lte, max, type Placeholder, type SQL, sql } from 'drizzle-orm'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import { prepared } from '../db/prepared'
import { type ThreadSearch, textWords } from './search'
import { messages, searchPending, threadSearch, threadSearchOverflow, threads } from './threads.table.pg'

/**
 * The combining marks FTS5's remove_diacritics 2 drops inside a word ("e\u0301" is "e"); every other mark, as in
 * the app's word splitting, separates words.
 */
const droppedMarks = /[\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d\u032e\u0330\u0331]/gu
const onlyDroppedMarks = /^[\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d\u032e\u0330\u0331]+$/u

/** Letters whose case FTS5's Unicode 6.1 tables do not know (cased since, or never folded there): kept as they are. */
const keptAsIs =
  /[\u037f\u0528\u052a\u052c\u052e\u13a0-\u13f5\u1c89\u1c90-\u1cba\u1cbd-\u1cbf\u2c2f\ua698\ua69a\ua796\ua798\ua79a\ua79c\ua79e\ua7ab-\ua7ae\ua7b0-\ua7b4\ua7b6\ua7b8\ua7ba\ua7bc\ua7be\ua7c0\ua7c2\ua7c4-\ua7c7\ua7c9\ua7cb\ua7cc\ua7ce\ua7d0\ua7d2\ua7d4\ua7d6\ua7d8\ua7da\ua7dc\ua7f5\u{104b0}-\u{104d3}\u{10570}-\u{1057a}\u{1057c}-\u{1058a}\u{1058c}-\u{10592}\u{10594}\u{10595}\u{10c80}-\u{10cb2}\u{10d50}-\u{10d65}\u{118a0}-\u{118bf}\u{16e40}-\u{16e5f}\u{16ea0}-\u{16eb8}\u{1e900}-\u{1e921}]/u

/** Case foldings FTS5 applies that lower-casing does not (µ is μ, final ς is σ, …), and one it leaves out (ǡ). */
const folded: Record<string, string> = {
  µ: 'μ',
  ſ: 's',
  ẛ: 's',
  ς: 'σ',
  ϐ: 'β',
  ϑ: 'θ',
  ϕ: 'φ',
  ϖ: 'π',
  ϰ: 'κ',
  ϱ: 'ρ',
  ϵ: 'ε',
  '\u1fbe': 'ι',
  Ǡ: 'ǡ',
  ǡ: 'ǡ',
}

const foldCache = new Map<string, string>()

/** One character as FTS5 folds it: lower case, and a Latin letter with diacritics as its ASCII letter. */
function foldCharacter(character: string): string {
  let result = foldCache.get(character)
  if (result !== undefined) return result
  result = folded[character]
  if (result === undefined) {
    const lower = keptAsIs.test(character) ? character : character.toLowerCase()
    // One character stays one (only İ lowers to two, and its letter is i either way).
    const one = [...lower].length === 1 ? lower : character
    const parts = one.normalize('NFD')
    result = parts.charCodeAt(0) < 128 && onlyDroppedMarks.test(parts.slice(1)) ? parts.charAt(0).toLowerCase() : one
  }
  // Bounded, whatever text comes in: a text of every character would otherwise keep them all.
  if (foldCache.size >= 65_536) foldCache.clear()
  foldCache.set(character, result)
  return result
}

/** Words longer than this many bytes are stored and queried as a hash: a `tsvector` word holds at most 2047 bytes. */
const longWordBytes = 64

/** A word (letters and digits only) as the index holds it: folded, and hashed when long. */
function lexeme(word: string): string {
  // Most words are ASCII: lower-casing is all FTS5 does to them.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range
  const folded = /^[\x00-\x7f]*$/.test(word) ? word.toLowerCase() : [...word].map(foldCharacter).join('')
  if (folded.length * 3 <= longWordBytes || Buffer.byteLength(folded) <= longWordBytes) return folded
  // `#` is no letter, so a hash never equals a word.
  return `#${new Bun.CryptoHasher('sha256').update(folded).digest('base64url').slice(0, 22)}`
}

/** The words a document holds, each once: FTS5 keeps the dropped marks inside the word they sit in. */
export function documentLexemes(text: string): string[] {
  return [...new Set(textWords(text.replace(droppedMarks, '')).map(lexeme))]
}

/** The words of a search (from searchWords), as the index holds them, each once. */
export function queryLexemes(words: string[]): string[] {
  return [...new Set(words.map(lexeme))]
}

/**
 * Bytes of distinct words one `tsvector` holds: PostgreSQL's limit is 1 MiB - 1, and past it `array_to_tsvector`
 * silently corrupts the document. A bigger document is split into parts (see `thread_search_overflow`).
 */
const partBytes = 1_000_000
/** The word the first part of a split document holds: `#` and four letters, which no word or hash can be. */
const splitMarker = '#more'

/** The words split into parts of at most `partBytes` bytes each; a split document's first part holds the marker. */
export function documentParts(lexemes: string[]): string[][] {
  const parts: string[][] = [[]]
  let bytes = 0
  for (const word of lexemes) {
    const size = Buffer.byteLength(word)
    if (bytes + size > partBytes - splitMarker.length) {
      parts.push([])
      bytes = 0
    }
    ;(parts.at(-1) as string[]).push(word)
    bytes += size
  }
  if (parts.length > 1) (parts[0] as string[]).push(splitMarker)
  return parts
}

/**
 * A `tsvector` of exactly these words: space-separated text split by `string_to_array`, because words hold no
 * spaces and a text parameter is what every driver sends alike. Raw SQL: Drizzle has no full-text functions.
 */
function vectorOf(words: string[]): SQL {
  return sql`array_to_tsvector(string_to_array(${words.join(' ')}, ' '))`
}

/** What a search binds for `documentHolding`: the GIN index's query, every word, and the words one by one. */
export interface SearchTerms {
  /** Every word, or the marker of a split document: what the GIN index answers. */
  indexed: string
  every: string
  /** The words, space-separated, checked one by one across a split document's parts. */
  each: string
}

export function searchTerms(words: string[]): SearchTerms {
  const lexemes = queryLexemes(words)
  // Quoted, so the words are taken as they are: nothing in them is read as tsquery syntax.
  const every = lexemes.map((word) => `'${word}'`).join(' & ')
  return { indexed: `(${every}) | '${splitMarker}'`, every, each: lexemes.join(' ') }
}

/**
 * Threads whose document holds every word: a condition on `thread_search` joined to the thread. The GIN index
 * answers `words or marker` exactly, so for a document that is not split (it has no overflow rows, and so no
 * marker) the index's answer is the answer: the document itself is never read, where checking it again read and
 * decompressed every match (about 20 µs each; a mid-frequency pair matches thousands of threads at 1M messages).
 * Split documents (rare) are then checked word by word across their parts. The terms are values or placeholders
 * (searchTerms), so a prepared statement serves every search.
 */
export function documentHolding(terms: { [K in keyof SearchTerms]: string | Placeholder }): SQL {
  const each = sql`(select ('''' || w || '''')::tsquery as q from unnest(string_to_array(${terms.each}, ' ')) as w)`
  const split = sql`exists (select 1 from ${threadSearchOverflow} where ${threadSearchOverflow.threadSeq} = ${threadSearch.threadSeq})`
  return sql`(${threadSearch.document} @@ ${terms.indexed}::tsquery and (not ${split}
    or not exists (select 1 from ${each} as word where not ${threadSearch.document} @@ word.q
      and not exists (select 1 from ${threadSearchOverflow} where ${threadSearchOverflow.threadSeq} = ${threadSearch.threadSeq}
        and ${threadSearchOverflow.document} @@ word.q))))`
}

/** Threads whose document holds every word (documentHolding with the words' terms bound). */
export function documentHolds(words: string[]): SQL {
  return documentHolding(searchTerms(words))
}

/**
 * Rewrites the documents of the queued threads `claim` selects and locks, in one transaction; answers how many were
 * claimed and the last of them. Only the threads no write holds leave the queue (see the top of this file).
 */
async function rewrite(db: PgDb, claim: (tx: Tx) => Promise<{ seq: number }[]>) {
  return db.transaction(async (tx) => {
    const claimed = (await claim(tx)).map((row) => row.seq)
    if (claimed.length === 0) return { count: 0, last: null }
    // A thread being deleted holds its row for update and then removes its place in the queue, which this unit
    // holds; writing its document checks the thread's key and would wait on the deletion: a deadlock. Such threads
    // are left to their deletion, and the rest are held against one until this unit ends.
    const alive = (
      await tx
        .select({ seq: threads.seq })
        .from(threads)
        .where(inArray(threads.seq, claimed))
        .for('key share', { skipLocked: true })
    ).map((row) => row.seq)
    // Threads a writer holds are skipped: their write queues them again when it commits.
    const settled = await tx
      .select({ seq: threads.seq })
      .from(threads)
      .where(inArray(threads.seq, claimed))
      .for('share', { skipLocked: true })
    // One statement, so each document is one committed state of its thread. A subquery per thread, so that its
    // messages are always read through their thread's index, whatever the planner knows of the tables.
    const text = tx
      .select({ text: sql<string>`string_agg(${messages.text}, ' ')` })
      .from(messages)
      .where(and(eq(messages.threadId, threads.id), eq(messages.active, true)))
    const sources = await tx
      .select({
        seq: threads.seq,
        organizationId: threads.organizationId,
        ownerId: threads.ownerId,
        updateSeq: threads.updateSeq,
        name: threads.name,
        text: sql<string | null>`(${text})`,
      })
      .from(threads)
      .where(inArray(threads.seq, alive))
    const partsOf = new Map<number, string[][]>()
    for (const source of sources) {
      partsOf.set(source.seq, documentParts(documentLexemes(`${source.name ?? ''}\n${source.text ?? ''}`)))
    }
    if (sources.length > 0) {
      const written = await tx
        .insert(threadSearch)
        .values(
          sources.map((source) => ({
            threadSeq: source.seq,
            organizationId: source.organizationId,
            ownerId: source.ownerId,
            updateSeq: source.updateSeq,
            document: vectorOf((partsOf.get(source.seq) as string[][])[0] as string[]),
          })),
        )
        .onConflictDoUpdate({
          target: threadSearch.threadSeq,
          set: {
            organizationId: sql`excluded.organization_id`,
            ownerId: sql`excluded.owner_id`,
            updateSeq: sql`excluded.update_seq`,
            document: sql`excluded.document`,
          },
          // Another flush may have written a newer state already: never go back.
          setWhere: sql`${threadSearch.updateSeq} <= excluded.update_seq`,
        })
        .returning({ seq: threadSearch.threadSeq })
      const rewritten = written.map((row) => row.seq)
      if (rewritten.length > 0) {
        await tx.delete(threadSearchOverflow).where(inArray(threadSearchOverflow.threadSeq, rewritten))
        const overflow = rewritten.flatMap((seq) =>
          (partsOf.get(seq) as string[][])
            .slice(1)
            .map((words, index) => ({ threadSeq: seq, part: index + 1, document: vectorOf(words) })),
        )
        if (overflow.length > 0) await tx.insert(threadSearchOverflow).values(overflow)
      }
    }
    if (settled.length > 0) {
      await tx.delete(searchPending).where(
        inArray(
          searchPending.threadSeq,
          settled.map((row) => row.seq),
        ),
      )
    }
    return { count: claimed.length, last: claimed.at(-1) as number }
  })
}

/** Queued threads a search rewrites per transaction. */
const searchChunk = 32

/**
 * Rewrites up to `batch` queued documents, oldest thread first, skipping those another flush holds; or, without
 * `batch`, every document queued when it starts, waiting for those another flush holds (a search's flush).
 */
export async function flushPgSearchIndex(db: PgDb, batch?: number): Promise<number> {
  if (batch !== undefined) {
    const { count } = await rewrite(db, (tx) =>
      tx
        .select({ seq: searchPending.threadSeq })
        .from(searchPending)
        .orderBy(asc(searchPending.threadSeq))
        .limit(batch)
        .for('update', { skipLocked: true }),
    )
    return count
  }
  // Searches call this on every request: with nothing queued (the usual case) no transaction is opened.
  const [queued] = await prepared(db, 'search:queued', () =>
    db
      .select({ last: max(searchPending.threadSeq) })
      .from(searchPending)
      .prepare('search_queued'),
  ).execute()
  const last = queued?.last
  if (last == null) return 0
  let total = 0
  let after = 0
  // Up to the last thread queued now, so that writes arriving meanwhile cannot keep a search flushing.
  for (;;) {
    const from = after
    const { count, last: reached } = await rewrite(db, (tx) =>
      tx
        .select({ seq: searchPending.threadSeq })
        .from(searchPending)
        .where(and(gt(searchPending.threadSeq, from), lte(searchPending.threadSeq, last)))
        .orderBy(asc(searchPending.threadSeq))
        .limit(searchChunk)
        .for('update'),
    )
    if (reached === null) return total
    total += count
    after = reached
  }
}

/** The PostgreSQL index's upkeep, for the background indexer (see search.ts). */
export function pgThreadSearch(db: PgDb): ThreadSearch {
  return {
    flush(batch) {
      return flushPgSearchIndex(db, batch)
    },
  }
}

/**
 * Queues the thread's document to be written again without a write to the thread, whose place in the lists stays:
 * for text read after its message was written (a file's, src/attachments/file-texts.ts). In the caller's
 * transaction, which holds the thread's row as a write does (FOR NO KEY UPDATE), so that the queue's rules at the
 * top of this file hold: a flush that began before it leaves the thread queued, or ends before it.
 */
export async function queueDocument(tx: Tx, threadSeq: number): Promise<void> {
  await tx.insert(searchPending).values({ threadSeq }).onConflictDoNothing()
}
