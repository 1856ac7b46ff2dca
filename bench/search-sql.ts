// The search the baseline runs, written as src/threads/search.fts5.ts plans it for the default order (FTS5
// reads the organization's key range of thread documents, most recently updated first), so the HTTP
// comparison measures the framework and not a different plan. Parameters: ?1–?3 the caller (see
// baseline.ts), ?4 the limit, ?5 the FTS5 query, ?6 the highest update_seq wanted (a cursor's, minus one).
// searchFlusher is the app's index upkeep, for the baseline and the raw-insert reference; phrasePage the app's check
// of phrases (src/threads/listing.ts), for both baselines.
import type { Database } from 'bun:sqlite'
import { threadTokens } from '../src/threads/search'
import { keyMask, termsQuery } from '../src/threads/search.fts5'
import { parseQuery, phraseMatcher, vocabularyWords } from '../src/threads/search-text'

// The app's own key layout, tokens and query syntax: the baseline must search exactly as it does.
export { keyMask } from '../src/threads/search.fts5'

/**
 * What the app asks FTS5 for the text `q` (with the vocabulary read for long prefixes), and the phrases it then
 * checks; null when `q` holds no word.
 */
export function ftsQuery(sqlite: Database, q: string): { fts: string; phrases: string[][] } | null {
  const terms = parseQuery(q)
  if (terms === null) return null
  return {
    fts: termsQuery(sqlite, terms),
    phrases: terms.flatMap((term) => (term.kind === 'phrase' ? [term.tokens] : [])),
  }
}

export function searchSql(columns: string, visible: string): string {
  return `select ${columns}, t.update_seq as updateSeq from thread_search s cross join threads t cross join users u
    where thread_search match ?5 and s.rowid between (?2 << 40) + ${keyMask} - ?6 and (?2 << 40) + ${keyMask}
      and t.update_seq = ${keyMask} - (s.rowid & ${keyMask}) and u.id = t.owner_id
      and ${visible} and t.archived = 0
    order by s.rowid limit ?4`
}

/**
 * The app's list of a search with phrases (phraseList in src/threads/listing.ts) for the baselines: candidates from
 * `candidates(below, size)`, newest first below an update sequence, kept when one of their texts holds every phrase,
 * until `limit` are kept or none are left.
 */
export async function phrasePage<T extends { id: string; updateSeq: number | string }>(
  limit: number,
  phrases: string[][],
  candidates: (below: number, size: number) => T[] | Promise<T[]>,
  texts: (ids: string[]) => Map<string, string[]> | Promise<Map<string, string[]>>,
  below: number,
): Promise<T[]> {
  const holds = phrases.map(phraseMatcher)
  const kept: T[] = []
  let size = limit
  for (;;) {
    const rows = await candidates(below, size)
    const sources = await texts(rows.map((row) => row.id))
    for (const row of rows) {
      const texts = sources.get(row.id) ?? []
      if (!holds.every((held) => texts.some(held))) continue
      kept.push(row)
      if (kept.length === limit) return kept
    }
    const last = rows.at(-1)
    if (rows.length < size || last === undefined) return kept
    below = Number(last.updateSeq) - 1
    size = Math.min(size * 2, 800)
  }
}

/** The texts a thread's phrases are checked in (the app's searchSources, less files: the seed attaches none). */
export function threadTexts(sqlite: Database): (ids: string[]) => Map<string, string[]> {
  const messages = sqlite.query<{ threadId: string; text: string }, [string]>(
    `select thread_id as threadId, text from messages where thread_id in (select value from json_each(?)) and active = 1`,
  )
  const names = sqlite.query<{ id: string; name: string | null }, [string]>(
    'select id, name from threads where id in (select value from json_each(?))',
  )
  return (ids) => {
    const texts = new Map<string, string[]>(ids.map((id) => [id, []]))
    const list = JSON.stringify(ids)
    for (const row of messages.all(list)) texts.get(row.threadId)?.push(row.text)
    for (const row of names.all(list)) if (row.name) texts.get(row.id)?.push(row.name)
    return texts
  }
}

/**
 * The app's index upkeep (flushSearchIndex in src/threads/search.fts5.ts) in raw SQL: rewrites up to `batch` of the
 * documents the triggers left pending (all by default) in one transaction, and returns how many. Documents are
 * made as the app makes them: its tokens, from the thread's name, active messages and their files.
 */
export function searchFlusher(sqlite: Database): (batch?: number) => number {
  const pending = sqlite.query<{ threadSeq: number; indexedKey: number | null }, [number]>(
    'select thread_seq as threadSeq, indexed_key as indexedKey from search_pending order by thread_seq limit ?',
  )
  const drop = sqlite.query('delete from thread_search where rowid = ?')
  const thread = sqlite.query<{ id: string; name: string | null }, [number]>(
    'select id, name from threads where seq = ?',
  )
  const texts = sqlite.query<{ text: string }, [string]>('select text from messages where thread_id = ? and active = 1')
  const files = sqlite.query<{ name: string; words: string | null }, [string]>(
    `select a.filename as name, x.words from attachments a
     left join attachment_texts x on x.attachment_id = a.id and x.state = 'indexed'
     where a.id in (select b.value ->> '$.attachment_id' from messages m, json_each(m.contents) b
       where m.thread_id = ?1 and m.active = 1 and instr(m.contents, '"attachment_id"') > 0)`,
  )
  const vocabulary = sqlite.query('insert or ignore into search_terms (term) select value from json_each(?)')
  const write = sqlite.query(
    `insert into thread_search (rowid, body, owner)
     select (t.organization_id << 40) | (${keyMask} - t.update_seq), ?2, 'u' || t.owner_id from threads t where t.seq = ?1`,
  )
  const done = sqlite.query('delete from search_pending where thread_seq = ?')
  const flush = sqlite.transaction((batch: number) => {
    const rows = pending.all(batch)
    for (const row of rows) {
      if (row.indexedKey !== null) drop.run(row.indexedKey)
      const source = thread.get(row.threadSeq)
      if (source) {
        const tokens = threadTokens({
          name: source.name,
          texts: texts.all(source.id).map((text) => text.text),
          files: files.all(source.id),
        })
        vocabulary.run(JSON.stringify(vocabularyWords(tokens)))
        write.run(row.threadSeq, tokens.join(' '))
      }
      done.run(row.threadSeq)
    }
    return rows.length
  })
  return (batch = -1) => (pending.get(1) === null ? 0 : flush(batch))
}
