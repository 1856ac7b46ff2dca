// Thread search on PostgreSQL: one `tsvector` document per thread in `thread_search` (GIN-indexed), holding the
// tokens of search-text.ts verbatim (`array_to_tsvector` and quoted `tsquery` lexemes), so that a search means what it
// means on SQLite's FTS5 (search.fts5.ts): neither the server's text search parser nor its locale has a say. Besides
// its tokens (threadTokens in search.ts), a document holds lexemes no token can equal, which the GIN index answers
// in the same scan as the words:
// - each token's first 2-4 characters, marked (`lyo*`): an unquoted word of that length is looked up as one lexeme;
// - its organization (`~o7`) and owner (`~u42`): the scope of a search;
// - its recency blocks (`~b7.13.1234`: organization 7's update sequences 1234 * 2^13 up to the next block) at every
//   level: a search in the update order probes the newest blocks first and stops once a page is full (see
//   `probeSchedule` and repository.pg.ts).
// Longer prefixes are expanded to the words of the vocabulary (`search_terms`, kept at each rewrite) that start with
// them, and only scanned (`:*`, every lexeme in the range) when the vocabulary holds too many.
//
// A write of `threads.updated_at` queues its thread in `search_pending` (the trigger in
// db/migrations/postgres/0001_update_order.sql); `flush` rewrites the queued documents and a search flushes first.
// The queue holds two rules, whatever runs at once (writers, background batches, searches on other instances):
// - A thread leaves the queue only in the transaction that rewrote its document, and only while no write to it is
//   in flight (its row is share-locked, skipping rows a writer holds): a write that commits later queues it again.
// - Documents are rewritten from the committed rows and never replaced by an older one (`update_seq` decides).
// So a document not queued is current, and a search that first rewrites every queued document (waiting for any
// batch another flush holds) sees every write committed before it started. The documents a migration left to
// rebuild (`search_rebuild`) are the background batches' once the queue is empty; a search never waits for them.
import { and, asc, desc, eq, gt, inArray, lte, max, type Placeholder, type SQL, sql } from 'drizzle-orm'
import { attachments, attachmentTexts } from '../attachments/attachments.table.pg'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import { prepared } from '../db/prepared'
import { type ThreadSearch, threadTokens } from './search'
import {
  type CompiledQuery,
  compileTerms,
  expansionLimit,
  type IndexMatch,
  indexedPrefixChars,
  type Term,
  type Vocabulary,
  vocabularyPrefixes,
  vocabularyRange,
  vocabularyWords,
} from './search-text'
import {
  messages,
  searchPending,
  searchRebuild,
  searchTerms,
  threadSearch,
  threadSearchOverflow,
  threads,
  threadUpdateClock,
} from './threads.table.pg'

/** A token longer than this many bytes is stored and looked up as a hash: a `tsvector` lexeme holds at most 2047. */
const longTokenBytes = 2047

/** A token as the index holds it: itself, or a hash when too long for a lexeme (`#` is in no token). */
export function lexeme(token: string): string {
  if (token.length * 3 <= longTokenBytes || Buffer.byteLength(token) <= longTokenBytes) return token
  return `#${new Bun.CryptoHasher('sha256').update(token).digest('base64url').slice(0, 22)}`
}

/** The lexeme of a token's indexed prefix: `*` is in no token, so it never equals one. */
const prefixLexeme = (prefix: string) => `${prefix}*`

/**
 * Recency blocks: level `k` groups `2^(blockBits + k)` update sequences, for levels 0 to `blockLevels - 1` (1,024 up
 * to 8 million). A search's first block is of 1,024: a pair of common words fills a page from it at a million
 * messages, and rarer ones need fewer probes than from blocks of 256 (mid pairs 2.1 ms against 2.4).
 */
const blockBits = 10
const blockLevels = 14
/** A search probes at most this many blocks; the rest of its range is one last probe of the whole scope. */
const maxProbes = 20

const blockSize = (level: number) => 2 ** (blockBits + level)
/** Named by the block's size (its power of two), so that levels can change without renaming what documents hold. */
const blockLexeme = (organizationId: number, level: number, block: number) =>
  `~b${organizationId}.${blockBits + level}.${block}`
