// The checks of one file's bytes that need no native code: its type from the bytes against what its name and
// declared type claim, its size, a PDF's structure and pages, and text's encoding. Plain data in and out, so
// that they run in the inspect worker (inspect-worker.ts) and never on the thread that answers requests.
import { extname } from 'node:path'
import { fileTypeFromBuffer } from 'file-type'
import { PDFDocument } from 'pdf-lib'
import type { AttachmentKind } from './attachments.table'
import { imageLimits, pdfLimits, textLimits } from './limits'
import type { AttachmentsModel } from './model'

/** What the form says about a file: its sanitised display name and the type its part declared. */
export interface FileClaim {
  filename: string
  declaredType: string
}

/**
 * The outcome of the checks: a refusal with its reason, or the kind the bytes were found to be. An image is
 * only provisionally accepted: decoding it is left to sharp, which runs on its own threads.
 */
export type Verdict =
  | { accepted: true; kind: AttachmentKind; mediaType: string }
  | { accepted: false; code: AttachmentsModel.rejectionCode; problem: string; limit?: number }

type Found = { kind: AttachmentKind; mediaType: string }
const image = (mediaType: string): Found => ({ kind: 'image', mediaType })
const text = (mediaType: string): Found => ({ kind: 'text', mediaType })
const pdf: Found = { kind: 'pdf', mediaType: 'application/pdf' }

const limitsOf = { image: imageLimits, pdf: pdfLimits, text: textLimits } as const

/** What a sniffed media type makes a file. APNG is PNG to every reader that matters. */
const sniffedKinds: Record<string, Found> = {
  'image/jpeg': image('image/jpeg'),
  'image/png': image('image/png'),
  'image/apng': image('image/png'),
  'image/gif': image('image/gif'),
  'image/webp': image('image/webp'),
  'application/pdf': pdf,
}

/**
 * What a file's extension or declared type claims. Claims never decide the type, but one that contradicts
 * the bytes (a PNG named .pdf) refuses the file; names and types not listed here claim nothing. Bun 1.4 fills
 * File.type from the name when a part declares its type after Content-Disposition, the usual order
 * (oven-sh/bun#33012), so in practice the extension is the claim that counts.
 */
const claims: Record<string, Found> = {
  ...sniffedKinds,
  'text/plain': text('text/plain'),
  'text/markdown': text('text/markdown'),
  'text/csv': text('text/csv'),
  '.jpg': image('image/jpeg'),
  '.jpeg': image('image/jpeg'),
  '.png': image('image/png'),
  '.gif': image('image/gif'),
  '.webp': image('image/webp'),
  '.pdf': pdf,
  '.txt': text('text/plain'),
  '.md': text('text/markdown'),
  '.markdown': text('text/markdown'),
  '.csv': text('text/csv'),
}

const acceptedTypes = 'accepted are JPEG, PNG, GIF and WebP images, PDFs and UTF-8 text'

function refused(code: AttachmentsModel.rejectionCode, problem: string, limit?: number): Verdict {
  return { accepted: false, code, problem, ...(limit !== undefined && { limit }) }
}

function found({ kind, mediaType }: Found): Verdict {
  return { accepted: true, kind, mediaType }
}

/** Text has no signature: bytes are text when they are UTF-8 without NUL. */
function isText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

async function checkPdf(bytes: Uint8Array): Promise<Verdict> {
  const raw = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  // Encryption is declared in the trailer or cross-reference stream dictionary, which are never encrypted
  // themselves; pdf-lib would only fail to parse such a file, unable to say why.
  if (/\/Encrypt\s*(?:\d+\s+\d+\s+R|<<)/.test(raw))
    return refused('password_protected', 'is encrypted or password-protected')
  // pdf-lib recovers from a cut-off file by scanning what is left; the missing end marker gives it away.
  if (!raw.slice(-1024).includes('%%EOF')) return refused('corrupt', 'is a truncated PDF')
  const document = await PDFDocument.load(bytes, { updateMetadata: false, throwOnInvalidObject: true }).catch(
    () => null,
  )
  if (!document) return refused('corrupt', 'is a damaged PDF')
  const pages = document.getPageCount()
  if (pages === 0) return refused('empty', 'has no pages')
  if (pages > pdfLimits.maxPages) {
    return refused('too_many_pages', `has ${pages} pages; at most ${pdfLimits.maxPages}`, pdfLimits.maxPages)
  }
  return found(pdf)
}

/** Decides a file's type from its bytes and checks it against that type's rules, stopping at the first break. */
export async function checkBytes(bytes: Uint8Array, claim: FileClaim): Promise<Verdict> {
  if (bytes.length === 0) return refused('empty', 'is empty')
  const sniffed = (await fileTypeFromBuffer(bytes))?.mime
  const claimed = [
    claims[extname(claim.filename).toLowerCase()],
    claims[claim.declaredType.split(';')[0]?.trim().toLowerCase() ?? ''],
  ]
  const textClaim = claimed.find((candidate) => candidate?.kind === 'text')
  // Checked before the size, so that a large binary file is refused for what it is rather than as long text.
  if (!sniffed && !isText(bytes)) {
    return textClaim
      ? refused('invalid_text', 'is not UTF-8 text free of NUL bytes')
      : refused('unsupported_type', `is of no recognised type; ${acceptedTypes}`)
  }
  const kind = sniffed ? sniffedKinds[sniffed] : text(textClaim?.mediaType ?? 'text/plain')
  if (!kind) return refused('unsupported_type', `is ${sniffed}; ${acceptedTypes}`)
  const contradiction = claimed.find((candidate) => candidate && candidate.kind !== kind.kind)
  if (contradiction) {
    return refused('type_mismatch', `claims to be ${contradiction.mediaType} but its bytes are ${kind.kind}`)
  }
  const { maxBytes } = limitsOf[kind.kind]
  if (bytes.length > maxBytes) {
    return refused('too_large', `has ${bytes.length} bytes; ${kind.kind} files may have ${maxBytes}`, maxBytes)
  }
  return kind.kind === 'pdf' ? checkPdf(bytes) : found(kind)
}
