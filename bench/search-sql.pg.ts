// The PostgreSQL search and index upkeep the raw baseline (baseline.pg.ts) and the raw-insert reference run, written
// in plain SQL for Bun.SQL as src/threads/repository.pg.ts and search.pg.ts build them with Drizzle: the same
// joins, conditions and order over the same indexes, each search planned for its words, and the same document
// rewrite. The words are the app's own (searchWords, searchTerms, documentLexemes): the baseline must search
// exactly as it does.
import { searchWords } from '../src/threads/search'
import { searchTerms as appSearchTerms, documentLexemes, documentParts } from '../src/threads/search.pg'

/** A Bun.SQL client, transaction or reserved connection: anything that runs `unsafe`. */
export type Runner = Pick<Bun.SQL, 'unsafe'>

export const threadColumns = `t.id, t.name, t.state, t.is_private as "isPrivate", t.archived, t.owner_id as "ownerId",
  u.sub as "ownerSub", u.name as "ownerName", t.created_at as "createdAt", t.updated_at as "updatedAt"`

/** The parameters a search adds: the query for the GIN index, and the words for split documents. */
export function searchTerms(q: string): [string, string] | null {
  const words = searchWords(q)
  if (words === null) return null
  const { indexed, each } = appSearchTerms(words)
  return [indexed, each]
}

/**
 * The page of threads `visible` lets the caller see ($2 the organization, $3 the user), most recently updated
 * first; `next` is the next parameter's number. With `search`, only threads whose document holds every word (two
 * parameters: searchTerms), scoped by the document's copy of the organization or, for a caller who sees only their
 * own threads, the owner, as the app's repository does.
 */
export function pageSql(options: {
  visible: string
  own: boolean
  next: number
  cursor: boolean
  search: boolean
}): string {
  let n = options.next
  const conditions = [options.visible, 't.archived = false']
  if (options.cursor) conditions.push(`t.update_seq <= $${n++}`)
  let join = ''
  if (options.search) {
    join = 'join thread_search s on s.thread_seq = t.seq'
    const [any, each] = [n++, n++]
    conditions.push(
      options.own ? 's.owner_id = $3' : 's.organization_id = $2',
      `s.document @@ $${any}::tsquery and (not exists (select 1 from thread_search_overflow o
        where o.thread_seq = s.thread_seq) or not exists (
        select 1 from (select ('''' || w || '''')::tsquery as q from unnest(string_to_array($${each}, ' ')) as w) as word
        where not s.document @@ word.q and not exists (select 1 from thread_search_overflow o
          where o.thread_seq = s.thread_seq and o.document @@ word.q)))`,
    )
  }
  return `select ${threadColumns} from threads t join users u on u.id = t.owner_id ${join}
    where ${conditions.join(' and ')} order by t.update_seq desc limit $${n}`
}

/** Runs a search statement planned for its words, as the app's repository does (see listThreads there). */
export function searchPage<T>(sql: Bun.SQL, statement: string, params: unknown[]): Promise<T[]> {
  return sql.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`
    return tx.unsafe<T[]>(statement, params)
  })
}

/**
 * Rewrites the documents of the threads `seqs` names, in the caller's transaction: the app's rewrite (search.pg.ts)
 * in raw SQL. Only the threads no writer holds leave the queue.
 */
export async function rewriteDocuments(tx: Runner, seqs: number[]): Promise<void> {
  if (seqs.length === 0) return
  const settled = await tx.unsafe<{ seq: number }[]>(
    'select seq from threads where seq = any($1::int[]) for share skip locked',
    [seqs],
  )
  const sources = await tx.unsafe<
    { seq: number; organizationId: number; ownerId: number; updateSeq: string; name: string | null; text: string }[]
  >(
    `select t.seq, t.organization_id as "organizationId", t.owner_id as "ownerId", t.update_seq as "updateSeq",
       t.name, (select string_agg(m.text, ' ') from messages m where m.thread_id = t.id and m.active) as text
     from threads t where t.seq = any($1::int[])`,
    [seqs],
  )
  const documents = sources.map((source) =>
    (documentParts(documentLexemes(`${source.name ?? ''}\n${source.text ?? ''}`))[0] as string[]).join(' '),
  )
  await tx.unsafe(
    `insert into thread_search (thread_seq, organization_id, owner_id, update_seq, document)
     select s, o, w, u, array_to_tsvector(string_to_array(d, ' '))
     from unnest($1::int[], $2::int[], $3::int[], $4::bigint[], $5::text[]) as x(s, o, w, u, d)
     on conflict (thread_seq) do update set organization_id = excluded.organization_id, owner_id = excluded.owner_id,
       update_seq = excluded.update_seq, document = excluded.document
     where thread_search.update_seq <= excluded.update_seq`,
    [
      sources.map((s) => s.seq),
      sources.map((s) => s.organizationId),
      sources.map((s) => s.ownerId),
      sources.map((s) => s.updateSeq),
      documents,
    ],
  )
  await tx.unsafe('delete from thread_search_overflow where thread_seq = any($1::int[])', [seqs])
  if (settled.length > 0) {
    await tx.unsafe('delete from search_pending where thread_seq = any($1::int[])', [settled.map((row) => row.seq)])
  }
}

/**
 * The app's index upkeep (flushPgSearchIndex): rewrites up to `batch` queued documents in one transaction, skipping
 * those another flush holds, and answers how many it claimed.
 */
export async function flushBatch(sql: Bun.SQL, batch: number): Promise<number> {
  return sql.begin(async (tx) => {
    const claimed = await tx.unsafe<{ seq: number }[]>(
      `select thread_seq as seq from search_pending order by thread_seq limit $1 for update skip locked`,
      [batch],
    )
    await rewriteDocuments(
      tx,
      claimed.map((row) => row.seq),
    )
    return claimed.length
  })
}

/** A search's flush: one read when nothing is queued (the usual case), else every queued document, 32 at a time. */
export async function flushBeforeSearch(sql: Bun.SQL): Promise<void> {
  const [queued] = await sql.unsafe<{ last: number | null }[]>('select max(thread_seq) as last from search_pending')
  if (queued?.last == null) return
  while ((await flushBatch(sql, 32)) > 0) {}
}
