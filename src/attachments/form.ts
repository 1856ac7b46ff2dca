// Reading an upload's multipart body into its file parts, by the route's naming rules, and cleaning the names
// clients give files. Runs in the inspect process (inspect-process.ts), never on the thread that answers requests.
import { extname } from 'node:path'
import { filenameMaxLength, filesPerRequest } from './limits'

/** A file part of the form, in index order. Its name and declared type are claims, checked against the bytes. */
export interface Part {
  /** attachments[n], which error messages name. */
  name: string
  /** The sanitised display name. */
  filename: string
  declaredType: string
  bytes: Uint8Array
}

/** A form that is no valid upload, with the 400 message that says why. */
export class FormRefusal extends Error {}

const partName = /^attachments\[(\d)\]$/

/** The display name: the last path segment, without control or format characters, at most 255 characters. */
export function sanitizeFilename(raw: string): string {
  const base =
    raw
      .normalize('NFC')
      .replace(/[\p{Cc}\p{Cf}]/gu, '')
      .split(/[/\\]/)
      .at(-1)
      ?.trim() ?? ''
  if (base === '' || base === '.' || base === '..') return 'attachment'
  const chars = [...base]
  if (chars.length <= filenameMaxLength) return base
  const extension = [...extname(base)].length <= 16 ? [...extname(base)] : []
  return [...chars.slice(0, filenameMaxLength - extension.length), ...extension].join('')
}

/** The file parts, which must be named attachments[0] to attachments[n-1], each once. */
export async function readParts(body: Uint8Array, contentType: string): Promise<Part[]> {
  // Bun's own multipart parser, the one request.formData() uses, fed the body the request thread wrote to a file.
  const form = await new Response(body, { headers: { 'content-type': contentType } }).formData().catch(() => null)
  if (!form) throw new FormRefusal('The multipart body could not be parsed')
  const entries = [...form.entries()]
  if (entries.length === 0) throw new FormRefusal('Part attachments[0] is required')
  if (entries.length > filesPerRequest) {
    throw new FormRefusal(`At most ${filesPerRequest} files per request; this one has ${entries.length} parts`)
  }
  const files: (File | undefined)[] = []
  for (const [name, value] of entries) {
    const index = Number(partName.exec(name)?.[1] ?? Number.NaN)
    if (!(index < entries.length)) {
      const expected = 'attachments[0], attachments[1], … numbered without gaps'
      throw new FormRefusal(`Unexpected part ${JSON.stringify(name.slice(0, 100))}: name the file parts ${expected}`)
    }
    if (files[index]) throw new FormRefusal(`Part ${name} appears more than once`)
    if (typeof value === 'string') throw new FormRefusal(`Part ${name} must be a file`)
    files[index] = value
  }
  return Promise.all(
    (files as File[]).map(async (file, index) => ({
      name: `attachments[${index}]`,
      // A part sent with filename="" arrives as a Blob, whose `name` is undefined whatever the typings say.
      filename: sanitizeFilename(file.name ?? ''),
      declaredType: file.type,
      bytes: await file.bytes(),
    })),
  )
}
