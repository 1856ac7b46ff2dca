// Full-text search of threads: what every implementation shares. A thread's document is the distinct tokens
// (search-text.ts) of its name, its active messages' searchable text and the files those messages attach (each
// file's name, and its text once the file indexer has read it); a search matches the threads whose document holds
// every term of the query. Searching is a filter of the thread list (`search` in ThreadRepository.listThreads),
// because a search must return exactly the threads a plain list would, in the same order. This contract is the
// index's upkeep: writes leave documents behind, a search first brings its own up to date, and a background indexer
// keeps the rest current. The implementations are search.fts5.ts (SQLite) and search.pg.ts (PostgreSQL); both index
// the tokens made here verbatim.
import type { Logger } from '../shared/log'
import type { ContentBlock } from './repository'
import { documentTokens } from './search-text'

export interface ThreadSearch {
  /**
   * Rewrites up to `batch` of the documents that writes left behind (all of them when omitted), oldest first, and
   * answers how many it rewrote. Cheap when none are behind. Safe beside searches, writes and other flushes. With
   * `batch`, once no write is behind, it goes on with the documents a migration left to rebuild (`search_rebuild`),
   * most recent threads first; a search's flush (no `batch`) never waits for those (see docs/architecture.md).
   */
  flush(batch?: number): Promise<number>
  /** How many documents a migration left to rebuild: the background indexer reports them while it works. */
  rebuilding(): Promise<number>
}

/** What a thread's document is made of, as both implementations read it. */
export interface DocumentSource {
  name: string | null
  /** Its active messages' searchable text (the `text` column). */
  texts: string[]
  /** The files its active messages attach: each file's name, and its tokens once read (`attachment_texts.words`). */
  files: { name: string; words: string | null }[]
}

/** A document's distinct tokens: what both indexes hold for a thread (search-text.ts defines a token). */
export function threadTokens(source: DocumentSource): string[] {
  const texts = [source.name ?? '', ...source.texts, ...source.files.map((file) => file.name)]
  const tokens = new Set(documentTokens(texts).split(' '))
  // A file's words were made by documentTokens too, when the file indexer read it.
  for (const file of source.files) for (const token of file.words?.split(' ') ?? []) tokens.add(token)
  tokens.delete('')
  return [...tokens]
}

/** The text of the blocks a message holds, which its thread's document takes in. */
export function searchableText(contents: ContentBlock[]): string {
  return contents
    .map((block) => (block.type === 'text' ? block.text : block.type === 'user_get_choice' ? block.question : ''))
    .filter(Boolean)
    .join('\n')
}

/**
 * Keeps the index current in the background: every `intervalMs`, rewrites the pending documents in batches,
 * yielding between them so requests are not held up. Searches need not wait for it (they flush first). It also
 * works through a rebuild a migration left (search_rebuild), after the writes, and says when one starts and ends.
 */
export function startSearchIndexer(search: ThreadSearch, log: Logger, intervalMs = 1000, batch = 16): { stop(): void } {
  let timer: Timer | undefined
  let stopped = false
  let rebuilding: boolean | undefined
  const run = async () => {
    try {
      if (rebuilding === undefined) {
        const left = await search.rebuilding()
        rebuilding = left > 0
        if (rebuilding)
          log.info('search index rebuild started: searches find these threads as it reaches them', { left })
      }
      while (!stopped && (await search.flush(batch)) === batch) await new Promise((resolve) => setImmediate(resolve))
      if (rebuilding && !stopped && (await search.rebuilding()) === 0) {
        rebuilding = false
        log.info('search index rebuild finished')
      }
    } catch (error) {
      log.error('search index update failed', { error: String(error) })
    }
    if (!stopped) timer = setTimeout(run, intervalMs)
  }
  timer = setTimeout(run, intervalMs)
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
