// The text of an uploaded PDF, for models that read documents as text. Extracted in the generation worker
// (never on the request thread) the first time a PDF is used, then kept beside the file as `<id>.txt`.
// Extraction is bounded whatever the file says about itself, since it shares the worker with every generation:
// the streams are measured again first (the upload checks did, but files stored before they counted every
// stream were not), pages are read one at a time, and reading stops at a fixed length of text.
import { rename } from 'node:fs/promises'
import { getDocumentProxy } from 'unpdf'
import { pdfLimits } from '../../attachments/limits'
import { inflatesBeyond, latin1, namesUnboundedFilter } from '../../attachments/pdf-streams'

export function pdfTextPath(pdfPath: string): string {
  return `${pdfPath}.txt`
}

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
export async function pdfText(pdfPath: string): Promise<string | null> {
  const cached = Bun.file(pdfTextPath(pdfPath))
  if (await cached.exists()) return cached.text()
  try {
    const bytes = new Uint8Array(await Bun.file(pdfPath).arrayBuffer())
    const raw = latin1(bytes)
    if (namesUnboundedFilter(raw) || (await inflatesBeyond(bytes, raw, pdfLimits.maxInflatedBytes))) return null
    const max = pdfLimits.maxTextLength
    const { pages, complete } = await pageTexts(bytes, max)
    const joined = pages.join('\n\n')
    const text = complete
      ? joined
      : `${joined.slice(0, max)}\n\n[The rest of this PDF's text is left out: it is longer than ${max} characters]`
    // Written whole under a temporary name, so a concurrent reader never sees half a file.
    const temporary = `${pdfTextPath(pdfPath)}.${crypto.randomUUID()}.tmp`
    await Bun.write(temporary, text)
    await rename(temporary, pdfTextPath(pdfPath))
    return text
  } catch {
    return null
  }
}
