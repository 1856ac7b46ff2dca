// Reads attached files' text for search, in the background: a thread's document takes in the words of its active
// messages' files once they are read here (src/threads/search.ts). A message's insert queues its files
// (`attachment_texts`, pending); this indexer takes them only once no answer of their thread is waiting or running,
// so reading a file never delays the answer to the message that attached it, and a search made before a file is
// read simply does not find its words yet.
//
// Bounded like everything done with stored files: a few files per claim, read one after another; PDFs through the
// extractor the answers use (its deadline, memory bound and processes, and its remembered results, so a PDF an
// answer has read is not read again), text decoded here, images holding no text. Of each file the first
// `maxFileTextChars` characters are kept. A file whose reading comes to nothing `maxAttempts` times (a crash of
// the server, a machine too busy to read it, a store that does not answer) is given up as unreadable, never
// retried in a loop.
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import type { BlobStore } from '../storage/blobs'
import { searchTokens } from '../threads/search-text'
import { originalKey } from './keys'
import { storedPdfText } from './pdf-text'
import type { Attachment, AttachmentRepository, FileText } from './repository'
import type { PdfTextExtractor } from './text-extractor'

/** Characters of a file's text that search keeps (docs/attachments.md): the rest is not searched. */
export const maxFileTextChars = 100_000

/** Files one claim takes: few, so that a claim is soon done and other instances share a backlog. */
export const filesPerClaim = 4

/**
 * How long a claim keeps its files: far beyond what reading them takes (each PDF waits at most the extractor's
 * per-answer deadline, 30 s by default), so only an instance that stopped mid-claim lets it run out.
 */
export const claimLeaseMs = 5 * 60_000

/** Claims of one file that may come to nothing before it is given up as unreadable. */
export const maxAttempts = 3

/** Characters tokenized between two turns of the event loop: about 10 ms of the slowest script (CJK). */
const charsPerTurn = 10_000

export interface FileIndexerDeps {
  attachments: Pick<AttachmentRepository, 'claimTexts' | 'recordText' | 'releaseText'>
  blobs: BlobStore
  /** The server's PDF text extractor, which the answers use too. */
  pdfText: Pick<PdfTextExtractor, 'prepare'>
  clock: Clock
  log: Logger
}

/** The first `maxFileTextChars` characters of a text, never splitting a character written as two code units. */
function kept(text: string): { text: string; truncated: boolean } {
  if (text.length <= maxFileTextChars) return { text, truncated: false }
  const high = text.charCodeAt(maxFileTextChars - 1)
  const end = high >= 0xd800 && high <= 0xdbff ? maxFileTextChars - 1 : maxFileTextChars
  return { text: text.slice(0, end), truncated: true }
}

/**
 * The distinct search tokens of a text, as documentTokens (search-text.ts) gives them, worked out a line-broken
 * piece at a time with a turn of the event loop between pieces: no token spans a line break, and a long text costs
 * the streams this process serves no pause longer than a piece's.
 */
async function wordsOf(text: string): Promise<string> {
  const distinct = new Set<string>()
  for (let start = 0; start < text.length; ) {
    const cut = text.indexOf('\n', start + charsPerTurn)
    const end = cut === -1 ? text.length : cut
    for (const { token } of searchTokens(text.slice(start, end))) distinct.add(token)
    start = end
    if (start < text.length) await new Promise((resolve) => setImmediate(resolve))
  }
  return [...distinct].join(' ')
}

/** What search keeps of a file's text: its first characters and their words, or nothing when it has no words. */
export async function fileTextOf(whole: string): Promise<FileText> {
  const { text, truncated } = kept(whole)
  const words = await wordsOf(text)
  return words === '' ? { state: 'empty' } : { state: 'indexed', text, words, truncated }
}

/** The file's text for search, or null when it could not be known this time (nothing said about the file). */
async function readFile(deps: FileIndexerDeps, file: Attachment, signal: AbortSignal): Promise<FileText | null> {
  const key = originalKey(file.id)
  switch (file.kind) {
    // An image's name is searched through its thread's document; its pixels are not.
    case 'image':
      return { state: 'empty' }
    case 'text': {
      const stored = await deps.blobs.get(key)
      if (!stored) return null
      // Invalid bytes (files stored before uploads were checked) become U+FFFD; a byte order mark is dropped.
      return fileTextOf(new TextDecoder('utf-8').decode(await stored.bytes()))
    }
    case 'pdf': {
      await deps.pdfText.prepare([key], signal)
      const known = await storedPdfText(deps.blobs, key)
      if (!known) return null
      return 'unreadable' in known ? { state: 'unreadable' } : fileTextOf(known.text)
    }
  }
}

/**
 * Claims up to `limit` waiting files and reads them one after another, recording each; answers how many it claimed.
 * A file whose reading comes to nothing keeps its claim until the lease runs out, so that it is tried again later,
 * not at once; a reading stopped by `signal` (a shutdown) gives the claim back.
 */
export async function indexFileTexts(
  deps: FileIndexerDeps,
  limit = filesPerClaim,
  signal: AbortSignal = new AbortController().signal,
): Promise<number> {
  const claimed = await deps.attachments.claimTexts(limit, deps.clock.now(), claimLeaseMs)
  for (const [index, { attachment, attempts }] of claimed.entries()) {
    if (signal.aborted) {
      for (const { attachment: left } of claimed.slice(index)) await deps.attachments.releaseText(left.id)
      break
    }
    let text: FileText | null = null
    // Claims beyond the bound were taken by instances that stopped while reading it: it is not read once more.
    if (attempts <= maxAttempts) {
      try {
        text = await readFile(deps, attachment, signal)
      } catch (error) {
        deps.log.error('file text not read', { attachmentId: attachment.id, error: String(error) })
      }
    }
    if (text === null && signal.aborted) {
      await deps.attachments.releaseText(attachment.id)
      continue
    }
    if (text === null && attempts >= maxAttempts) {
      deps.log.warn('file text given up', { attachmentId: attachment.id, attempts })
      text = { state: 'unreadable' }
    }
    if (text !== null) await deps.attachments.recordText(attachment.id, text, deps.clock.now())
  }
  return claimed.length
}

export interface FileIndexer {
  /** Looks for waiting files now: an answer has ended, so its files may be read. */
  wake(): void
  /** Stops, ends a reading in progress and gives its claim back; settles once nothing more is being done. */
  stop(): Promise<void>
}

/**
 * Reads waiting files in the background: at once, whenever woken, and every `intervalMs` (for what other instances'
 * answers, a restart or an upgrade left waiting), claim after claim while claims come back full.
 */
export function startFileIndexer(deps: FileIndexerDeps, intervalMs = 10_000): FileIndexer {
  const stopping = new AbortController()
  let timer: Timer | undefined
  let running: Promise<void> | null = null
  let again = false

  async function run(): Promise<void> {
    try {
      while (!stopping.signal.aborted && (await indexFileTexts(deps, filesPerClaim, stopping.signal)) === filesPerClaim)
        await new Promise((resolve) => setImmediate(resolve))
    } catch (error) {
      deps.log.error('file text indexing failed', { error: String(error) })
    }
  }

  function kick(): void {
    clearTimeout(timer)
    if (stopping.signal.aborted) return
    if (running) {
      again = true
      return
    }
    running = run().finally(() => {
      running = null
      if (again) {
        again = false
        kick()
      } else if (!stopping.signal.aborted) timer = setTimeout(kick, intervalMs)
    })
  }

  kick()
  return {
    wake: kick,
    async stop() {
      stopping.abort()
      clearTimeout(timer)
      await running
    },
  }
}
