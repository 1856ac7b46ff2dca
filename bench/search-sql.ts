// The search the baseline runs, written as src/threads/search.fts5.ts plans it for the default order (FTS5
// reads the organization's key range of thread documents, most recently updated first), so the HTTP
// comparison measures the framework and not a different plan. Parameters: ?1–?3 the caller (see
// baseline.ts), ?4 the limit, ?5 the FTS5 query, ?6 the highest update_seq wanted (a cursor's, minus one).
// searchFlusher is the app's index upkeep, for the baseline and the raw-insert reference.
import type { Database } from 'bun:sqlite'
import { searchWords } from '../src/threads/search'
import { documentColumns, keyMask, ftsQuery as matching } from '../src/threads/search.fts5'

// The app's own key layout and query syntax: the baseline must search exactly as it does.
export { keyMask } from '../src/threads/search.fts5'

/** The FTS5 query the app runs for the text `q`; null when it holds no word. */
export function ftsQuery(q: string): string | null {
  const words = searchWords(q)
  return words === null ? null : matching(words)
}

export function searchSql(columns: string, visible: string): string {
  return `select ${columns} from thread_search s cross join threads t cross join users u
    where thread_search match ?5 and s.rowid between (?2 << 40) + ${keyMask} - ?6 and (?2 << 40) + ${keyMask}
      and t.update_seq = ${keyMask} - (s.rowid & ${keyMask}) and u.id = t.owner_id
      and ${visible} and t.archived = 0
    order by s.rowid limit ?4`
}

/**
 * The app's index upkeep (flushSearchIndex in src/threads/search.fts5.ts) in raw SQL: rewrites up to `batch` of the
 * documents the triggers left pending (all by default) in one transaction, and returns how many.
 */
export function searchFlusher(sqlite: Database): (batch?: number) => number {
  const pending = sqlite.query<{ threadSeq: number; indexedKey: number | null }, [number]>(
    'select thread_seq as threadSeq, indexed_key as indexedKey from search_pending order by thread_seq limit ?',
  )
  const drop = sqlite.query('delete from thread_search where rowid = ?')
  const write = sqlite.query(
    `insert into thread_search (rowid, body, owner) select ${documentColumns} from threads t where t.seq = ?`,
  )
  const done = sqlite.query('delete from search_pending where thread_seq = ?')
  const flush = sqlite.transaction((batch: number) => {
    const rows = pending.all(batch)
    for (const row of rows) {
      if (row.indexedKey !== null) drop.run(row.indexedKey)
      write.run(row.threadSeq)
      done.run(row.threadSeq)
    }
    return rows.length
  })
  return (batch = -1) => (pending.get(1) === null ? 0 : flush(batch))
}
