// The search query the baseline runs, written as the app's search.ts builds it, so that the HTTP
// comparison measures the framework and not a different plan. Parameters: ?1–?3 the caller (see
// baseline.ts), ?4 the limit, ?5 the FTS5 query, ?6 and ?7 the cursor's (updated_at, id).
export function searchSql(columns: string, visible: string, withCursor: boolean): string {
  return `select ${columns} from threads t join users u on u.id = t.owner_id
    where ${visible} and t.archived = 0
      and (t.seq in (select rowid from threads_fts where threads_fts match ?5)
        or t.id in (select m.thread_id from messages m
          where m.seq in (select rowid from messages_fts where messages_fts match ?5) and m.active = 1))
      ${withCursor ? 'and (t.updated_at, t.id) < (?6, ?7)' : ''}
    order by t.updated_at desc, t.id desc limit ?4`
}
