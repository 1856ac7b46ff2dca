// Full-text search: the only raw SQL in the service, because Drizzle cannot express FTS5 MATCH.
// Tables and triggers are in db/migrations/0001_search.sql.
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm'
import { threads } from './threads.table'

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

/** Threads whose name or any active message matches the FTS5 query (a value or a placeholder). */
export function matchesSearch(ftsQuery: string | SQLWrapper): SQL {
  return sql`(${threads.seq} in (select rowid from threads_fts where threads_fts match ${ftsQuery})
    or ${threads.id} in (select m.thread_id from messages m
      where m.seq in (select rowid from messages_fts where messages_fts match ${ftsQuery}) and m.active = 1))`
}
