// What is known of a stored PDF's text, kept in the blob store beside the file (`<key>.txt`): the text itself, as
// UTF-8, or a mark saying that it could not be read and why, so that no answer tries again. The mark starts with a
// byte that UTF-8 never holds (0xFF), so no extracted text can be mistaken for it, and it needs no table: the
// attachment's deletion and the sweeps already treat the key as the file's own.
import type { BlobStore } from '../storage/blobs'
import { extractedTextKey } from './keys'

/** The text of a PDF, or why it has none. */
export type PdfText = { text: string } | { unreadable: string }

const mark = 0xff

/** Completes "the text of <file> could not be read: …". */
export const unreadableReasons = {
  damaged: 'the file is damaged or uses features the reader does not support',
  slow: (ms: number) => `reading it took longer than ${ms / 1000} s`,
  memory: (bytes: number) => `reading it needed more than ${bytes / (1024 * 1024)} MiB of memory`,
  crashed: 'the reader stopped unexpectedly on it',
} as const

/** Writes what extraction found. A store that fails now is asked again next time: nothing is lost but the work. */
export async function storePdfText(blobs: BlobStore, pdfKey: string, result: PdfText): Promise<void> {
  const data = 'text' in result ? result.text : new Uint8Array([mark, ...new TextEncoder().encode(result.unreadable)])
  await blobs.put(extractedTextKey(pdfKey), data)
}

/** What the store knows of the PDF's text; null when nothing yet (never read, or the store does not answer). */
export async function storedPdfText(blobs: BlobStore, pdfKey: string): Promise<PdfText | null> {
  try {
    const stored = await blobs.get(extractedTextKey(pdfKey))
    if (!stored) return null
    const bytes = await stored.bytes()
    if (bytes[0] === mark) return { unreadable: new TextDecoder().decode(bytes.subarray(1)) }
    return { text: new TextDecoder().decode(bytes) }
  } catch {
    return null
  }
}

/** Whether the store marks the PDF unreadable, reading one byte: for pages that list files. */
export async function unreadableReason(blobs: BlobStore, pdfKey: string): Promise<string | null> {
  try {
    const stored = await blobs.get(extractedTextKey(pdfKey))
    if (!stored || stored.size === 0) return null
    const first = await stored.slice(0, 1).bytes()
    if (first[0] !== mark) return null
    return new TextDecoder().decode((await stored.bytes()).subarray(1))
  } catch {
    return null
  }
}