const organizationLexeme = (organizationId: number) => `~o${organizationId}`
const ownerLexeme = (ownerId: number) => `~u${ownerId}`

/** What a document holds besides its tokens: its scope and its recency blocks at every level. */
function scopeLexemes(thread: { organizationId: number; ownerId: number; updateSeq: number }): string[] {
  const lexemes = [organizationLexeme(thread.organizationId), ownerLexeme(thread.ownerId)]
  for (let level = 0; level < blockLevels; level++) {
    lexemes.push(blockLexeme(thread.organizationId, level, Math.floor(thread.updateSeq / blockSize(level))))
  }
  return lexemes
}

/** A document's lexemes: its scope first (so a split document's first part holds it), then each token and prefix. */
export function documentLexemes(
  tokens: string[],
  thread: { organizationId: number; ownerId: number; updateSeq: number },
): string[] {
  const lexemes = new Set(scopeLexemes(thread))
  for (const token of tokens) {
    lexemes.add(lexeme(token))
    let prefix = ''
    let characters = 0
    for (const character of token) {
      prefix += character
      characters += 1
      if (characters > indexedPrefixChars) break
      if (characters >= 2) lexemes.add(prefixLexeme(prefix))
    }
  }
  return [...lexemes]
}

/**
 * Bytes of distinct lexemes one `tsvector` holds: PostgreSQL's limit is 1 MiB - 1, and past it `array_to_tsvector`
 * silently corrupts the document. A bigger document is split into parts (see `thread_search_overflow`).
 */
const partBytes = 1_000_000
/** The lexeme the first part of a split document holds: `#` and four letters, which no token or hash can be. */
const splitMarker = '#more'

