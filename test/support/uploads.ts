// Uploads for the attachment tests: fixtures made in code (so that every byte a test sends is visible where it is
// made), multipart forms, a harness with an owner and a thread, and checks that nothing was stored.
import { expect } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { deflateSync } from 'node:zlib'
import { PDFDocument, PDFName } from 'pdf-lib'
import sharp, { type Sharp } from 'sharp'
import { type Harness, harness, type TestUser, until } from './helpers'

export { listening } from './helpers'

function solid(width: number, height: number, background = '#3a7'): Sharp {
  return sharp({ create: { width, height, channels: 3, background } })
}

export async function png(width = 64, height = 48): Promise<Uint8Array> {
  return new Uint8Array(await solid(width, height).png().toBuffer())
}

export async function jpeg(width = 64, height = 48): Promise<Uint8Array> {
  return new Uint8Array(await solid(width, height).jpeg().toBuffer())
}

/** Three differently coloured frames, so that no encoder folds them into one. */
export async function animated(format: 'gif' | 'webp', width = 40, height = 30): Promise<Uint8Array> {
  const frames = await Promise.all(
    ['#f00', '#0f0', '#00f'].map((colour) => solid(width, height, colour).png().toBuffer()),
  )
  return new Uint8Array(
    await sharp(frames, { join: { animated: true } })
      [format]()
      .toBuffer(),
  )
}

export async function pdf(pages: number): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  for (let page = 0; page < pages; page += 1)
    document.addPage([200, 200]).drawText(`page ${page + 1}`, { x: 20, y: 100 })
  return document.save()
}

/**
 * A one-page PDF whose content stream is `inflated` bytes of spaces, deflated `times` times (a filter chain), or
 * with `image`, an unused grey image of that many pixels instead; `sameLine` starts the data right after the
 * `stream` keyword, without the line break the format asks for but pdf-lib does not need.
 */
export async function pdfBomb(
  inflated: number,
  { times = 1, image = false, sameLine = false } = {},
): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const page = document.addPage([200, 200])
  let data: Uint8Array = new Uint8Array(inflated).fill(32)
  for (let round = 0; round < times; round++) data = deflateSync(data)
  const Filter = times === 1 ? 'FlateDecode' : Array.from({ length: times }, () => 'FlateDecode')
  const dict = image
    ? { Type: 'XObject', Subtype: 'Image', Width: 1, Height: inflated, ColorSpace: 'DeviceGray', BitsPerComponent: 8 }
    : {}
  const stream = document.context.register(document.context.stream(data, { ...dict, Filter }))
  if (!image) page.node.set(PDFName.of('Contents'), stream)
  const saved = await document.save({ useObjectStreams: false })
  if (!sameLine) return saved
  const raw = Buffer.from(saved).toString('latin1')
  const at = raw.indexOf('stream\n')
  return new Uint8Array(Buffer.from(`${raw.slice(0, at)}stream ${raw.slice(at + 7)}`, 'latin1'))
}

/**
 * A decompression bomb: a real 1×1 PNG whose header is rewritten to declare width × height pixels (with a
 * correct CRC), so only a decoder that trusts the header would try to allocate them.
 */
export async function pngDeclaring(width: number, height: number): Promise<Uint8Array> {
  const bytes = await png(1, 1)
  const view = new DataView(bytes.buffer, bytes.byteOffset)
  view.setUint32(16, width)
  view.setUint32(20, height)
  view.setUint32(29, Bun.hash.crc32(bytes.subarray(12, 29)))
  return bytes
}

/** A stored (uncompressed) zip holding one small text file. */
export function zip(): Uint8Array {
  const name = new TextEncoder().encode('a.txt')
  const data = new TextEncoder().encode('hello')
  const header = new DataView(new ArrayBuffer(30))
  header.setUint32(0, 0x04034b50, true)
  header.setUint16(4, 20, true)
  header.setUint32(18, data.length, true)
  header.setUint32(22, data.length, true)
  header.setUint16(26, name.length, true)
  return new Uint8Array([...new Uint8Array(header.buffer), ...name, ...data])
}

/** Uploads a form to a listening server as a stream in 64 KiB chunks, which fetch sends without a Content-Length. */
export async function uploadChunked(server: URL, token: string, threadId: string, body: FormData): Promise<Response> {
  const encoded = new Response(body)
  // Read first: Bun's Response forgets its multipart content type once the body is consumed.
  const contentType = encoded.headers.get('content-type') ?? ''
  const bytes = new Uint8Array(await encoded.arrayBuffer())
  let offset = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close()
      controller.enqueue(bytes.subarray(offset, offset + 65_536))
      offset += 65_536
    },
  })
  return fetch(new URL(`/api/v1/threads/${threadId}/attachments`, server), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
    body: stream,
  })
}

/** `bytes` followed by zeros up to `size` bytes: the size check comes before any parsing. */
export function paddedTo(bytes: Uint8Array, size: number): Uint8Array {
  const padded = new Uint8Array(size)
  padded.set(bytes)
  return padded
}

export const encryptedPdf = await Bun.file(join(import.meta.dir, '..', 'fixtures', 'encrypted.pdf')).bytes()

export type Upload = { name: string; bytes: Uint8Array | string; type?: string; part?: string }

export function form(...files: Upload[]): FormData {
  const body = new FormData()
  files.forEach(({ name, bytes, type, part }, index) => {
    body.append(part ?? `attachments[${index}]`, new File([bytes], name, { type: type ?? '' }))
  })
  return body
}

export async function setup(
  options: Parameters<typeof harness>[0] = {},
): Promise<{ h: Harness; owner: TestUser; threadId: string } & AsyncDisposable> {
  const h = await harness(options)
  const owner = await h.user()
  const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
  return { h, owner, threadId: created.body.thread_id, [Symbol.asyncDispose]: () => h[Symbol.asyncDispose]() }
}

export function upload(h: Harness, token: string, threadId: string, body: FormData | Blob | string, headers = {}) {
  return h.call('POST', `/api/v1/threads/${threadId}/attachments`, { token, body, headers })
}

/** Waits for the upload route's access-log line, which it writes once all its work, cleanup included, is done. */
export function routeFinished(lines: string[]): Promise<boolean> {
  return until(() => lines.some((line) => line.includes('"msg":"request"') && line.includes('/attachments')))
}

/**
 * Every file the app keeps: what is in its uploads folder (staging, and the attachments' files with the local store)
 * and, when its blob store is elsewhere (a bucket), every key there too.
 */
export async function storedFiles(h: Harness): Promise<string[]> {
  const names = readdirSync(h.uploadsDir)
  const { location } = h.blobs
  if (location.kind !== 'local' || location.root !== resolve(h.uploadsDir))
    for await (const key of h.blobs.keys()) names.push(key)
  return names.sort()
}

export async function expectNothingStored(h: Harness): Promise<void> {
  expect(await h.orm.select().from(h.tables.attachments)).toEqual([])
  expect(await storedFiles(h)).toEqual([])
}
