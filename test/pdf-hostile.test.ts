// PDFs that lie about themselves: a compressed stream that claims to be an image but is also drawn as a page's
// contents, compressed data under an ASCII layer, and names spelled with `#xx` escapes. Each is refused at upload
// with the usual 422, and text extraction, which reads files stored before these checks too, stays bounded.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { PDFDocument, PDFName, StandardFonts } from 'pdf-lib'
import { extractText } from '../src/attachments/extract-process'
import { pdfLimits } from '../src/attachments/limits'
import { type Harness, harness, sharedInspector } from './support/helpers'
import { nestedForms, operatorFlood } from './support/hostile-pdf'
import { expectNothingStored } from './support/uploads'

// Uploads are checked in inspect processes, which a busy machine starts slowly.

// One pool of inspect processes checks every upload here; each test has its own app and files, so the tests run
// concurrently.
const inspector = sharedInspector()

/** `size` bytes of spaces, deflated as they stream by, so that the test never holds them. */
function deflatedSpaces(size: number): Promise<Uint8Array> {
  const chunk = new Uint8Array(1024 * 1024).fill(32)
  let left = size
  const spaces = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (left <= 0) return controller.close()
      controller.enqueue(chunk.slice(0, Math.min(left, chunk.length)))
      left -= chunk.length
    },
  })
  return new Response(spaces.pipeThrough(new CompressionStream('deflate'))).bytes()
}

/** ASCII85 (ISO 32000-1, 7.4.3), with its end marker: nothing here writes it, and ReportLab wraps data in it. */
function ascii85(bytes: Uint8Array): Uint8Array {
  let text = ''
  for (let at = 0; at < bytes.length; at += 4) {
    const group = bytes.subarray(at, at + 4)
    let value = 0
    for (let index = 0; index < 4; index++) value = value * 256 + (group[index] ?? 0)
    let digits = ''
    for (let index = 0; index < 5; index++) {
      digits = String.fromCharCode(33 + (value % 85)) + digits
      value = Math.floor(value / 85)
    }
    text += digits.slice(0, group.length + 1)
  }
  return new TextEncoder().encode(`${text}~>`)
}

/** The same zlib data as it is, or under an ASCII layer whose filter comes first in the stream's Filter. */
const layers = {
  none: (zlib: Uint8Array) => ({ data: zlib, Filter: 'FlateDecode' as string | string[] }),
  hex: (zlib: Uint8Array) => ({
    data: new TextEncoder().encode(`${Buffer.from(zlib).toString('hex')}>`),
    Filter: ['ASCIIHexDecode', 'FlateDecode'],
  }),
  ascii85: (zlib: Uint8Array) => ({ data: ascii85(zlib), Filter: ['ASCII85Decode', 'FlateDecode'] }),
}

/**
 * A one-page PDF whose only stream is an image XObject of `inflated` grey pixels, all spaces, which the page also
 * names as its /Contents: a reader drawing the page decodes the image's data as drawing operators.
 */
async function imageAsContents(zlib: Uint8Array, layer: keyof typeof layers): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const page = document.addPage([200, 200])
  const { data, Filter } = layers[layer](zlib)
  const image = document.context.register(
    document.context.stream(data, {
      Type: 'XObject',
      Subtype: 'Image',
      Width: 1,
      Height: pdfLimits.maxInflatedBytes + 1,
      ColorSpace: 'DeviceGray',
      BitsPerComponent: 8,
      Filter,
    }),
  )
  page.node.setXObject(PDFName.of('Im0'), image)
  page.node.set(PDFName.of('Contents'), image)
  return document.save({ useObjectStreams: false })
}

/**
 * A PDF whose pages each show one line of `text` in Helvetica, their contents deflated under `layer`. The type is
 * tiny, so that a line of 100,000 characters still fits on its page: pdf.js leaves out text beyond the page.
 */
async function textPdf(pages: string[], layer: keyof typeof layers = 'none'): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const font = await document.embedFont(StandardFonts.Helvetica)
  for (const text of pages) {
    const page = document.addPage([600, 200])
    page.node.setFontDictionary(PDFName.of('F1'), font.ref)
    const operators = new TextEncoder().encode(`BT /F1 0.005 Tf 10 100 Td (${text}) Tj ET`)
    const { data, Filter } = layers[layer](deflateSync(operators))
    page.node.set(PDFName.of('Contents'), document.context.register(document.context.stream(data, { Filter })))
  }
  return document.save({ useObjectStreams: false })
}

const bomb = await deflatedSpaces(pdfLimits.maxInflatedBytes + 1)
const encrypted = Buffer.from(await Bun.file(join(import.meta.dir, 'fixtures/encrypted.pdf')).bytes()).toString(
  'latin1',
)

