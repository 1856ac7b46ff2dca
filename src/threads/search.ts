// Full-text search: the only raw SQL in the service, because Drizzle cannot express FTS5 MATCH.
// Tables and triggers are in db/migrations/0001_search.sql.
//
// A search must return exactly the threads a plain list would, in the same order. Two plans give that
// and each is fast where the other is slow, so the service counts the matches first (cheaply, up to a
// bound) and picks one:
// - few matches (rare and mid terms): start from the FTS matches, look their threads up by rowid and
//   sort them; the cost follows the number of matches.
// - many matches (common terms): walk the caller's threads in the requested order over the index and
//   probe each for a match; most threads match, so the page fills after a few dozen probes.
import type { Database } from 'bun:sqlite'
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm'
import { threads } from './threads.table'

/** Up to this many matching documents the search starts from the matches, past it from the threads. */
export const matchBound = 2000

/**
 * Turns free text into an FTS5 query that matches every word, each quoted so that user input can
 * never be read as FTS5 syntax. Returns null when the text holds no searchable word.
 */
export function toFtsQuery(text: string): string | null {
  const words = text.match(/[\p{L}\p{N}]+/gu)
  if (!words) return null
  return words
    .slice(0, 16)
    .map((word) => `"${word}"`)
    .join(' ')
}

export type SearchPlan = 'matches' | 'walk'

const counters = new WeakMap<Database, ReturnType<typeof prepareCounter>>()
function prepareCounter(sqlite: Database) {
  // LIMIT inside each count keeps a common term from reading its whole posting list.
  return sqlite.query<{ n: number }, [string, number]>(
    `select (select count(*) from (select 1 from messages_fts where messages_fts match ?1 limit ?2))
          + (select count(*) from (select 1 from threads_fts where threads_fts match ?1 limit ?2)) as n`,
  )
}

/** Which plan serves this FTS5 query best (see the top of this file). */
export function searchPlan(sqlite: Database, ftsQuery: string): SearchPlan {
  let counter = counters.get(sqlite)
  if (!counter) {
    counter = prepareCounter(sqlite)
    counters.set(sqlite, counter)
  }
  const found = counter.get(ftsQuery, matchBound + 1)?.n ?? 0
  return found <= matchBound ? 'matches' : 'walk'
}

/**
 * The `matches` plan: threads whose name or any active message matches, as a set of rowids. The query
 * using it must leave its other conditions unindexable (a unary +) so that SQLite drives from this set
 * (rowid lookups) instead of scanning the organization's index and testing every thread against it.
 */
export function inMatches(ftsQuery: string | SQLWrapper): SQL {
  return sql`${threads.seq} in (
    select rowid from threads_fts where threads_fts match ${ftsQuery}
    union all
    select t.seq from messages_fts f cross join messages m on m.seq = f.rowid cross join threads t on t.id = m.thread_id
      where f.messages_fts match ${ftsQuery} and m.active = 1)`
}

/** The `walk` plan: a per-thread probe of its name and its active messages. */
export function probeMatches(ftsQuery: string | SQLWrapper): SQL {
  return sql`(exists (select 1 from threads_fts tf where tf.rowid = ${threads.seq} and tf.threads_fts match ${ftsQuery})
    or exists (select 1 from messages m cross join messages_fts f on f.rowid = m.seq
      where m.thread_id = ${threads.id} and m.active = 1 and f.messages_fts match ${ftsQuery}))`
}
