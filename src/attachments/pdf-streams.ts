// What a PDF's streams decode to and which names it uses, read from the raw bytes before any parser: at upload
// (checks.ts) and again before text extraction reads a stored file (pdf-text.ts), which also covers files stored
// before these checks. Nothing a stream's dictionary says about it is believed: not its Length, not its Subtype
// (a stream that claims to be an image can also be a page's contents, which text extraction decodes whole) and
// not its Filter (which can be an indirect object hidden in a compressed object stream).
import { constants, createInflate, type Inflate, inflateSync } from 'node:zlib'
import { decodePDFRawStream, PDFContext, PDFRawStream } from 'pdf-lib'

/** The bytes as a string of the same length, one character a byte, for searching PDF syntax. */
export function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
}

/**
 * A name as a pattern that also matches it spelled with `#xx` escapes (ISO 32000-1, 7.3.5), which readers decode:
 * pdf-lib and pdf.js both read `/Encr#79pt` as `/Encrypt`. Either case of hex digit counts.
 */
function name(plain: string): string {
  const characters = [...plain].map((character) => {
    const hex = character.charCodeAt(0).toString(16)
    return `(?:${character}|#${hex.replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`)})`
  })
  // A name ends at whitespace or a delimiter: `/LZWDecodeX` is another name.
  return String.raw`/${characters.join('')}(?![^\0\t\n\f\r ()<>[\]{}/%])`
}

const space = String.raw`[\0\t\n\f\r ]`
const encryption = new RegExp(`${name('Encrypt')}${space}*(?:\\d+${space}+\\d+${space}+R|<<)`)
// pdf.js also takes the abbreviations of inline images in a stream's Filter, so those count there.
const unboundedFilter = new RegExp(
  `${name('LZWDecode')}|${name('RunLengthDecode')}|${name('Filter')}${space}*(?:\\[[^\\]]*)?(?:${name('LZW')}|${name('RL')})`,
)

/**
 * Whether the trailer or cross-reference stream dictionary declares encryption; neither is ever encrypted itself,
 * while a parser would only fail on the encrypted objects, unable to say why.
 */
export function declaresEncryption(raw: string): boolean {
  return encryption.test(raw)
}

/**
 * Whether the file names LZW or run-length compression. Their output can be bounded only by decoding it; both are
 * rare in files made since the 1990s, and either can stand for gigabytes.
 */
export function namesUnboundedFilter(raw: string): boolean {
  return unboundedFilter.test(raw)
}

/** A zlib header (RFC 1950): deflate, and a check value that makes the first two bytes a multiple of 31. */
function startsZlib(bytes: ArrayLike<number>): boolean {
  const cmf = bytes[0] ?? 0
  return (cmf & 0x0f) === 8 && ((cmf << 8) | (bytes[1] ?? 0)) % 31 === 0
}

const context = PDFContext.create()
const ascii85 = context.obj({ Filter: 'ASCII85Decode' })
const asciiHex = context.obj({ Filter: 'ASCIIHexDecode' })
const hexDigit = /[0-9A-Fa-f>]/g

/**
 * The first two bytes of hexadecimal text at `start`, read as pdf.js and pdf-lib read it: anything but a digit is
 * skipped, up to the end marker `>`. Read here rather than by pdf-lib, which decodes 8,000 bytes at a time: for
 * each of the hundreds of thousands of `stream` keywords a crafted file can hold, that made the check take seconds.
 */
function hexStart(raw: string, start: number): Uint8Array {
  hexDigit.lastIndex = start
  let digits = ''
  for (let match = hexDigit.exec(raw); match && match[0] !== '>' && digits.length < 4; match = hexDigit.exec(raw))
    digits += match[0]
  return Buffer.from(digits, 'hex')
}

/**
 * The ways the data of a stream at `start` can be zlib data: as it is, or under an ASCII85 or hexadecimal layer,
 * which FlateDecode data wears in files made by ReportLab, among others. Both layers are tried on every stream,
 * since their decoders read any bytes (the reader follows the Filter, which may say anything); a layer is decoded
 * whole (by pdf-lib, up to its end marker) only when it starts with a zlib header.
 */
function zlibReadings(bytes: Uint8Array, raw: string, start: number): Uint8Array[] {
  const data = bytes.subarray(start)
  const readings = startsZlib(data) ? [data] : []
  const a85 = decodePDFRawStream(PDFRawStream.of(ascii85, data))
  if (startsZlib(a85.peekBytes(2))) readings.push(a85.decode())
  if (startsZlib(hexStart(raw, start))) readings.push(decodePDFRawStream(PDFRawStream.of(asciiHex, data)).decode())
  return readings
}

/** Layers up to this size are inflated whole: for the many small streams of a document, far quicker than streaming. */
const wholeBytes = 1024 * 1024

/**
 * What a layer of zlib data larger than `wholeBytes` inflates to, each layer of a filter chain below it counted
 * too, without holding more than a chunk of any layer: output that is zlib data again streams into an inflater of
 * its own. Stops once past `limit`. A layer that turns out not to be valid zlib data ends where it breaks.
 */
function streamedSize(data: Uint8Array, limit: number): Promise<number> {
  return new Promise((resolve) => {
    let size = 0
    const layers: Inflate[] = []
    const finish = () => {
      for (const layer of layers) layer.destroy()
      resolve(size)
    }
    const layer = (): Inflate => {
      const inflate = createInflate({ finishFlush: constants.Z_SYNC_FLUSH })
      layers.push(inflate)
      let next: Inflate | null | undefined
      inflate.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) return finish()
        if (next === undefined) next = startsZlib(chunk) ? layer() : null
        if (next && !next.write(chunk)) {
          inflate.pause()
          next.once('drain', () => inflate.resume())
        }
      })
      let ended = false
      const end = () => {
        if (ended) return
        ended = true
        if (next) next.end()
        else finish()
      }
      // Kept for good: an inflater destroyed in the middle of a write may report an error after its first.
      inflate.on('end', end).on('error', end)
      return inflate
    }
    layer().end(data)
  })
}

/** What zlib data inflates to, through every layer of a filter chain; more than `limit` means beyond it. */
async function inflatedSize(data: Uint8Array, limit: number): Promise<number> {
  let size = 0
  while (startsZlib(data)) {
    try {
      data = inflateSync(data, {
        maxOutputLength: Math.min(limit - size, wholeBytes) + 1,
        finishFlush: constants.Z_SYNC_FLUSH,
      })
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE') break
      return limit - size <= wholeBytes ? limit + 1 : size + (await streamedSize(data, limit - size))
    }
    size += data.length
    if (size > limit) break
  }
  return size
}

/**
 * Whether the streams of a PDF inflate to more than `budget` bytes in all. Every `stream` keyword is tried, with
 * or without the line break the format asks for (pdf-lib accepts both); zlib itself finds where each stream's data
 * ends (trailing bytes are ignored), so no `Length` or `endstream` needs to be trusted. Inflating stops as soon as
 * the budget is spent; output that is zlib data again (a filter chain) counts too, as does what an ASCII layer
 * decodes to. Images count like any other stream: what claims to be one can also be drawn as a page's contents.
 */
export async function inflatesBeyond(bytes: Uint8Array, raw: string, budget: number): Promise<boolean> {
  let left = budget
  for (let at = raw.indexOf('stream'); at !== -1; at = raw.indexOf('stream', at + 6)) {
    if (raw.startsWith('end', at - 3)) continue
    let start = at + 6
    while (raw[start] === ' ' || raw[start] === '\t') start++
    if (raw[start] === '\r') start++
    if (raw[start] === '\n') start++
    for (const data of zlibReadings(bytes, raw, start)) {
      // What an ASCII layer decodes to is held by the reader like any other output.
      if (data.buffer !== bytes.buffer) left -= data.length
      left -= await inflatedSize(data, Math.max(left, 0))
      if (left < 0) return true
    }
  }
  return false
}
