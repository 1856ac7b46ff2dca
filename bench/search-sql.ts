// The search the baseline runs, written as src/threads/search.ts plans it for the default order (FTS5
// reads the organization's key range of thread documents, most recently updated first), so the HTTP
// comparison measures the framework and not a different plan. Parameters: ?1–?3 the caller (see
// baseline.ts), ?4 the limit, ?5 the FTS5 query, ?6 the highest update_seq wanted (a cursor's, minus one).
export const keyMask = 1099511627775

/** Free text as the app's FTS5 query: every word, quoted, in a thread's name or messages. */
export function ftsQuery(text: string): string | null {
  const words = text.match(/[\p{L}\p{N}]+/gu)
  return words
    ? `body : (${words
        .slice(0, 16)
        .map((word) => `"${word}"`)
        .join(' AND ')})`
    : null
}

export function searchSql(columns: string, visible: string): string {
  return `select ${columns} from thread_search s cross join threads t cross join users u
    where thread_search match ?5 and s.rowid between (?2 << 40) + ${keyMask} - ?6 and (?2 << 40) + ${keyMask}
      and t.update_seq = ${keyMask} - (s.rowid & ${keyMask}) and u.id = t.owner_id
      and ${visible} and t.archived = 0
    order by s.rowid limit ?4`
}
