// The text of an uploaded PDF, for models that read documents as text. Extracted in the generation worker
// (never on the request thread) the first time a PDF is used, then kept beside the file as `<id>.txt`.
import { rename } from 'node:fs/promises'
import { extractText, getDocumentProxy } from 'unpdf'

export function pdfTextPath(pdfPath: string): string {
  return `${pdfPath}.txt`
}

/** The PDF's text, pages separated by blank lines; null when the file cannot be read or parsed. */
export async function pdfText(pdfPath: string): Promise<string | null> {
  const cached = Bun.file(pdfTextPath(pdfPath))
  if (await cached.exists()) return cached.text()
  try {
    const document = await getDocumentProxy(new Uint8Array(await Bun.file(pdfPath).arrayBuffer()))
    const { text } = await extractText(document, { mergePages: false })
    const joined = text.map((page) => page.trim()).join('\n\n')
    // Written whole under a temporary name, so a concurrent reader never sees half a file.
    const temporary = `${pdfTextPath(pdfPath)}.${crypto.randomUUID()}.tmp`
    await Bun.write(temporary, joined)
    await rename(temporary, pdfTextPath(pdfPath))
    return joined
  } catch {
    return null
  }
}
