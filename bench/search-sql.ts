// The search the baseline runs, written as src/threads/search.ts plans it (count the matches up to a
// bound, then start from the matches or walk the threads), so the HTTP comparison measures the
// framework and not a different plan. Parameters: ?1–?3 the caller (see baseline.ts), ?4 the limit,
// ?5 the FTS5 query, ?6 and ?7 the cursor's (updated_at, id). `visible` must be written without
// usable indexes (a unary +) for the `matches` plan.
export const matchBound = 2000

export const countSql = `select (select count(*) from (select 1 from messages_fts where messages_fts match ?1 limit ?2))
  + (select count(*) from (select 1 from threads_fts where threads_fts match ?1 limit ?2)) as n`

export function searchSql(columns: string, visible: string, withCursor: boolean, plan: 'matches' | 'walk'): string {
  const match =
    plan === 'matches'
      ? `t.seq in (select rowid from threads_fts where threads_fts match ?5
          union all
          select t2.seq from messages_fts f cross join messages m on m.seq = f.rowid cross join threads t2 on t2.id = m.thread_id
            where f.messages_fts match ?5 and m.active = 1)`
      : `(exists (select 1 from threads_fts tf where tf.rowid = t.seq and tf.threads_fts match ?5)
          or exists (select 1 from messages m cross join messages_fts f on f.rowid = m.seq
            where m.thread_id = t.id and m.active = 1 and f.messages_fts match ?5))`
  return `select ${columns} from threads t join users u on u.id = t.owner_id
    where ${visible} and t.archived = 0 and ${match}
      ${withCursor ? 'and (t.updated_at, t.id) < (?6, ?7)' : ''}
    order by t.updated_at desc, t.id desc limit ?4`
}