/** The lexemes split into parts of at most `partBytes` bytes each; a split document's first part holds the marker. */
export function documentParts(lexemes: string[]): string[][] {
  const parts: string[][] = [[]]
  let bytes = 0
  for (const word of lexemes) {
    // Each lexeme also costs its length and position fields: a few bytes.
    const size = Buffer.byteLength(word) + 4
    if (bytes + size > partBytes - splitMarker.length - 4) {
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
 * A `tsvector` of exactly these lexemes: space-separated text split by `string_to_array`, because lexemes hold no
 * spaces and a text parameter is what every driver sends alike. Raw SQL: Drizzle has no full-text functions.
 */
function vectorOf(lexemes: string[]): SQL {
  return sql`array_to_tsvector(string_to_array(${lexemes.join(' ')}, ' '))`
}

/** A lexeme quoted for `tsquery`: taken as it is, never read as syntax (no token holds a quote or a backslash). */
const quoted = (lexeme: string) => `'${lexeme}'`

function matchQuery(match: IndexMatch): string {
  if (match.kind === 'exact') return quoted(lexeme(match.token))
  if (match.kind === 'indexed-prefix') return quoted(prefixLexeme(match.token))
  return `${quoted(match.token)}:*`
}

/** Each group of a compiled query as a `tsquery`: any of its matches. */
function groupQueries(compiled: CompiledQuery): string[] {
  return compiled.all.map((group) => `(${group.map(matchQuery).join(' | ')})`)
}

/** What a search binds: the GIN index's query without its scope, and the groups one by one for split documents. */
export interface SearchQuery {
  /** Every group, or the marker of a split document: what the GIN index answers, to be ANDed with a scope. */
  indexed: string
  /** The groups, each a `tsquery`, one a line (no lexeme holds a line break): checked across a split document's parts. */
  groups: string
}

/** A parsed query as the index is asked it, given the vocabulary read for its long prefixes (searchStart). */
export function searchQueryOf(terms: readonly Term[], vocabulary: Vocabulary): SearchQuery {
  const groups = groupQueries(compileTerms(terms, vocabulary))
  return { indexed: `((${groups.join(' & ')}) | ${quoted(splitMarker)})`, groups: groups.join('\n') }
}

/** A parsed query as the index is asked it, with the vocabulary read for its long prefixes. */
export async function searchQuery(db: PgDb, terms: readonly Term[]): Promise<SearchQuery> {
  return searchQueryOf(terms, (await searchStart(db, terms)).vocabulary)
}

/**
 * Threads whose document holds every group, `query` the `tsquery` the GIN index answers (SearchQuery.indexed with a
 * scope). For a document that is not split (it has no overflow rows, and so no marker) the index's answer is the
 * answer: the document itself is never read. Split documents (rare) are then checked group by group across their
 * parts. `groups` is SearchQuery.groups (a value or placeholder), so a prepared statement serves every search.
 */
export function documentHolding(query: SQL | Placeholder, groups: SQL | Placeholder): SQL {
  const each = sql`(select g::tsquery as q from unnest(string_to_array(${groups}, E'\\n')) as g)`
  const split = sql`exists (select 1 from ${threadSearchOverflow} where ${threadSearchOverflow.threadSeq} = ${threadSearch.threadSeq})`
  return sql`(${threadSearch.document} @@ ${query}::tsquery and (not ${split}
    or not exists (select 1 from ${each} as word where not ${threadSearch.document} @@ word.q
      and not exists (select 1 from ${threadSearchOverflow} where ${threadSearchOverflow.threadSeq} = ${threadSearch.threadSeq}
        and ${threadSearchOverflow.document} @@ word.q))))`
}

/** A search's scope as one lexeme: the organization's threads, or also only the owner's. */
export function scopeQuery(indexed: string, scope: { organizationId: number; ownerId?: number }): string {
  const owner = scope.ownerId === undefined ? '' : ` & ${quoted(ownerLexeme(scope.ownerId))}`
  return `${indexed} & ${quoted(organizationLexeme(scope.organizationId))}${owner}`
}

/** One probe of a search in the update order: a `tsquery` with its block, and the update sequences it covers. */
export interface Probe {
  query: string
  from: number
  to: number
}

/**
 * The probes of a search in the update order over the update sequences `[lo, hi]`, in the page's order: blocks of
 * the organization, the first of the finest level at the newest (or, ascending, oldest) end, each next one a level
 * coarser, so that a word in every thread fills a page from a few hundred sequences and each probe reads as far
 * again as all before it; `maxProbes` reach millions of sequences, and what is left is one last probe of the whole
 * scope. A coarser block may reach into sequences an earlier probe read: each probe's bounds are the statement's
 * filter, so no thread comes twice. The GIN index answers each probe, whose block lexeme makes it cheap whatever
 * the words' frequency (its scan skips along the rarest lexeme's postings).
 */
export function probeSchedule(
  indexed: string,
  scope: { organizationId: number; ownerId?: number },
  lo: number,
  hi: number,
  descending: boolean,
): Probe[] {
  const probes: Probe[] = []
  // A block is the organization's: its lexeme scopes the probe alone, one lexeme fewer for the index to read.
  const owner = scope.ownerId === undefined ? '' : ` & ${quoted(ownerLexeme(scope.ownerId))}`
  const probe = (level: number, block: number, from: number, to: number) =>
    probes.push({ query: `${indexed} & ${quoted(blockLexeme(scope.organizationId, level, block))}${owner}`, from, to })
  let level = 0
  if (descending) {
    let end = hi + 1
    for (; end > lo && probes.length < maxProbes; level = Math.min(level + 1, blockLevels - 1)) {
      const block = Math.floor((end - 1) / blockSize(level))
      const from = Math.max(block * blockSize(level), lo)
      probe(level, block, from, end - 1)
      end = from
    }
    if (end > lo) probes.push({ query: scopeQuery(indexed, scope), from: lo, to: end - 1 })
  } else {
    let start = lo
    for (; start <= hi && probes.length < maxProbes; level = Math.min(level + 1, blockLevels - 1)) {
      const block = Math.floor(start / blockSize(level))
      const to = Math.min((block + 1) * blockSize(level) - 1, hi)
      probe(level, block, start, to)
      start = to + 1
    }
    if (start <= hi) probes.push({ query: scopeQuery(indexed, scope), from: start, to: hi })
  }
  return probes
}

/** Documents holding every term, in any order, in any organization: for checks of the index itself (tests). */
export async function documentHolds(db: PgDb, terms: Term[]): Promise<SQL> {
  const query = await searchQuery(db, terms)
  return documentHolding(sql`${query.indexed}`, sql`${query.groups}`)
}

/**
 * Rewrites the documents of the threads `claim` selects and locks, in one transaction; answers how many were
 * claimed and the last of them. Only the threads no write holds leave the queue (see the top of this file); a
 * rewritten thread also leaves the rebuild, unless a rebuild batch holds it (which rewrites it too).
 */
async function rewrite(db: PgDb, claim: (tx: Tx) => Promise<{ seq: number }[]>, from: 'pending' | 'rebuild') {
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
    // One statement, so each document is one committed state of its thread. Subqueries per thread, so that its
    // messages are always read through their thread's index, whatever the planner knows of the tables. A newline
    // joins texts: it ends a word and a run of characters without spaces alike, as separate texts would.
    const text = tx
      .select({ text: sql<string>`string_agg(${messages.text}, E'\\n')` })
      .from(messages)
      .where(and(eq(messages.threadId, threads.id), eq(messages.active, true)))
    // The files its active messages attach (a block's `attachment_id`), each once; `strpos` spares the JSON parse
    // for the messages (most) that attach nothing.
    const attached = sql`(select b ->> 'attachment_id' from ${messages}, jsonb_array_elements(${messages.contents}::jsonb) as b
      where ${messages.threadId} = ${threads.id} and ${messages.active} and strpos(${messages.contents}, '"attachment_id"') > 0)`
    const files = (column: SQL) =>
      tx
        .select({ value: column })
        .from(attachments)
        .leftJoin(
          attachmentTexts,
          and(eq(attachmentTexts.attachmentId, attachments.id), eq(attachmentTexts.state, 'indexed')),
        )
        .where(sql`${attachments.id} in ${attached}`)
    const sources = await tx
      .select({
        seq: threads.seq,
        organizationId: threads.organizationId,
        ownerId: threads.ownerId,
        updateSeq: threads.updateSeq,
        name: threads.name,
        text: sql<string | null>`(${text})`,
        fileNames: sql<string | null>`(${files(sql`string_agg(${attachments.filename}, E'\\n')`)})`,
        fileWords: sql<string | null>`(${files(sql`string_agg(${attachmentTexts.words}, ' ')`)})`,
      })
      .from(threads)
      .where(inArray(threads.seq, alive))
    const partsOf = new Map<number, string[][]>()
    const vocabulary = new Set<string>()
    for (const source of sources) {
      const tokens = threadTokens({
        name: source.name,
        texts: [source.text ?? ''],
        files: [{ name: source.fileNames ?? '', words: source.fileWords }],
      })
      for (const word of vocabularyWords(tokens)) if (lexeme(word) === word) vocabulary.add(word)
      partsOf.set(source.seq, documentParts(documentLexemes(tokens, source)))
    }
    // The vocabulary first, in one order for every flush (concurrent inserts of the same terms wait on each other in
    // that order, never in a cycle), before any document row is held. Only grows: a stale term expands to nothing.
    if (vocabulary.size > 0) {
      await tx.execute(
        sql`insert into ${searchTerms} (term) select t from unnest(string_to_array(${[...vocabulary].join(' ')}, ' ')) as t
          order by t on conflict do nothing`,
      )
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
            .map((lexemes, index) => ({ threadSeq: seq, part: index + 1, document: vectorOf(lexemes) })),
        )
        if (overflow.length > 0) await tx.insert(threadSearchOverflow).values(overflow)
      }
    }
    if (from === 'rebuild') {
      // Rewritten from a committed state: done with, whoever writes to it next (the queue takes that write).
      await tx.delete(searchRebuild).where(inArray(searchRebuild.threadSeq, claimed))
    } else {
      if (settled.length > 0) {
        await tx.delete(searchPending).where(
          inArray(
            searchPending.threadSeq,
            settled.map((row) => row.seq),
          ),
        )
      }
      // Never waiting for a rebuild batch, which may be waiting for this unit's documents.
      if (alive.length > 0) {
        await tx.execute(
          sql`delete from ${searchRebuild} where ${searchRebuild.threadSeq} in (select ${searchRebuild.threadSeq}
            from ${searchRebuild} where ${inArray(searchRebuild.threadSeq, alive)} for update skip locked)`,
        )
      }
    }
    return { count: claimed.length, last: claimed.at(-1) as number }
  })
}

