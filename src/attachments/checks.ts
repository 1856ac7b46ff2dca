// The checks of one file's bytes: its type from the bytes against what its name and declared type claim, its
// size, a PDF's structure and pages, text's encoding, and an image's pixels (decoded by sharp, which also makes
// the scaled copy models read). Plain data in and out, so that they run in the inspect process
// (inspect-process.ts) and never on the thread that answers requests.
import { extname } from 'node:path'
import { fileTypeFromBuffer } from 'file-type'
import { PDFDocument } from 'pdf-lib'
import sharp from 'sharp'
import { imageLimits, pdfLimits, textLimits } from './limits'
import type { AttachmentsModel } from './model'
import { drawingBeyond } from './pdf-drawing'
import { declaresEncryption, inflatesBeyond, latin1, namesUnboundedFilter } from './pdf-streams'
import type { AttachmentKind } from './repository'

/** What the form says about a file: its sanitised display name and the type its part declared. */
export interface FileClaim {
  filename: string
  declaredType: string
}

/**
 * The outcome of the checks: a refusal with its reason, or the kind the bytes were found to be, with the
 * model-ready copy of a large image (null when the original fits). checkBytes accepts an image only
 * provisionally: checkFile decodes it. A refusal's reason is said twice, each completing a sentence that starts
 * with the file's name: `problem` for developers (the API's message: media types, bytes, the rule) and `plain`
 * for the person who chose the file (the composer, an assistant relaying an MCP upload).
 */
export type Verdict =
  | { accepted: true; kind: AttachmentKind; mediaType: string; resized: Uint8Array | null }
  | { accepted: false; code: AttachmentsModel.rejectionCode; problem: string; plain: string; limit?: number }

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
  // SVG is text to a sniffer but an image (with scripts) to a browser: a file that says it is one is refused.
  '.svg': image('image/svg+xml'),
}

const acceptedTypes = 'accepted are JPEG, PNG, GIF and WebP images, PDFs and UTF-8 text'
const acceptedInWords =
  "can't be attached: only JPEG, PNG, GIF or WebP images, PDFs, and text, Markdown or CSV files can"

/** What a person calls a file of this type. */
const typeWords: Record<string, string> = {
  'image/jpeg': 'a JPEG image',
  'image/png': 'a PNG image',
  'image/gif': 'a GIF image',
  'image/webp': 'a WebP image',
  'application/pdf': 'a PDF',
  'text/plain': 'a text file',
  'text/markdown': 'a Markdown file',
  'text/csv': 'a CSV file',
}

const inWords = (found: Found): string =>
  typeWords[found.mediaType] ?? (found.kind === 'image' ? 'an image' : found.kind === 'pdf' ? 'a PDF' : 'text')

