// Listing threads: keyset pages, filters, `updated_since` and search. A page starts strictly after the `after`
// thread's current sort key, so pages miss nothing and repeat nothing while threads change (README, "Pagination
// guarantees"); `updated_at` pages follow the update order, which never reorders on ties or clock steps. A search
// with snippets (GET /api/v1/search) is such a page, with each thread's best passage.
import type { Caller } from '../auth/model'
import { invalidRequest } from '../shared/errors'
import { type Links, toThread } from './links'
import type { ThreadsModel } from './model'
import type { ThreadListQuery, ThreadRepository, ThreadRow } from './repository'
import { searchableText } from './search'
import {
  buildSnippet,
  parseQuery,
  phraseMatcher,
  type SnippetSource,
  searchSourceBounds,
  type Term,
} from './search-text'

export const maxPageSize = 200

export function clampLimit(limit: number | undefined): number {
  return Math.min(limit ?? 50, maxPageSize)
}

/** A page of `limit` items from up to `limit + 1` rows: the extra row only says there is more. */
export function envelope<T extends { id: string }>(rows: T[], limit: number) {
  const hasMore = rows.length > limit
  const data = hasMore ? rows.slice(0, limit) : rows
  return {
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
    limit,
  }
}

/** `updated_since` as a time; a day that does not exist is 400, where Date.parse would roll it into the next month. */
function parseSince(value: string): number {
  const since = Date.parse(value)
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day))
  if (Number.isNaN(since) || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw invalidRequest('updated_since must be an RFC 3339 time or date that exists')
  }
  return since
}

export async function listThreads(
  threads: ThreadRepository,
  caller: Caller,
  query: ThreadsModel.listThreadsQuery,
  links: Links,
): Promise<ThreadsModel.threadList> {
  const limit = clampLimit(query.limit)
  const sortBy = query.sort_by === 'created_at' ? 'created_at' : 'updated_at'
  const descending = query.sort_dir !== 'asc'
  let seqFrom = 0
  let seqTo: number | undefined
  if (query.updated_since !== undefined) {
    // "Updated after `since`" is "after the last update written by then" in the update order.
    seqFrom = (await threads.updateSeqAt(parseSince(query.updated_since))) + 1
  }
  let search: Term[] | undefined
  if (query.q !== undefined && query.q.trim() !== '') {
    const parsed = parseQuery(query.q)
    if (parsed === null) return envelope([], limit)
    search = parsed
  }
  let after: { createdAt: number; id: string } | undefined
  if (query.after !== undefined) {
    const cursor = await threads.listCursor(caller, query.after, sortBy)
    if (!cursor) throw invalidRequest('after does not name a thread you can list')
    if (sortBy === 'created_at') after = cursor
    else if (descending) seqTo = cursor.updateSeq - 1
    else seqFrom = Math.max(seqFrom, cursor.updateSeq + 1)
  }
  const list: ThreadListQuery = {
    viewer: caller,
    sortBy,
    descending,
    owned: query.owned,
    private: query.private,
    archived: query.archived === true,
    search,
    seqFrom,
    seqTo,
    after,
    limit: limit + 1,
  }
  const phrases = (search ?? []).flatMap((term) => (term.kind === 'phrase' ? [term.tokens] : []))
  const rows = phrases.length === 0 ? await threads.listThreads(list) : await phraseList(threads, list, phrases)
  const page = envelope(rows, limit)
  return { ...page, data: page.data.map((row) => toThread(row, links)) }
}

/** Whether searchSources cut a thread's messages (searchSourceBounds): too many, one too long, or too much in all. */
function leftOut(sources: SnippetSource[]): boolean {
  const messages = sources.filter((source) => source.messageId !== null && source.attachmentId === null)
  const { messages: count, messageChars, threadChars } = searchSourceBounds
  let chars = 0
  for (const { text } of messages) chars += text.length
  return messages.length >= count || chars >= threadChars || messages.some(({ text }) => text.length >= messageChars)
}

/** Candidates read per round of a search with phrases: a page's worth at first, then twice as many each round. */
const maxCandidates = 4 * maxPageSize

/**
 * The list of a search with phrases. The indexes hold no positions, so the threads they find hold each phrase's
 * tokens somewhere; each is kept only if one of its texts (searchSources) holds the phrase, and the list goes on with
 * later candidates, in the same order, until it has `limit` threads or no candidate is left. Written once here for
 * both databases (and every caller of the list: the API, the web app, MCP).
 */
export async function phraseList(
  threads: ThreadRepository,
  query: ThreadListQuery,
  phrases: string[][],
): Promise<ThreadRow[]> {
  const holds = phrases.map(phraseMatcher)
  const kept: ThreadRow[] = []
  const seen = new Set<string>()
  let next = query
  let size = query.limit
  for (;;) {
    const candidates = await threads.listThreads({ ...next, limit: size })
    const sources = await threads.searchSources(candidates.map((row) => row.id))
    for (const row of candidates) {
      // A thread written meanwhile may move to where a later round reads it again.
      if (seen.has(row.id)) continue
      seen.add(row.id)
      const bounded = sources.get(row.id) ?? []
      const texts = bounded.map(({ text }) => text)
      if (!holds.every((held) => texts.some(held))) {
        // The bounded read left older or longer messages out: a phrase may stand there, so read them all. Only long
        // threads pay for this, and only when the newest part of them does not decide.
        if (!leftOut(bounded)) continue
        const all = (await threads.activeMessages(row.id)).map((message) => searchableText(message.contents))
        if (!holds.every((held) => texts.some(held) || all.some(held))) continue
      }
      kept.push(row)
      if (kept.length === query.limit) return kept
    }
    const last = candidates.at(-1)
    if (candidates.length < size || last === undefined) return kept
    if (query.sortBy === 'created_at') {
      next = { ...next, after: { createdAt: last.createdAt, id: last.id } }
    } else {
      // The update order's place is the cursor's; a thread deleted meanwhile has none, and the list ends there.
      const cursor = await threads.listCursor(query.viewer, last.id, 'updated_at')
      if (!cursor) return kept
      next = query.descending ? { ...next, seqTo: cursor.updateSeq - 1 } : { ...next, seqFrom: cursor.updateSeq + 1 }
    }
    size = Math.min(size * 2, maxCandidates)
  }
}

/**
 * A page of the threads `q` finds, as the thread list pages them, each with its best passage for `q`: the page first,
 * then the passages of its threads only (a bounded read per thread, ThreadRepository.searchSources). A `q` without a
 * word finds nothing. A thread whose text is gone by the time its passages are read (deleted meanwhile) keeps its
 * place with an empty snippet, as the page already promised it.
 */
export async function searchThreads(
  threads: ThreadRepository,
  caller: Caller,
  query: ThreadsModel.searchQuery,
  links: Links,
): Promise<ThreadsModel.searchResults> {
  const terms = parseQuery(query.q)
  if (terms === null) return envelope([], clampLimit(query.limit))
  const page = await listThreads(threads, caller, query, links)
  const sources = await threads.searchSources(page.data.map((thread) => thread.id))
  return {
    ...page,
    data: page.data.map((thread) => {
      const best = buildSnippet(sources.get(thread.id) ?? [], terms)
      return {
        thread,
        message_id: best?.messageId ?? null,
        attachment_id: best?.attachmentId ?? null,
        snippet: best?.snippet ?? '',
        highlights: best?.highlights ?? [],
      }
    }),
  }
}
