// Full-text search of threads: what every implementation shares. A thread's document is its name and its active
// messages' searchable text; a search matches the threads whose document holds every word of the query. Searching
// is a filter of the thread list (`words` in ThreadRepository.listThreads), because a search must return exactly
// the threads a plain list would, in the same order. This contract is the index's upkeep: writes leave documents
// behind, a search first brings its own up to date, and a background indexer keeps the rest current. The SQLite
// implementation (FTS5) is search.fts5.ts.
import type { Logger } from '../shared/log'
import type { ContentBlock } from './repository'

export interface ThreadSearch {
  /**
   * Rewrites up to `batch` of the documents that writes left behind (all of them when omitted), oldest first, and
   * answers how many it rewrote. Cheap when none are behind. Safe beside searches, writes and other flushes.
   */
  flush(batch?: number): Promise<number>
}

/** A query's words beyond this many are ignored (README, "Search"). */
const maxWords = 16

/**
 * A word: letters and digits. SQLite's FTS5 tokenizer, on its Unicode 6.1 tables, separates words at 21 characters
 * that later versions call letters (New Tai Lue vowel signs, two Vedic signs), so they separate words here too, for
 * every implementation: a word the index splits would be a phrase, and an index without positions refuses phrases.
 */
const word = /(?:(?![\u19b0-\u19c0\u19c8\u19c9\u1cf2\u1cf3])[\p{L}\p{N}])+/gu

/** The words a search query asks for (the first 16), or null when the text holds none. */
export function searchWords(text: string): string[] | null {
  return text.match(word)?.slice(0, maxWords) ?? null
}

/** Every word of a text, in order: what a document holds where the index does not split words itself (search.pg.ts). */
export function textWords(text: string): string[] {
  return text.match(word) ?? []
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
 * yielding between them so requests are not held up. Searches need not wait for it (they flush first).
 */
export function startSearchIndexer(search: ThreadSearch, log: Logger, intervalMs = 1000, batch = 16): { stop(): void } {
  let timer: Timer | undefined
  let stopped = false
  const run = async () => {
    try {
      while (!stopped && (await search.flush(batch)) === batch) await new Promise((resolve) => setImmediate(resolve))
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