function sizeInWords(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / 1024 / 1024)} MB` : `${Math.ceil(bytes / 1024)} KB`
}

function refused(code: AttachmentsModel.rejectionCode, problem: string, plain: string, limit?: number): Verdict {
  return { accepted: false, code, problem, plain, ...(limit !== undefined && { limit }) }
}

function found({ kind, mediaType }: Found): Verdict {
  return { accepted: true, kind, mediaType, resized: null }
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
  const raw = latin1(bytes)
  if (declaresEncryption(raw)) {
    return refused('password_protected', 'is encrypted or password-protected', 'is protected by a password')
  }
  // pdf-lib recovers from a cut-off file by scanning what is left; the missing end marker gives it away.
  if (!raw.slice(-1024).includes('%%EOF')) return refused('corrupt', 'is a truncated PDF', 'is an incomplete PDF')
  if (namesUnboundedFilter(raw)) {
    return refused(
      'unsupported_type',
      'uses LZW or run-length compression, which is not accepted',
      "uses an old kind of PDF compression that can't be read: save it as a PDF again and attach that",
    )
  }
  if (await inflatesBeyond(bytes, raw, pdfLimits.maxInflatedBytes)) {
    const mib = pdfLimits.maxInflatedBytes / (1024 * 1024)
    return refused(
      'too_large',
      `inflates to more than ${mib} MiB of PDF data`,
      `holds more than ${mib} MB once unpacked, too much to read`,
      pdfLimits.maxInflatedBytes,
    )
  }
  const document = await PDFDocument.load(bytes, { updateMetadata: false, throwOnInvalidObject: true }).catch(
    () => null,
  )
  if (!document) return refused('corrupt', 'is a damaged PDF', 'is a damaged PDF')
  // A page tree that loops back on itself overflows the stack while pages are counted.
  let pages: number
  try {
    pages = document.getPageCount()
  } catch {
    return refused('corrupt', 'is a damaged PDF', 'is a damaged PDF')
  }
  if (pages === 0) return refused('empty', 'has no pages', 'has no pages')
  if (pages > pdfLimits.maxPages) {
    const { maxPages } = pdfLimits
    return refused(
      'too_many_pages',
      `has ${pages} pages; at most ${maxPages}`,
      `has ${pages} pages; a PDF may have up to ${maxPages}`,
      maxPages,
    )
  }
  // What reading its text would cost: refused here, where counting is cheap, rather than found out by a deadline.
  let beyond: ReturnType<typeof drawingBeyond>
  try {
    beyond = drawingBeyond(document, { operators: pdfLimits.maxOperators, forms: pdfLimits.maxFormInvocations })
  } catch {
    return refused('corrupt', 'is a damaged PDF', 'is a damaged PDF')
  }
  if (beyond === 'forms') {
    const limit = pdfLimits.maxFormInvocations
    return refused(
      'too_complex',
      `draws more than ${limit} forms (forms inside forms counted each time)`,
      'is a PDF too complex to read',
      limit,
    )
  }
  if (beyond === 'operators') {
    const limit = pdfLimits.maxOperators
    return refused('too_complex', `runs more than ${limit} drawing operators`, 'is a PDF too complex to read', limit)
  }
  return found(pdf)
}

/** Decides a file's type from its bytes and checks it against that type's rules, stopping at the first break. */
export async function checkBytes(bytes: Uint8Array, claim: FileClaim): Promise<Verdict> {
  if (bytes.length === 0) return refused('empty', 'is empty', 'is empty')
  const sniffed = (await fileTypeFromBuffer(bytes))?.mime
  const declared = claim.declaredType.split(';')[0]?.trim().toLowerCase() ?? ''
  const claimed = [
    claims[extname(claim.filename).toLowerCase()],
    // Any declared image type claims an image, including ones we do not accept, such as image/svg+xml.
    claims[declared] ?? (declared.startsWith('image/') ? image(declared) : undefined),
  ]
  const textClaim = claimed.find((candidate) => candidate?.kind === 'text')
  // Checked before the size, so that a large binary file is refused for what it is rather than as long text.
  if (!sniffed && !isText(bytes)) {
    return textClaim
      ? refused(
          'invalid_text',
          'is not UTF-8 text free of NUL bytes',
          `isn't ${inWords(textClaim)}: its contents aren't plain text`,
        )
      : refused('unsupported_type', `is of no recognised type; ${acceptedTypes}`, acceptedInWords)
  }
  const kind = sniffed ? sniffedKinds[sniffed] : text(textClaim?.mediaType ?? 'text/plain')
  if (!kind) return refused('unsupported_type', `is ${sniffed}; ${acceptedTypes}`, acceptedInWords)
  const contradiction = claimed.find((candidate) => candidate && candidate.kind !== kind.kind)
  if (contradiction) {
    const claim = contradiction.mediaType
    return refused(
      'type_mismatch',
      `is named or declared as ${claim}, but its bytes are ${kind.kind === 'text' ? 'text' : kind.mediaType}`,
      claim === 'image/svg+xml'
        ? "is an SVG image, which can't be attached: only JPEG, PNG, GIF or WebP images can"
        : `isn't ${inWords(contradiction)}: its contents are ${kind.kind === 'text' ? 'text' : inWords(kind)}`,
    )
  }
  const { maxBytes } = limitsOf[kind.kind]
  if (bytes.length > maxBytes) {
    const kindWords = { image: 'images', pdf: 'PDFs', text: 'text files' }[kind.kind]
    return refused(
      'too_large',
      `has ${bytes.length} bytes; ${kind.kind} files may have ${maxBytes}`,
      `is ${sizeInWords(bytes.length)}; ${kindWords} may be up to ${sizeInWords(maxBytes)}`,
      maxBytes,
    )
  }
  return kind.kind === 'pdf' ? checkPdf(bytes) : found(kind)
}

async function checkImage(bytes: Uint8Array, mediaType: string): Promise<Verdict> {
  const open = (limitInputPixels: number | false) => sharp(bytes, { animated: true, limitInputPixels, failOn: 'error' })
  // The header alone gives the size, so a bomb is refused without decoding a pixel of it.
  const header = await open(false)
    .metadata()
    .catch(() => null)
  if (!header) return refused('corrupt', 'is not a readable image', "is an image that can't be read")
  // With `animated`, height spans every frame: the pixel count is what decoding would really cost.
  if (header.width * header.height > imageLimits.maxPixels) {
    const { maxPixels } = imageLimits
    return refused(
      'too_many_pixels',
      `has more than ${maxPixels} pixels`,
      `has too many pixels: an image may have up to ${Math.round(maxPixels / 1e6)} million, all frames together`,
      maxPixels,
    )
  }
  const side = imageLimits.modelLongestSide
  const fits = Math.max(header.width, header.pageHeight ?? header.height) <= side
  try {
    // Every path decodes every pixel, which is what finds truncated or corrupt image data. A single frame that
    // fits is decoded into memory (at most 1568 × 1568 pixels): a quarter of the time `stats()` takes, which
    // computes much more. Frames of an animation, up to the pixel limit in all, stream through `stats()`.
    const decoder = open(imageLimits.maxPixels)
    const resized = fits
      ? await ((header.pages ?? 1) > 1 ? decoder.stats() : decoder.raw({ depth: 'uchar' }).toBuffer()).then(() => null)
      : await decoder.autoOrient().resize({ width: side, height: side, fit: 'inside' }).toBuffer()
    // Re-encoding can lose a palette and grow the file (a noisy 16-colour PNG doubled): models then get the
    // original, which is within the upload limit, and the provider scales it.
    return {
      accepted: true,
      kind: 'image',
      mediaType,
      resized: resized && resized.length < bytes.length ? resized : null,
    }
  } catch {
    return refused('corrupt', 'is a damaged or truncated image', 'is a damaged or incomplete image')
  }
}

/** Every check of one file, the image's pixels included. */
export async function checkFile(bytes: Uint8Array, claim: FileClaim): Promise<Verdict> {
  const verdict = await checkBytes(bytes, claim)
  return verdict.accepted && verdict.kind === 'image' ? checkImage(bytes, verdict.mediaType) : verdict
}
