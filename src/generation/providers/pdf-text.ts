// The text of an uploaded PDF, for models that read documents as text. Extracted in the generation worker
// (never on the request thread) the first time a PDF is used, then kept in the blob store beside the file, as
// `<id>.txt`.
// Extraction is bounded whatever the file says about itself, since it shares the worker with every generation:
// the streams are measured again first (the upload checks did, but files stored before they counted every
// stream were not), pages are read one at a time, and reading stops at a fixed length of text.
import { getDocumentProxy } from 'unpdf'
import { extractedTextKey } from '../../attachments/keys'
import { pdfLimits } from '../../attachments/limits'
import { inflatesBeyond, latin1, namesUnboundedFilter } from '../../attachments/pdf-streams'
import type { BlobStore } from '../../storage/blobs'

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
    // Ends the parse of a page left unread, and frees what pdf.js keeps of the document.
    await document.loadingTask.destroy()
  }
}

/**
 * The PDF's text, pages separated by blank lines, at most `pdfLimits.maxTextLength` characters and a note saying
 * the rest was left out; null when the file cannot be read or parsed, or its streams inflate beyond the limit.
 */
export async function pdfText(blobs: BlobStore, pdfKey: string): Promise<string | null> {
  try {
    const cached = await blobs.get(extractedTextKey(pdfKey))
    if (cached) return await cached.text()
    const stored = await blobs.get(pdfKey)
    if (!stored) return null
    const bytes = await stored.bytes()
    const raw = latin1(bytes)
    if (namesUnboundedFilter(raw) || (await inflatesBeyond(bytes, raw, pdfLimits.maxInflatedBytes))) return null
    const max = pdfLimits.maxTextLength
    const { pages, complete } = await pageTexts(bytes, max)
    const joined = pages.join('\n\n')
    const text = complete
      ? joined
      : `${joined.slice(0, max)}\n\n[The rest of this PDF's text is left out: it is longer than ${max} characters]`
    // Every store writes a key whole: a concurrent reader sees no text yet, or all of it. A cache that cannot be
    // written now is made again next time; this answer still gets the text.
    await blobs.put(extractedTextKey(pdfKey), text).catch(() => {})
    return text
  } catch {
    return null
  }
}
