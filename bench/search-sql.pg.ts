// The PostgreSQL search and index upkeep the raw baseline (baseline.pg.ts) and the raw-insert reference run, written
// in plain SQL for Bun.SQL as src/threads/repository.pg.ts and search.pg.ts build them with Drizzle: the same
// statements over the same indexes (a search's probes of recency blocks, one statement), the same round trips, and
// the same document rewrite. Queries and documents are the app's own (parseQuery, searchQueryOf, probeSchedule,
// threadTokens, documentLexemes): the baseline must search exactly as it does.
import { threadTokens } from '../src/threads/search'
import {
  documentLexemes,
  documentParts,
  lexeme,
  probeSchedule,
  type SearchQuery,
  searchQueryOf,
} from '../src/threads/search.pg'
import {
  expansionLimit,
  parseQuery,
  type Term,
  vocabularyPrefixes,
  vocabularyRange,
  vocabularyWords,
} from '../src/threads/search-text'

/** A Bun.SQL client, transaction or reserved connection: anything that runs `unsafe`. */
export type Runner = Pick<Bun.SQL, 'unsafe'>

export const threadColumns = `t.id, t.name, t.state, t.is_private as "isPrivate", t.archived, t.owner_id as "ownerId",
  u.sub as "ownerSub", u.name as "ownerName", t.created_at as "createdAt", t.updated_at as "updatedAt"`

/** A search as the app asks it: the index's query with the vocabulary read, and the phrases it checks after. */
export interface PgSearch {
  query: SearchQuery
  phrases: string[][]
}

/** The app's start of a search for `q` (searchStart in search.pg.ts): one read of the queue, the clock and the words. */
async function readStart(sql: Runner, terms: Term[]) {
  const ranges = vocabularyPrefixes(terms).map(vocabularyRange)
  const [row] = await sql.unsafe<{ queued: number | null; head: string; words: [number, string][] | string }[]>(
    `select (select max(thread_seq) from search_pending) as queued, update_seq as head,
       (select coalesce(json_agg(json_build_array(r.i, w.term) order by r.i, w.term), '[]')
        from unnest($1::text[], $2::text[]) with ordinality as r(low, high, i)
        cross join lateral (select term from search_terms where term >= r.low and term < r.high order by term
          limit $3) as w) as words
     from thread_update_clock where id = 1`,
    [ranges.map((range) => range.from), ranges.map((range) => range.to), expansionLimit + 1],
  )
  const prefixes = vocabularyPrefixes(terms)
  const vocabulary = new Map<string, string[]>(prefixes.map((prefix) => [prefix, []]))
  const words = typeof row?.words === 'string' ? (JSON.parse(row.words) as [number, string][]) : (row?.words ?? [])
  for (const [place, term] of words) vocabulary.get(prefixes[place - 1] as string)?.push(term)
  return { queued: row?.queued ?? null, head: Number(row?.head ?? 0), vocabulary }
}

/**
 * The app's start of a search for `q`: the queue, the clock's head and the vocabulary in one read; then, when anything
 * is queued (rarely), every queued document, 32 at a time, and the read again. Null when `q` holds no word.
 */
export async function startSearch(sql: Bun.SQL, q: string): Promise<{ head: number; search: PgSearch } | null> {
  const terms = parseQuery(q)
  if (terms === null) return null
  let start = await readStart(sql, terms)
  if (start.queued !== null) {
    while ((await flushBatch(sql, 32)) > 0) {}
    start = await readStart(sql, terms)
  }
  return {
    head: start.head,
    search: {
      query: searchQueryOf(terms, start.vocabulary),
      phrases: terms.flatMap((term) => (term.kind === 'phrase' ? [term.tokens] : [])),
    },
  }
}

/**
 * The page of threads `visible` lets the caller see ($2 the organization, $3 the user), most recently updated
 * first; `next` is the next parameter's number: a cursor's update sequence when `cursor`, then the limit.
 */
export function pageSql(options: { visible: string; next: number; cursor: boolean }): string {
  let n = options.next
  const conditions = [options.visible, 't.archived = false']
  if (options.cursor) conditions.push(`t.update_seq <= $${n++}`)
  return `select ${threadColumns} from threads t join users u on u.id = t.owner_id
    where ${conditions.join(' and ')} order by t.update_seq desc limit $${n}`
}

/**
 * The app's search in the update order (probesQuery in repository.pg.ts): $4-$6 the probes' queries and bounds
 * (probeSchedule), $7 the groups for split documents, $8 the limit.
 */
