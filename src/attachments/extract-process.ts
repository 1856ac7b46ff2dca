// The extract process: reads the text of one PDF at a time, in a child process of the server that the server kills
// when it takes too long or too much memory (text-extractor.ts). It is handed the file's bytes and answers with
// the text or why there is none; it sees neither the database nor the blob store, nor any of the server's secrets.
import { getDocumentProxy, getResolvedPDFJS } from 'unpdf'
import { pdfLimits } from './limits'
import { inflatesBeyond, latin1, namesUnboundedFilter } from './pdf-streams'
import type { PdfText } from './pdf-text'
import { unreadableReasons } from './pdf-text'

export interface ToExtractor {
  id: number
  bytes: Uint8Array
}

/** Once, when the process has loaded its modules; then per file, what was found. */
export type FromExtractor = { ready: true } | { id: number; result: PdfText }

/**
 * The text of each page, read page by page until `maxLength` characters: a page's text arrives in chunks, and
 * one that would pass the limit ends the reading, so a page of a million tiny glyphs is never gathered whole.
 */
async function pageTexts(bytes: Uint8Array, maxLength: number): Promise<{ pages: string[]; complete: boolean }> {
  const document = await getDocumentProxy(bytes)
  try {
    const pages: string[] = []
    let length = 0
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number)
      const reader = page.streamTextContent().getReader()
      let text = ''
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        for (const item of chunk.value.items) if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '')
        if (length + text.length > maxLength) {
          pages.push(text.trim())
          return { pages, complete: false }
        }
      }
      page.cleanup()
      pages.push(text.trim())
      length += text.length + 2
    }
    return { pages, complete: true }
  } finally {
    await document.loadingTask.destroy()
  }
}

/**
 * The PDF's text, pages separated by blank lines, at most `pdfLimits.maxTextLength` characters and a note saying
 * the rest was left out. The streams are measured again first: the upload checks did, but files stored before
 * they counted every stream were not.
 */
export async function extractText(bytes: Uint8Array): Promise<PdfText> {
  try {
    const raw = latin1(bytes)
    if (namesUnboundedFilter(raw) || (await inflatesBeyond(bytes, raw, pdfLimits.maxInflatedBytes))) {
      return { unreadable: unreadableReasons.damaged }
    }
    const max = pdfLimits.maxTextLength
    const { pages, complete } = await pageTexts(bytes, max)
    const joined = pages.join('\n\n')
    if (complete) return { text: joined }
    return {
      text: `${joined.slice(0, max)}\n\n[The rest of this PDF's text is left out: it is longer than ${max} characters]`,
    }
  } catch {
    return { unreadable: unreadableReasons.damaged }
  }
}

/**
 * Reads the files the server sends, one at a time (the server sends the next once this one is answered). Ready only
 * once pdf.js itself is loaded, which takes a while on a busy machine: a file's deadline is for reading it.
 */
export async function serve(): Promise<void> {
  await getResolvedPDFJS()
  process.on('message', async ({ id, bytes }: ToExtractor) => {
    process.send?.({ id, result: await extractText(bytes) } satisfies FromExtractor)
  })
  process.send?.({ ready: true } satisfies FromExtractor)
}

if (import.meta.main) await serve()
