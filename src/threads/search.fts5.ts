// Thread search on SQLite: an FTS5 index and the SQL that reads it, the only raw SQL of the threads feature,
// because Drizzle cannot express FTS5 MATCH. The index is created in db/migrations/0005_update_order.sql and keeps
// no word positions since 0007_search_detail_column.sql; the triggers that mark documents stale are in
// 0006_deferred_search.sql, and the functions at the end of this file rewrite them. repository.sqlite.ts builds
// its list statements from the pieces here.
//
// Each thread is one FTS5 document (its name and its active messages) whose rowid is its search key,
// (organization_id << 40) | (2^40 - 1 - update_seq). An organization's threads are one rowid range,
// most recently updated first, so a search in the default order reads the matching documents in the
// order the page needs and stops after one page whatever the terms' frequency. A search must return
// exactly the threads a plain list would, in the same order: it walks the same update sequence.
//
// The `created_at` order has no such index; two plans serve it, each fast where the other is slow, so
// the repository counts the matches first (cheaply, up to a bound) and picks one:
// - few matches: start from the FTS matches, look their threads up and sort them.
// - many matches: walk the caller's threads in order and probe each one's document.
import type { Database } from 'bun:sqlite'
import { asc, eq, type Placeholder, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import type { ThreadSearch } from './search'
import { searchPending, threads } from './threads.table'

/** Up to this many matching documents the `created_at` search starts from the matches, past it from the threads. */
export const matchBound = 2000

/** The low 40 bits of a search key: 2^40 - 1 - update_seq. */
export const keyMask = 1099511627775

/**
 * An FTS5 query matching every word (from searchWords) in a thread's name or messages, each word quoted so that
 * user input can never be read as FTS5 syntax.
 */
export function ftsQuery(words: string[]): string {
  return `body : (${words.map((word) => `"${word}"`).join(' AND ')})`
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

/** The columns of thread `t`'s document: its key, its name and active messages, and its owner's token. */
export const documentColumns = `(t.organization_id << 40) | (${keyMask} - t.update_seq),
  coalesce(t.name, '') || char(10) || coalesce((select group_concat(m.text, char(10)) from messages m
    where m.thread_id = t.id and m.active = 1), ''),
  'u' || t.owner_id`

/**
 * Rewrites every thread's document from its name and active messages: for bulk loads (the benchmark's
 * seed), which write rows with the documents left to one statement. Then merges the index into one segment,
 * as migration 0007 does: a bulk insert leaves dozens, and every search consults each.
 */
export function rebuildSearchIndex(sqlite: Database): void {
  sqlite.run(`insert into thread_search (thread_search) values ('delete-all')`)
  sqlite.run(`insert into thread_search (rowid, body, owner) select ${documentColumns} from threads t`)
  sqlite.run(`insert into thread_search (thread_search) values ('optimize')`)
  sqlite.run('delete from search_pending')
}

/**
 * Rewrites the documents of up to `batch` pending threads (search_pending, filled by the triggers), in one
 * transaction, and returns how many it rewrote. Writes only mark a thread pending, so a message costs a row
 * and the index is rewritten once per thread per batch, not once per write; each document is about a
 * millisecond of work at 1M messages, and a send writes `updated_at` up to four times.
 */
export function flushSearchIndex(db: Db, batch = -1): number {
  const statements = prepared(db, 'search:flush', () => ({
    pending: db
      .select()
      .from(searchPending)
      .orderBy(asc(searchPending.threadSeq))
      .limit(sql.placeholder('batch'))
      .prepare(),
    done: db
      .delete(searchPending)
      .where(eq(searchPending.threadSeq, sql.placeholder('threadSeq')))
      .prepare(),
    drop: db.$client.query<unknown, [number]>('delete from thread_search where rowid = ?'),
    write: db.$client.query<unknown, [number]>(
      `insert into thread_search (rowid, body, owner) select ${documentColumns} from threads t where t.seq = ?`,
    ),
  }))
  // Searches call this on every request: with nothing pending (the usual case) no transaction is opened.
  if (statements.pending.get({ batch: 1 }) === undefined) return 0
  return db.transaction(() => {
    const rows = statements.pending.all({ batch })
    for (const row of rows) {
      if (row.indexedKey !== null) statements.drop.run(row.indexedKey)
      statements.write.run(row.threadSeq)
      statements.done.run({ threadSeq: row.threadSeq })
    }
    return rows.length
  })
}

/** The FTS5 index's upkeep, for the background indexer (see search.ts). */
export function fts5ThreadSearch(db: Db): ThreadSearch {
  return {
    async flush(batch) {
      return flushSearchIndex(db, batch)
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