/** The bytes of a PDF with its first `from` rewritten as `to`, as latin1 text. */
function respelled(pdf: string | Uint8Array, from: string, to: string): Uint8Array {
  const text = typeof pdf === 'string' ? pdf : Buffer.from(pdf).toString('latin1')
  if (!text.includes(from)) throw new Error(`no ${from} to respell`)
  return new Uint8Array(Buffer.from(text.replace(from, to), 'latin1'))
}

async function uploaded(bytes: Uint8Array, name: string): Promise<{ h: Harness; status: number; body: unknown }> {
  const h = await harness({ inspector })
  const owner = await h.user()
  const thread = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
  const form = new FormData()
  form.append('attachments[0]', new File([bytes], name))
  const reply = await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/attachments`, {
    token: owner.token,
    body: form,
  })
  return { h, status: reply.status, body: reply.body }
}

/** Uploads one file and expects the 422 a broken content rule gets, with nothing stored. */
async function expectRefused(bytes: Uint8Array, reason: { code: string; limit?: number }): Promise<void> {
  const { h, status, body } = await uploaded(bytes, 'hostile.pdf')
  await using _ = h
  expect({ status, body }).toEqual({
    status: 422,
    body: {
      message: expect.stringContaining('attachments[0]'),
      reason: { file: 'hostile.pdf', part: 'attachments[0]', ...reason },
    },
  })
  await expectNothingStored(h)
}

/** Text extraction of `bytes`, as an extract process does it; null when the file is found unreadable. */
async function extracted(bytes: Uint8Array): Promise<string | null> {
  const found = await extractText(bytes)
  return 'text' in found ? found.text : null
}

const tooLarge = { code: 'too_large', limit: pdfLimits.maxInflatedBytes }

describe.concurrent('a compressed stream counts toward the inflation limit whatever it says it is', () => {
  for (const layer of ['none', 'hex', 'ascii85'] as const) {
    const under = layer === 'none' ? '' : `, under an ${layer} layer`
    test(`422 too_large for an image that is also a page's contents${under}`, async () => {
      await expectRefused(await imageAsContents(bomb, layer), tooLarge)
    })

    test(`text extraction of such a file, stored before this check, gives no text and inflates nothing${under}`, async () => {
      expect(await extracted(await imageAsContents(bomb, layer))).toBeNull()
    })
  }

  test('text under an ASCII layer, as ReportLab writes it, is accepted and extracted', async () => {
    for (const layer of ['hex', 'ascii85'] as const) {
      const pdf = await textPdf(['Q3 up 4%', 'Outlook: steady'], layer)
      const { h, status } = await uploaded(pdf, 'report.pdf')
      await using _ = h
      expect({ layer, status }).toEqual({ layer, status: 201 })
      expect(await extracted(pdf)).toBe('Q3 up 4%\n\nOutlook: steady')
    }
  })
})

describe.concurrent('text extraction stops at the text limit', () => {
  test('a PDF of more text than models are given yields the limit and a note saying the rest was left out', async () => {
    const page = 'a'.repeat(100_000)
    const pages = Array.from({ length: pdfLimits.maxTextLength / page.length + 2 }, () => page)
    const text = await extracted(await textPdf(pages))
    const note = `\n\n[The rest of this PDF's text is left out: it is longer than ${pdfLimits.maxTextLength} characters]`
    expect(text?.endsWith(note)).toBe(true)
    expect(text?.length).toBe(pdfLimits.maxTextLength + note.length)
    expect(text?.startsWith(`${page}\n\n${page}`)).toBe(true)
  })
})

describe.concurrent('names spelled with #xx escapes mean what they spell', () => {
  for (const spelling of ['/Encr#79pt', '/#45#6e#63#72#79#70#74']) {
    test(`422 password_protected for an encrypted PDF whose trailer says ${spelling}`, async () => {
      await expectRefused(respelled(encrypted, '/Encrypt', spelling), { code: 'password_protected' })
    })
  }

  for (const filter of ['/LZW#44ecode', '/LZW', '/R#4c']) {
    test(`422 unsupported_type for a stream whose Filter is ${filter}`, async () => {
      const pdf = await textPdf(['hello'])
      await expectRefused(respelled(pdf, '/Filter /FlateDecode', `/Filter ${filter}`), { code: 'unsupported_type' })
    })
  }
})

describe.concurrent('what reading a PDF would cost is counted at upload', () => {
  test('422 too_complex for a page that draws a form ten times, six levels deep (a million forms in 2 KB)', async () => {
    await expectRefused(nestedForms(), { code: 'too_complex', limit: pdfLimits.maxFormInvocations })
  })

  test('422 too_complex for 100 pages that all run one stream of 300,000 path operators', async () => {
    await expectRefused(operatorFlood(), { code: 'too_complex', limit: pdfLimits.maxOperators })
  })

  test('forms a thousand times and operators in millions are still accepted', async () => {
    for (const bytes of [nestedForms({ depth: 3 }), operatorFlood({ pages: 10 })]) {
      const { h, status } = await uploaded(bytes, 'drawing.pdf')
      await using _ = h
      expect(status).toBe(201)
    }
  })
})
