// Thread search on SQLite: an FTS5 index and the SQL that reads it, the only raw SQL of the threads feature,
// because Drizzle cannot express FTS5 MATCH. The index is created in db/migrations/sqlite/0020_search_tokens.sql
// (its tokenizer, prefixes and why); the triggers that mark documents stale are in 0006_deferred_search.sql, and the
// functions at the end of this file rewrite them. repository.sqlite.ts builds its list statements from the pieces
// here.
//
// Each thread is one FTS5 document: its distinct tokens (threadTokens in search.ts), made in JavaScript and joined
// by spaces, and its owner's token. Its rowid is its search key, (organization_id << 40) | (2^40 - 1 - update_seq).
// An organization's threads are one rowid range, most recently updated first, so a search in the default order
// reads the matching documents in the order the page needs and stops after one page whatever the terms' frequency.
// A search must return exactly the threads a plain list would, in the same order: it walks the same update sequence.
//
// A query is the compiled terms of search-text.ts: every group must match (AND), by any of its matches (OR); an exact
// token is `"token"`, a prefix `"token" *`. Prefixes of 2-4 characters are read from FTS5's own prefix indexes.
// Longer ones are expanded to the words of the vocabulary (search_terms, kept at each rewrite) that start with them,
// each looked up exactly: FTS5 reads several terms' lists lazily in key order, but a prefix it must scan itself is
// merged whole first (a mid-frequency word's prefix took 4-8 ms at 1M messages, against 0.2 ms expanded; see
// docs/architecture.md). Only a prefix with too many words is left to FTS5's scan.
//
// The `created_at` order has no such index; two plans serve it, each fast where the other is slow, so
// the repository counts the matches first (cheaply, up to a bound) and picks one:
// - few matches: start from the FTS matches, look their threads up and sort them.
// - many matches: walk the caller's threads in order and probe each one's document.
import type { Database, Statement } from 'bun:sqlite'
import { eq, type Placeholder, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { type DocumentSource, type ThreadSearch, threadTokens } from './search'
import {
  type CompiledQuery,
  compileTerms,
  expansionLimit,
  type IndexMatch,
  type Term,
  vocabularyPrefixes,
  vocabularyRange,
  vocabularyWords,
} from './search-text'
import { searchPending, threads } from './threads.table'

/** Up to this many matching documents the `created_at` search starts from the matches, past it from the threads. */
export const matchBound = 2000

/** The low 40 bits of a search key: 2^40 - 1 - update_seq. */
export const keyMask = 1099511627775

/** One match as FTS5 syntax: tokens hold only letters, digits and marks, so quoting them can never be escaped. */
function ftsMatch(match: IndexMatch): string {
  return match.kind === 'exact' ? `"${match.token}"` : `"${match.token}" *`
}

/** An FTS5 query matching the compiled terms in a thread's document (its body). */
export function ftsQuery(compiled: CompiledQuery): string {
  const groups = compiled.all.map((group) =>
    group.length === 1 ? ftsMatch(group[0] as IndexMatch) : `(${group.map(ftsMatch).join(' OR ')})`,
  )
  return `body : (${groups.join(' AND ')})`
}

const vocabularyReads = new WeakMap<Database, Statement<{ term: string }, [string, string, number]>>()

/** The FTS5 query for parsed terms, with the vocabulary read for their long prefixes. */
export function termsQuery(sqlite: Database, terms: readonly Term[]): string {
  let range = vocabularyReads.get(sqlite)
  if (range === undefined) {
    range = sqlite.query('select term from search_terms where term >= ? and term < ? order by term limit ?')
    vocabularyReads.set(sqlite, range)
  }
  const vocabulary = new Map<string, string[]>()
  for (const prefix of vocabularyPrefixes(terms)) {
    const { from, to } = vocabularyRange(prefix)
    vocabulary.set(
      prefix,
      (range as Statement<{ term: string }, [string, string, number]>)
        .all(from, to, expansionLimit + 1)
        .map((row) => row.term),
    )
  }
  return ftsQuery(compileTerms(terms, vocabulary))
}

/** Adds the owner's token: documents of one user's threads only. */
export function ownedBy(ftsQuery: string, userId: number): string {
  return `${ftsQuery} AND owner : u${userId}`
}

/** The rowid range of an organization's documents whose update_seq lies in [seqLo, seqHi]. */
export function keyRange(organizationId: Placeholder, seqLo: Placeholder, seqHi: Placeholder): SQL {
  return sql`thread_search.rowid between (${organizationId} << 40) + ${keyMask} - ${seqHi} and (${organizationId} << 40) + ${keyMask} - ${seqLo}`
}

/** The index, as the first table of a query that reads documents in key order. */
export const searchTable = sql`thread_search`

/** Documents matching an FTS5 query from `ftsQuery`. */
export function documentsMatching(ftsQuery: Placeholder): SQL {
  return sql`thread_search match ${ftsQuery}`
}

/** Key order: ascending keys are the most recently updated first. */
export function documentOrder(newestFirst: boolean): SQL {
  return newestFirst ? sql`thread_search.rowid` : sql`thread_search.rowid desc`
}

/** The thread a document belongs to, joined by update_seq's unique index. */
export const documentThread = sql`${threads.updateSeq} = ${keyMask} - (thread_search.rowid & ${keyMask})`

export type SearchPlan = 'matches' | 'walk'

/** Which plan serves a `created_at` search best (see the top of this file). */
export function searchPlan(db: Db, ftsQuery: string, organizationId: number): SearchPlan {
  const counter = prepared(db, 'search:count', () =>
    // LIMIT keeps a common term from reading its whole posting list.
    db.$client.query<{ n: number }, [string, number, number]>(
      `select count(*) as n from (select 1 from thread_search where thread_search match ?1
       and rowid between ?2 << 40 and (?2 << 40) + ${keyMask} limit ?3)`,
    ),
  )
  const found = counter.get(ftsQuery, organizationId, matchBound + 1)?.n ?? 0
  return found <= matchBound ? 'matches' : 'walk'
}

/**
 * The `matches` plan: the update sequences of the organization's matching documents. The query using it
 * must leave its other conditions unindexable (a unary +) so that SQLite drives from this set.
 */
export function inMatches(ftsQuery: Placeholder, organizationId: Placeholder): SQL {
  return sql`${threads.updateSeq} in (select ${keyMask} - (rowid & ${keyMask}) from thread_search
    where thread_search match ${ftsQuery} and rowid between ${organizationId} << 40 and (${organizationId} << 40) + ${keyMask})`
}

/** The `walk` plan: a probe of each thread's document. */
export function probeMatches(ftsQuery: Placeholder): SQL {
  return sql`exists (select 1 from thread_search where thread_search.rowid =
    (${threads.organizationId} << 40) | (${keyMask} - ${threads.updateSeq}) and thread_search match ${ftsQuery})`
}

/** The statements that read a thread's sources and write its document, prepared once per database. */
function documentStatements(sqlite: Database) {
  return {
    thread: sqlite.query<{ id: string; name: string | null }, [number]>('select id, name from threads where seq = ?'),
    texts: sqlite.query<{ text: string }, [string]>('select text from messages where thread_id = ? and active = 1'),
    // The files the thread's active messages attach (a block's `attachment_id`), each once; `instr` spares the JSON
    // parse for the messages (most) that attach nothing.
    files: sqlite.query<{ name: string; words: string | null }, [string]>(
      `select a.filename as name, x.words from attachments a
       left join attachment_texts x on x.attachment_id = a.id and x.state = 'indexed'
       where a.id in (select b.value ->> '$.attachment_id' from messages m, json_each(m.contents) b
         where m.thread_id = ?1 and m.active = 1 and instr(m.contents, '"attachment_id"') > 0)`,
    ),
    // The vocabulary only grows: a stale term expands to nothing.
    vocabulary: sqlite.query<unknown, [string]>(
      'insert or ignore into search_terms (term) select value from json_each(?)',
    ),
    write: sqlite.query<unknown, [number, string]>(
      `insert into thread_search (rowid, body, owner)
       select (t.organization_id << 40) | (${keyMask} - t.update_seq), ?2, 'u' || t.owner_id from threads t where t.seq = ?1`,
    ),
    dropKey: sqlite.query<unknown, [number]>('delete from thread_search where rowid = ?'),
    dropCurrent: sqlite.query<unknown, [number]>(
      `delete from thread_search where rowid = (select (organization_id << 40) | (${keyMask} - update_seq)
       from threads where seq = ?)`,
    ),
    pending: sqlite.query<{ threadSeq: number; indexedKey: number | null }, [number]>(
      'select thread_seq as threadSeq, indexed_key as indexedKey from search_pending order by thread_seq limit ?',
    ),
    donePending: sqlite.query<unknown, [number]>('delete from search_pending where thread_seq = ?'),
    rebuild: sqlite.query<{ threadSeq: number }, [number]>(
      'select thread_seq as threadSeq from search_rebuild order by thread_seq desc limit ?',
    ),
    doneRebuild: sqlite.query<unknown, [number]>('delete from search_rebuild where thread_seq = ?'),
    rebuilding: sqlite.query<{ n: number }, []>('select count(*) as n from search_rebuild'),
  }
}

type Statements = ReturnType<typeof documentStatements>

/** Writes thread `seq`'s document under its current key, from its rows as they are now (built in JavaScript). */
function writeDocument(statements: Statements, seq: number): void {
  const thread = statements.thread.get(seq)
  if (!thread) return
  const source: DocumentSource = {
    name: thread.name,
    texts: statements.texts.all(thread.id).map((row) => row.text),
    files: statements.files.all(thread.id),
  }
  const tokens = threadTokens(source)
  statements.vocabulary.run(JSON.stringify(vocabularyWords(tokens)))
  statements.write.run(seq, tokens.join(' '))
}

/**
 * Rewrites the documents of up to `batch` pending threads (search_pending, filled by the triggers), in one
 * transaction, and returns how many it rewrote. Writes only mark a thread pending, so a message costs a row
 * and the index is rewritten once per thread per batch, not once per write; a send writes `updated_at` up to four
 * times. With a `batch`, the rest of it goes to the threads a migration left to rebuild (search_rebuild), most
 * recent first; a search's flush (every pending thread, no `batch`) leaves those to the background.
 */
export function flushSearchIndex(db: Db, batch = -1): number {
  const statements = prepared(db, 'search:flush', () => documentStatements(db.$client))
  const rebuilding = batch > 0 && statements.rebuild.get(1) !== null
  // Searches call this on every request: with nothing pending (the usual case) no transaction is opened.
  if (statements.pending.get(1) === null && !rebuilding) return 0
  return db.$client.transaction(() => {
    const rows = statements.pending.all(batch)
    for (const row of rows) {
      if (row.indexedKey !== null) statements.dropKey.run(row.indexedKey)
      writeDocument(statements, row.threadSeq)
      statements.donePending.run(row.threadSeq)
      statements.doneRebuild.run(row.threadSeq)
    }
    if (!rebuilding || rows.length >= batch) return rows.length
    const rebuilt = statements.rebuild.all(batch - rows.length)
    for (const row of rebuilt) {
      // Not pending (those went first): the index holds no document for it, or one a write's flush wrote just now.
      statements.dropCurrent.run(row.threadSeq)
      writeDocument(statements, row.threadSeq)
      statements.doneRebuild.run(row.threadSeq)
    }
    return rows.length + rebuilt.length
  })()
}

/** How many documents are left to rebuild (search_rebuild). */
export function rebuildingDocuments(db: Db): number {
  return prepared(db, 'search:flush', () => documentStatements(db.$client)).rebuilding.get()?.n ?? 0
}

/**
 * Rewrites every thread's document: for bulk loads (the benchmark's seed), which write rows with the documents left
 * to this. Then merges the index into one segment: a bulk insert leaves dozens, and every search consults each.
 */
export function rebuildSearchIndex(db: Db): void {
  const sqlite = db.$client
  sqlite.run(`insert into thread_search (thread_search) values ('delete-all')`)
  sqlite.run('delete from search_pending')
  sqlite.run('insert or ignore into search_rebuild (thread_seq) select seq from threads')
  while (flushSearchIndex(db, 1000) > 0) {}
  sqlite.run(`insert into thread_search (thread_search) values ('optimize')`)
}

/** The FTS5 index's upkeep, for the background indexer (see search.ts). */
export function fts5ThreadSearch(db: Db): ThreadSearch {
  return {
    async flush(batch) {
      return flushSearchIndex(db, batch)
    },
    async rebuilding() {
      return rebuildingDocuments(db)
    },
  }
}

/**
 * Queues the thread's document to be written again without a write to the thread, whose key and place in the lists
 * stay: for text read after its message was written (a file's, src/attachments/file-texts.ts). In the caller's
 * transaction. The key it records is the thread's current one: whenever a thread is not queued, its document in
 * the index is under that key, since every write of the thread queues it.
 */
export function queueDocument(db: Db, threadId: string): void {
  db.insert(searchPending)
    .select(
      db
        .select({
          threadSeq: threads.seq,
          indexedKey: sql<number>`(${threads.organizationId} << 40) | (${keyMask} - ${threads.updateSeq})`.as(
            'indexed_key',
          ),
        })
        .from(threads)
        .where(eq(threads.id, threadId)),
    )
    .onConflictDoNothing()
    .run()
}