/** Queued threads a search rewrites per transaction. */
const searchChunk = 32

/**
 * Rewrites up to `batch` queued documents, oldest thread first, skipping those another flush holds, then as many
 * of the documents left to rebuild, newest thread first; or, without `batch`, every document queued when it starts,
 * waiting for those another flush holds (a search's flush).
 */
export async function flushPgSearchIndex(db: PgDb, batch?: number): Promise<number> {
  if (batch !== undefined) {
    const { count } = await rewrite(
      db,
      (tx) =>
        tx
          .select({ seq: searchPending.threadSeq })
          .from(searchPending)
          .orderBy(asc(searchPending.threadSeq))
          .limit(batch)
          .for('update', { skipLocked: true }),
      'pending',
    )
    if (count >= batch) return count
    const rebuilt = await rewrite(
      db,
      (tx) =>
        tx
          .select({ seq: searchRebuild.threadSeq })
          .from(searchRebuild)
          .orderBy(desc(searchRebuild.threadSeq))
          .limit(batch - count)
          .for('update', { skipLocked: true }),
      'rebuild',
    )
    return count + rebuilt.count
  }
  return flushQueued(db, (await searchStart(db)).queued)
}

/** What a search reads before it asks the index (searchStart). */
export interface SearchStart {
  /** The last thread queued for a rewrite, or null when none is (the usual case). */
  queued: number | null
  /** The head of the update order (the last update sequence committed), where the probes start. */
  head: number
  /** The vocabulary's words for the query's long prefixes, up to `expansionLimit + 1` each, so that too many shows. */
  vocabulary: Vocabulary
}