export function probesSql(visible: string): string {
  return `select "page".* from unnest($4::text[], $5::bigint[], $6::bigint[]) as probe(query, low, high)
    cross join lateral (select ${threadColumns}, t.update_seq as "updateSeq" from thread_search s
      join threads t on t.seq = s.thread_seq join users u on u.id = t.owner_id
      where ${visible} and t.archived = false
        and (s.document @@ probe.query::tsquery and (not exists (select 1 from thread_search_overflow o
          where o.thread_seq = s.thread_seq) or not exists (
          select 1 from (select g::tsquery as q from unnest(string_to_array($7, E'\\n')) as g) as word
          where not s.document @@ word.q and not exists (select 1 from thread_search_overflow o
            where o.thread_seq = s.thread_seq and o.document @@ word.q))))
        and s.update_seq between probe.low and probe.high and t.update_seq = s.update_seq
      order by t.update_seq desc limit $8) as "page"
    limit $8`
}

/** The parameters of probesSql after the caller's three, for a search below update sequence `below`. */
export function probeParams(
  search: PgSearch,
  scope: { organizationId: number; ownerId?: number },
  below: number,
  limit: number,
): unknown[] {
  const probes = probeSchedule(search.query.indexed, scope, 0, below, true)
  return [
    probes.map((probe) => probe.query),
    probes.map((probe) => probe.from),
    probes.map((probe) => probe.to),
    search.query.groups,
    limit,
  ]
}

/** The texts a thread's phrases are checked in (the app's searchSources, less files: the seed attaches none). */
export async function threadTexts(sql: Runner, ids: string[]): Promise<Map<string, string[]>> {
  const texts = new Map<string, string[]>(ids.map((id) => [id, []]))
  const rows = await sql.unsafe<{ threadId: string; text: string }[]>(
    `select thread_id as "threadId", text from messages where thread_id = any($1::text[]) and active
     union all select id, name from threads where id = any($1::text[]) and name is not null`,
    [ids],
  )
  for (const row of rows) texts.get(row.threadId)?.push(row.text)
  return texts
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
    {
      seq: number
      organizationId: number
      ownerId: number
      updateSeq: string
      name: string | null
      text: string | null
      fileNames: string | null
      fileWords: string | null
    }[]
  >(
    `select t.seq, t.organization_id as "organizationId", t.owner_id as "ownerId", t.update_seq as "updateSeq",
       t.name, (select string_agg(m.text, E'\\n') from messages m where m.thread_id = t.id and m.active) as text,
       (select string_agg(a.filename, E'\\n') from attachments a where a.id in (select b ->> 'attachment_id'
         from messages m, jsonb_array_elements(m.contents::jsonb) as b where m.thread_id = t.id and m.active
           and strpos(m.contents, '"attachment_id"') > 0)) as "fileNames",
       (select string_agg(x.words, ' ') from attachments a join attachment_texts x on x.attachment_id = a.id
         and x.state = 'indexed' where a.id in (select b ->> 'attachment_id'
         from messages m, jsonb_array_elements(m.contents::jsonb) as b where m.thread_id = t.id and m.active
           and strpos(m.contents, '"attachment_id"') > 0)) as "fileWords"
     from threads t where t.seq = any($1::int[])`,
    [seqs],
  )
  const vocabulary = new Set<string>()
  const documents = sources.map((source) => {
    const tokens = threadTokens({
      name: source.name,
      texts: [source.text ?? ''],
      files: [{ name: source.fileNames ?? '', words: source.fileWords }],
    })
    for (const word of vocabularyWords(tokens)) if (lexeme(word) === word) vocabulary.add(word)
    const thread = {
      organizationId: source.organizationId,
      ownerId: source.ownerId,
      updateSeq: Number(source.updateSeq),
    }
    return (documentParts(documentLexemes(tokens, thread))[0] as string[]).join(' ')
  })
  if (vocabulary.size > 0) {
    await tx.unsafe(
      `insert into search_terms (term) select t from unnest(string_to_array($1, ' ')) as t order by t
       on conflict do nothing`,
      [[...vocabulary].join(' ')],
    )
  }
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
  await tx.unsafe(
    `delete from search_rebuild where thread_seq in (select thread_seq from search_rebuild
     where thread_seq = any($1::int[]) for update skip locked)`,
    [seqs],
  )
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