/**
 * What a search reads first, in one round trip: a search's statements are each a round trip to the server, and
 * reading the queue, the clock and each long prefix's words one by one cost a mid-frequency pair (two long words)
 * four of them.
 */
export async function searchStart(db: PgDb, terms: readonly Term[] = []): Promise<SearchStart> {
  const prefixes = vocabularyPrefixes(terms)
  const ranges = prefixes.map(vocabularyRange)
  // Raw SQL for the prefixes' ranges only: Drizzle has no table function with column names.
  const words = sql`(select coalesce(json_agg(json_build_array(r.i, w.term) order by r.i, w.term), '[]')
    from unnest(${sql.placeholder('froms')}::text[], ${sql.placeholder('tos')}::text[]) with ordinality as r(low, high, i)
    cross join lateral (select ${searchTerms.term} from ${searchTerms} where ${searchTerms.term} >= r.low
      and ${searchTerms.term} < r.high order by ${searchTerms.term} limit ${expansionLimit + 1}) as w)`
  const [row] = await prepared(db, 'search:start', () =>
    db
      .select({
        queued: sql<number | null>`(${db.select({ last: max(searchPending.threadSeq) }).from(searchPending)})`,
        head: threadUpdateClock.updateSeq,
        words: sql<[number, string][] | string>`${words}`,
      })
      .from(threadUpdateClock)
      .where(eq(threadUpdateClock.id, 1))
      .prepare('search_start'),
  ).execute({ froms: ranges.map((range) => range.from), tos: ranges.map((range) => range.to) })
  const vocabulary = new Map<string, string[]>(prefixes.map((prefix) => [prefix, []]))
  const found = typeof row?.words === 'string' ? (JSON.parse(row.words) as [number, string][]) : (row?.words ?? [])
  for (const [place, term] of found) vocabulary.get(prefixes[place - 1] as string)?.push(term)
  return { queued: row?.queued ?? null, head: row?.head ?? 0, vocabulary }
}

/**
 * Rewrites every document queued up to thread `last` (searchStart), waiting for those another flush holds, so
 * that writes arriving meanwhile cannot keep a search flushing; answers how many it rewrote.
 */
export async function flushQueued(db: PgDb, last: number | null): Promise<number> {
  if (last == null) return 0
  let total = 0
  let after = 0
  for (;;) {
    const from = after
    const { count, last: reached } = await rewrite(
      db,
      (tx) =>
        tx
          .select({ seq: searchPending.threadSeq })
          .from(searchPending)
          .where(and(gt(searchPending.threadSeq, from), lte(searchPending.threadSeq, last)))
          .orderBy(asc(searchPending.threadSeq))
          .limit(searchChunk)
          .for('update'),
      'pending',
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
    async rebuilding() {
      const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(searchRebuild)
      return row?.n ?? 0
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
