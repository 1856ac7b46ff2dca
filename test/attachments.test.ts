// The upload route and what messages make of uploads, in-process: accepted kinds and limits, hostile and malformed
// files and bodies, quotas, who may upload, attachments in messages, the web form's checked files and the start-up
// sweep. The inspect processes themselves (priority, crashes, time limits) are tested in inspect-processes.test.ts.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import { imageLimits, maxRequestBytes, pdfLimits, textLimits } from '../src/attachments/limits'
import { checkFormFiles, discardCheckedFiles, refusalInWords } from '../src/attachments/service'
import { sweepUploads } from '../src/attachments/sweep'
import type { AppError } from '../src/shared/errors'
import { createLogger } from '../src/shared/log'
import { LocalBlobStore } from '../src/storage/blobs'
import {
  type Harness,
  harness,
  publicUrl,
  ScriptedRunner,
  sharedInspector,
  type TestUser,
  until,
} from './support/helpers'
import {
  animated,
  encryptedPdf,
  expectNothingStored,
  form,
  jpeg,
  listening,
  paddedTo,
  pdf,
  pdfBomb,
  png,
  pngDeclaring,
  routeFinished,
  storedFiles,
  type Upload,
  upload,
  uploadChunked,
  setup as uploadSetup,
  zip,
} from './support/uploads'

/** The bytes the app's blob store keeps under `key` (its uploads folder, or on PostgreSQL runs a bucket). */
async function storedBytes(h: Harness, key: string): Promise<Uint8Array> {
  const blob = await h.blobs.get(key)
  if (!blob) throw new Error(`nothing is stored under ${key}`)
  return blob.bytes()
}

// Image work runs in inspect processes beside the other tests' uploads, so on a busy machine it waits its turn with
// every other process: several seconds are no failure here.

// One pool of inspect processes checks every upload here. Each test has its own app, database and uploads folder
// and shares nothing else, so the tests run concurrently: most of their time is spent waiting for an inspection.
const inspector = sharedInspector()
const setup = (options: Parameters<typeof harness>[0] = {}) => uploadSetup({ inspector, ...options })

describe.concurrent('upload', () => {
  test('stores every accepted kind, by ID, and answers with the sanitised names in part order', async () => {
    await using s = await setup()
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form(
        { name: 'photo.jpg', bytes: await jpeg(), type: 'image/jpeg' },
        { name: 'diagram.png', bytes: await png() },
        { name: 'report.pdf', bytes: await pdf(1), type: 'application/pdf' },
        { name: 'notes.md', bytes: '# Notes\n\nÜnïcödé is fine.\n', type: 'text/markdown' },
        { name: 'table.csv', bytes: 'a,b\n1,2\n', type: 'text/csv' },
      ),
    )
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual([
      { id: expect.any(String), filename: 'photo.jpg' },
      { id: expect.any(String), filename: 'diagram.png' },
      { id: expect.any(String), filename: 'report.pdf' },
      { id: expect.any(String), filename: 'notes.md' },
      { id: expect.any(String), filename: 'table.csv' },
    ])
    const ids = reply.body.map((attachment: { id: string }) => attachment.id)
    const rows = await s.h.orm.select().from(s.h.tables.attachments)
    expect(
      rows.map(({ id, kind, mediaType, threadId, resized }) => ({ id, kind, mediaType, threadId, resized })),
    ).toEqual([
      { id: ids[0], kind: 'image', mediaType: 'image/jpeg', threadId: s.threadId, resized: false },
      { id: ids[1], kind: 'image', mediaType: 'image/png', threadId: s.threadId, resized: false },
      { id: ids[2], kind: 'pdf', mediaType: 'application/pdf', threadId: s.threadId, resized: false },
      { id: ids[3], kind: 'text', mediaType: 'text/markdown', threadId: s.threadId, resized: false },
      { id: ids[4], kind: 'text', mediaType: 'text/csv', threadId: s.threadId, resized: false },
    ])
    expect(await storedFiles(s.h)).toEqual([...ids].sort())
    expect(new TextDecoder().decode(await storedBytes(s.h, ids[4]))).toBe('a,b\n1,2\n')
  })

  test('uploading sends no message and leaves the thread ready', async () => {
    await using s = await setup()
    expect((await upload(s.h, s.owner.token, s.threadId, form({ name: 'a.txt', bytes: 'hi' }))).status).toBe(201)
    const messages = await s.h.call('GET', `/api/v1/threads/${s.threadId}/messages`, { token: s.owner.token })
    expect(messages.body.data).toEqual([])
    const thread = await s.h.call('GET', `/api/v1/threads/${s.threadId}`, { token: s.owner.token })
    expect(thread.body.state).toBe('ready')
  })

  test('accepts animated GIF and WebP, and at the limits: 100 pages, 0.5 MiB of text, five files', async () => {
    await using s = await setup()
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form(
        { name: 'wave.gif', bytes: await animated('gif') },
        { name: 'spin.webp', bytes: await animated('webp') },
        { name: 'book.pdf', bytes: await pdf(pdfLimits.maxPages) },
        { name: 'long.txt', bytes: 'a'.repeat(textLimits.maxBytes) },
        { name: 'no-extension', bytes: 'plain words' },
      ),
    )
    expect(reply.status).toBe(201)
    const types = await s.h.orm.select({ mediaType: s.h.tables.attachments.mediaType }).from(s.h.tables.attachments)
    expect(types.map((row) => row.mediaType)).toEqual([
      'image/gif',
      'image/webp',
      'application/pdf',
      'text/plain',
      'text/plain',
    ])
  })

  test('a large image keeps its original and gains a copy scaled to fit the model bound', async () => {
    await using s = await setup()
    const original = await jpeg(3000, 1000)
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'wide.jpg', bytes: original }))
    expect(reply.status).toBe(201)
    const id = reply.body[0].id
    expect(await storedFiles(s.h)).toEqual([id, `${id}.resized`])
    expect(Buffer.from(await storedBytes(s.h, id)).equals(original)).toBe(true)
    const copy = await sharp(await storedBytes(s.h, `${id}.resized`)).metadata()
    expect({ format: copy.format, width: copy.width, height: copy.height }).toEqual({
      format: 'jpeg',
      width: imageLimits.modelLongestSide,
      height: 523,
    })
    expect((await s.h.orm.select({ resized: s.h.tables.attachments.resized }).from(s.h.tables.attachments))[0]).toEqual(
      {
        resized: true,
      },
    )
  })

  test('a large image whose scaled copy would be bigger than itself keeps no copy: models get the original', async () => {
    await using s = await setup()
    // Noise in a 16-colour palette: re-encoded after scaling, the palette is lost and the file grows.
    const side = 2000
    const noise = new Uint8Array(side * side * 3).map((_, index) => ((index * 2654435761) >>> 30) * 64)
    const noisy = await sharp(noise, { raw: { width: side, height: side, channels: 3 } })
      .png({ palette: true, colors: 16 })
      .toBuffer()
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'noise.png', bytes: noisy }))
    expect(reply.status).toBe(201)
    expect(await storedFiles(s.h)).toEqual([reply.body[0].id])
    expect((await s.h.orm.select({ resized: s.h.tables.attachments.resized }).from(s.h.tables.attachments))[0]).toEqual(
      {
        resized: false,
      },
    )
  })

  test('image streams count toward the PDF inflation limit: what claims to be an image can be drawn as contents', async () => {
    await using s = await setup()
    const deck = await pdfBomb(pdfLimits.maxInflatedBytes + 1, { image: true })
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'deck.pdf', bytes: deck }))
    expect(reply.status).toBe(422)
    expect(reply.body.reason).toEqual({
      file: 'deck.pdf',
      part: 'attachments[0]',
      code: 'too_large',
      limit: pdfLimits.maxInflatedBytes,
    })
  })

  test('a part sent with an empty filename is stored under a plain display name', async () => {
    await using s = await setup()
    const boundary = 'empty-name'
    const body = new Blob([
      `--${boundary}\r\nContent-Disposition: form-data; name="attachments[0]"; filename=""\r\n\r\n`,
      'some notes',
      `\r\n--${boundary}--\r\n`,
    ])
    const reply = await upload(s.h, s.owner.token, s.threadId, body, {
      'content-type': `multipart/form-data; boundary=${boundary}`,
    })
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual([{ id: expect.any(String), filename: 'attachment' }])
  })

  test('an animated image is scaled frame by frame', async () => {
    await using s = await setup()
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form({ name: 'big.webp', bytes: await animated('webp', 2000, 1000) }),
    )
    expect(reply.status).toBe(201)
    const copy = await sharp(await storedBytes(s.h, `${reply.body[0].id}.resized`), { animated: true }).metadata()
    expect({ width: copy.width, pageHeight: copy.pageHeight, pages: copy.pages }).toEqual({
      width: 1568,
      pageHeight: 784,
      pages: 3,
    })
  })

  test('a path in the file name is reduced to its last segment; files are named only by ID', async () => {
    await using s = await setup()
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form(
        { name: '../../etc/passwd.txt', bytes: 'root' },
        { name: '..\\..\\evil\u202Etxt.exe\u0000.md', bytes: 'x' },
        { name: '..', bytes: 'y' },
        { name: `${'n'.repeat(400)}.csv`, bytes: 'a,b' },
      ),
    )
    expect(reply.status).toBe(201)
    expect(reply.body.map((attachment: { filename: string }) => attachment.filename)).toEqual([
      'passwd.txt',
      'eviltxt.exe.md',
      'attachment',
      `${'n'.repeat(251)}.csv`,
    ])
    expect(await storedFiles(s.h)).toEqual(reply.body.map((attachment: { id: string }) => attachment.id).sort())
    expect(readdirSync(join(s.h.uploadsDir, '..')).filter((name) => name.includes('passwd'))).toEqual([])
  })
})

describe.concurrent('hostile and malformed uploads store nothing', () => {
  const rejections: [string, () => Promise<Upload>, { code: string; limit?: number }][] = [
    ['a PNG renamed .pdf', async () => ({ name: 'scan.pdf', bytes: await png() }), { code: 'type_mismatch' }],
    [
      'a PDF named .png (as a browser sends it, declared image/png)',
      async () => ({ name: 'photo.png', bytes: await pdf(1), type: 'image/png' }),
      { code: 'type_mismatch' },
    ],
    // Text to a sniffer, a scriptable image to a browser.
    ['an SVG by name', async () => ({ name: 'logo.svg', bytes: '<svg/>' }), { code: 'type_mismatch' }],
    [
      'a truncated JPEG',
      async () => {
        const whole = await jpeg(400, 300)
        return { name: 'cut.jpg', bytes: whole.subarray(0, whole.length / 2) }
      },
      { code: 'corrupt' },
    ],
    [
      // Its header reads well: only decoding the pixels finds the missing data.
      'a truncated PNG',
      async () => {
        const whole = await png(400, 300)
        return { name: 'cut.png', bytes: whole.subarray(0, whole.length / 2) }
      },
      { code: 'corrupt' },
    ],
    [
      // The header and every frame's size read well; only decoding the last frame finds its data damaged.
      'an animated WebP whose last frame is damaged',
      async () => {
        const bytes = await animated('webp')
        // A lossy frame's chunk tag, size and VP8 frame header take 18 bytes; its coded data follows.
        const data = Buffer.from(bytes).lastIndexOf('VP8 ') + 20
        for (let at = data; at < data + 8; at++) bytes[at] = (bytes[at] ?? 0) ^ 0xff
        return { name: 'wave.webp', bytes }
      },
      { code: 'corrupt' },
    ],
    [
      'a pixel bomb (a PNG header declaring 20000 × 20000)',
      async () => ({ name: 'bomb.png', bytes: await pngDeclaring(20_000, 20_000) }),
      { code: 'too_many_pixels', limit: imageLimits.maxPixels },
    ],
    [
      'an image one row of pixels over the pixel limit',
      async () => ({ name: 'big.png', bytes: await pngDeclaring(10_000, 5_001) }),
      { code: 'too_many_pixels', limit: imageLimits.maxPixels },
    ],
    [
      'a header exactly at the pixel limit, whose data is missing',
      async () => ({ name: 'big.png', bytes: await pngDeclaring(10_000, 5_000) }),
      { code: 'corrupt' },
    ],
    ['a zip', async () => ({ name: 'archive.zip', bytes: zip() }), { code: 'unsupported_type' }],
    [
      'a PDF whose 130 KB of compressed page content inflates past the limit',
      async () => ({ name: 'bomb.pdf', bytes: await pdfBomb(pdfLimits.maxInflatedBytes + 1) }),
      { code: 'too_large', limit: pdfLimits.maxInflatedBytes },
    ],
    [
      'a PDF whose bomb is deflated twice (a filter chain)',
      async () => ({ name: 'chain.pdf', bytes: await pdfBomb(pdfLimits.maxInflatedBytes + 1, { times: 2 }) }),
      { code: 'too_large', limit: pdfLimits.maxInflatedBytes },
    ],
    [
      'a PDF bomb whose data starts on the line of its stream keyword',
      async () => ({ name: 'inline.pdf', bytes: await pdfBomb(pdfLimits.maxInflatedBytes + 1, { sameLine: true }) }),
      { code: 'too_large', limit: pdfLimits.maxInflatedBytes },
    ],
    [
      'a PDF with LZW-compressed data, which cannot be bounded without decoding it',
      async () => {
        const saved = Buffer.from(await pdf(1)).toString('latin1')
        return { name: 'lzw.pdf', bytes: saved.replace('/Filter /FlateDecode', '/Filter /LZWDecode') }
      },
      { code: 'unsupported_type' },
    ],
    [
      'a PDF whose page tree contains itself',
      async () => ({
        name: 'loop.pdf',
        bytes:
          '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n' +
          '2 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
      }),
      { code: 'corrupt' },
    ],
    ['an empty file', async () => ({ name: 'empty.txt', bytes: '' }), { code: 'empty' }],
    [
      'an image one byte over 3 MiB',
      async () => ({ name: 'huge.png', bytes: paddedTo(await png(), imageLimits.maxBytes + 1) }),
      { code: 'too_large', limit: imageLimits.maxBytes },
    ],
    [
      'a PDF one byte over 2.5 MiB',
      async () => ({ name: 'huge.pdf', bytes: paddedTo(await pdf(1), pdfLimits.maxBytes + 1) }),
      { code: 'too_large', limit: pdfLimits.maxBytes },
    ],
    [
      'a text file one byte over 0.5 MiB',
      async () => ({ name: 'huge.txt', bytes: 'a'.repeat(textLimits.maxBytes + 1) }),
      { code: 'too_large', limit: textLimits.maxBytes },
    ],
    [
      'a PDF of 101 pages',
      async () => ({ name: 'long.pdf', bytes: await pdf(pdfLimits.maxPages + 1) }),
      { code: 'too_many_pages', limit: pdfLimits.maxPages },
    ],
    [
      'a password-protected PDF',
      async () => ({ name: 'locked.pdf', bytes: encryptedPdf }),
      { code: 'password_protected' },
    ],
    [
      'a truncated PDF',
      async () => {
        const whole = await pdf(3)
        return { name: 'cut.pdf', bytes: whole.subarray(0, whole.length - 200) }
      },
      { code: 'corrupt' },
    ],
    [
      'a text file that is not UTF-8',
      async () => ({ name: 'latin1.txt', bytes: new Uint8Array([0x63, 0x61, 0x66, 0xe9]) }),
      { code: 'invalid_text' },
    ],
    [
      'a large file of no recognised type, refused for its type rather than its size',
      async () => ({ name: 'blob.bin', bytes: new Uint8Array(textLimits.maxBytes + 1).fill(0xff) }),
      { code: 'unsupported_type' },
    ],
    ['a text file with a NUL byte', async () => ({ name: 'nul.txt', bytes: 'a\u0000b' }), { code: 'invalid_text' }],
  ]

  for (const [what, make, reason] of rejections) {
    test(`422 for ${what}, even beside a good file`, async () => {
      await using s = await setup()
      const bad = await make()
      const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'fine.txt', bytes: 'ok' }, bad))
      expect(reply.status).toBe(422)
      expect(reply.body).toEqual({
        message: expect.stringContaining('attachments[1]'),
        reason: { file: bad.name, part: 'attachments[1]', ...reason },
      })
      await expectNothingStored(s.h)
    })
  }

  test('a refusal in two voices: precise for the API, plain words for the person (the composer, MCP)', async () => {
    await using s = await setup()
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'fake.png', bytes: 'just some words' }))
    expect(reply.body).toEqual({
      message: 'attachments[0] (fake.png) is named or declared as image/png, but its bytes are text',
      reason: { file: 'fake.png', part: 'attachments[0]', code: 'type_mismatch' },
    })
    const said = async (name: string, bytes: Uint8Array | string, type = ''): Promise<string> => {
      try {
        await checkFormFiles({ inspector, uploadsDir: s.h.uploadsDir }, [new File([bytes], name, { type })])
      } catch (error) {
        return refusalInWords(error as AppError)
      }
      throw new Error(`${name} was accepted`)
    }
    expect(await said('fake.png', 'just some words')).toBe("fake.png isn't a PNG image: its contents are text.")
    expect(await said('scan.pdf', await png())).toBe("scan.pdf isn't a PDF: its contents are a PNG image.")
    expect(await said('notes.txt', new Uint8Array([0x61, 0, 0x62]))).toBe(
      "notes.txt isn't a text file: its contents aren't plain text.",
    )
    expect(await said('logo.svg', '<svg/>')).toBe(
      "logo.svg is an SVG image, which can't be attached: only JPEG, PNG, GIF or WebP images can.",
    )
    expect(await said('archive.zip', zip())).toBe(
      "archive.zip can't be attached: only JPEG, PNG, GIF or WebP images, PDFs, and text, Markdown or CSV files can.",
    )
    expect(await said('huge.txt', 'a'.repeat(textLimits.maxBytes + 1))).toBe(
      'huge.txt is 513 KB; text files may be up to 512 KB.',
    )
    expect(await said('big.png', await pngDeclaring(10_000, 5_001))).toBe(
      'big.png has too many pixels: an image may have up to 50 million, all frames together.',
    )
    await expectNothingStored(s.h)
  })

  test('422 for a part whose declared type contradicts its bytes, under a name with no extension', async () => {
    await using s = await setup()
    // Bun 1.4 reads a part's Content-Type only when it comes before Content-Disposition (oven-sh/bun#33012);
    // in the usual order it guesses the type from the name instead. These bodies put the declaration first.
    const boundary = 'declared-type'
    const declared = [
      ['image/png', await pdf(1)],
      // Any declared image type is an image claim, even one not accepted: SVG text is refused.
      ['image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"/>'],
    ] as const
    for (const [type, bytes] of declared) {
      const body = new Blob([
        `--${boundary}\r\nContent-Type: ${type}\r\n`,
        'Content-Disposition: form-data; name="attachments[0]"; filename="scan"\r\n\r\n',
        bytes,
        `\r\n--${boundary}--\r\n`,
      ])
      const reply = await upload(s.h, s.owner.token, s.threadId, body, {
        'content-type': `multipart/form-data; boundary=${boundary}`,
      })
      expect(reply.status).toBe(422)
      expect(reply.body.reason).toEqual({ file: 'scan', part: 'attachments[0]', code: 'type_mismatch' })
    }
    await expectNothingStored(s.h)
  })

  const malformed: [string, () => FormData | string, Record<string, string>?][] = [
    ['six files', () => form(...Array.from({ length: 6 }, (_, n) => ({ name: `${n}.txt`, bytes: 'x' })))],
    ['a part named "file"', () => form({ name: 'a.txt', bytes: 'x', part: 'file' })],
    ['attachments[1] without attachments[0]', () => form({ name: 'a.txt', bytes: 'x', part: 'attachments[1]' })],
    [
      'attachments[0] twice',
      () => form({ name: 'a.txt', bytes: 'x' }, { name: 'b.txt', bytes: 'y', part: 'attachments[0]' }),
    ],
    [
      'a gap in the numbering',
      () => form({ name: 'a.txt', bytes: 'x' }, { name: 'b.txt', bytes: 'y', part: 'attachments[2]' }),
    ],
    [
      'a text field instead of a file',
      () => {
        const body = new FormData()
        body.append('attachments[0]', 'just a string')
        return body
      },
    ],
    ['no parts at all', () => new FormData()],
    ['a JSON body', () => JSON.stringify({ attachments: [] }), { 'content-type': 'application/json' }],
    [
      'a broken multipart body',
      () => '--nope\r\nContent-Disposition: form-data; name="attachments[0]"\r\n\r\nunterminated',
      { 'content-type': 'multipart/form-data; boundary=other' },
    ],
  ]

  for (const [what, body, headers] of malformed) {
    test(`400 {message} for ${what}`, async () => {
      await using s = await setup()
      const reply = await upload(s.h, s.owner.token, s.threadId, body(), headers)
      expect(reply.status).toBe(400)
      expect(reply.body).toEqual({ message: expect.any(String) })
      await expectNothingStored(s.h)
    })
  }

  test('400 {message} for a thread ID that is not a UUID', async () => {
    await using s = await setup()
    const reply = await upload(s.h, s.owner.token, 'not-a-uuid', form({ name: 'a.txt', bytes: 'x' }))
    expect(reply).toMatchObject({ status: 400, body: { message: expect.any(String) } })
    expect(reply.body.error).toBeUndefined()
  })

  test('413 {message} for a declared length beyond any valid upload, before the body is read', async () => {
    await using s = await setup()
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }), {
      'content-length': String(maxRequestBytes + 1),
    })
    expect(reply).toEqual({ status: 413, headers: expect.anything(), body: { message: expect.any(String) } })
    await expectNothingStored(s.h)
  })

  test('with no length declared, a longer body is refused once read, with the same 413 {message}', async () => {
    await using s = await setup()
    await using server = listening(s.h)
    // A stream has no Content-Length; Bun's maxRequestBodySize, well above the limit, bounds how far it is read.
    const big = form({ name: 'big.txt', bytes: new Uint8Array(maxRequestBytes).fill(0x61) })
    const response = await uploadChunked(server.url, s.owner.token, s.threadId, big)
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({ message: expect.any(String) })
    await expectNothingStored(s.h)
  })

  test("a chunked body past the server's own bound is cut off with 413, and logged as no fault", async () => {
    const lines: string[] = []
    await using s = await setup({ log: createLogger('debug', (line) => lines.push(line)) })
    await using server = listening(s.h)
    // Bun stops reading at maxRequestBodySize (four times the upload limit) and answers 413 itself.
    const huge = form({ name: 'huge.txt', bytes: new Uint8Array(4 * maxRequestBytes + 1) })
    const response = await uploadChunked(server.url, s.owner.token, s.threadId, huge)
    expect(response.status).toBe(413)
    // Bun answered before the route finished.
    await routeFinished(lines)
    await expectNothingStored(s.h)
    expect(lines.join('')).not.toContain('"level":"error"')
  })

  test('a client that goes away mid-body leaves no file behind, and the next upload is served', async () => {
    const lines: string[] = []
    await using s = await setup({ log: createLogger('debug', (line) => lines.push(line)) })
    await using server = listening(s.h)
    const socket = await Bun.connect({ hostname: '127.0.0.1', port: server.port, socket: { data() {} } })
    const head = [
      `POST /api/v1/threads/${s.threadId}/attachments HTTP/1.1`,
      'host: 127.0.0.1',
      `authorization: Bearer ${s.owner.token}`,
      'content-type: multipart/form-data; boundary=cut',
      'content-length: 1000000',
    ]
    socket.write(`${head.join('\r\n')}\r\n\r\n--cut\r\ncontent-disposition: form-data; name="attachments[0]"`)
    socket.write(`; filename="a.txt"\r\n\r\n${'a'.repeat(100_000)}`)
    // The body is being received into a temporary file; the client then leaves with most of it unsent.
    await until(async () => (await storedFiles(s.h)).some((name) => name.endsWith('.tmp')))
    socket.end()
    await routeFinished(lines)
    await expectNothingStored(s.h)
    // The client's doing, not a server fault: nothing reaches the error log.
    expect(lines.join('')).not.toContain('"level":"error"')
    const next = await upload(s.h, s.owner.token, s.threadId, form({ name: 'b.txt', bytes: 'b' }))
    expect(next.status).toBe(201)
  })

  test("a body the server cannot store for checking is a logged 500 {error, message}, not the client's fault", async () => {
    // The uploads folder's path names a regular file, so nothing can be created in it: a disk that fails.
    const parent = mkdtempSync(join(tmpdir(), 'threadhouse-blocked-'))
    await using _ = { [Symbol.asyncDispose]: () => rm(parent, { recursive: true, force: true }) }
    const uploadsDir = join(parent, 'file')
    writeFileSync(uploadsDir, 'not a folder')
    const lines: string[] = []
    await using h = await harness({ uploadsDir, log: createLogger('info', (line) => lines.push(line)) })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
    const reply = await upload(h, owner.token, created.body.thread_id, form({ name: 'a.txt', bytes: 'a' }))
    expect(reply).toMatchObject({ status: 500, body: { error: 'internal_error', message: expect.any(String) } })
    expect(lines.join('')).toContain('ENOTDIR')
    expect(await h.orm.select().from(h.tables.attachments)).toEqual([])
  })

  test('the 26th file of a thread is refused with 400, whether alone or in a batch', async () => {
    await using s = await setup()
    for (let batch = 0; batch < 5; batch += 1) {
      const files = Array.from({ length: 5 }, (_, n) => ({ name: `${batch}-${n}.txt`, bytes: 'x' }))
      expect((await upload(s.h, s.owner.token, s.threadId, form(...files))).status).toBe(201)
    }
    const before = await storedFiles(s.h)
    expect(before).toHaveLength(25)
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'one-more.txt', bytes: 'x' }))
    expect(reply).toMatchObject({ status: 400, body: { message: expect.stringContaining('25') } })
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toHaveLength(25)
    expect(await storedFiles(s.h)).toEqual(before)
  })

  test('of two concurrent batches that each fit but not together, one is stored and the other leaves nothing', async () => {
    await using s = await setup()
    for (let batch = 0; batch < 4; batch += 1) {
      const files = Array.from({ length: 5 }, (_, n) => ({ name: `${batch}-${n}.txt`, bytes: 'x' }))
      await upload(s.h, s.owner.token, s.threadId, form(...files))
    }
    const batch = (tag: string) =>
      form(...Array.from({ length: 5 }, (_, n) => ({ name: `${tag}-${n}.txt`, bytes: 'x' })))
    const replies = await Promise.all([
      upload(s.h, s.owner.token, s.threadId, batch('a')),
      upload(s.h, s.owner.token, s.threadId, batch('b')),
    ])
    expect(replies.map((reply) => reply.status).sort()).toEqual([201, 400])
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toHaveLength(25)
    expect(await storedFiles(s.h)).toHaveLength(25)
  })

  test('a batch that would cross the thread quota is refused whole', async () => {
    await using s = await setup()
    for (let batch = 0; batch < 4; batch += 1) {
      const files = Array.from({ length: 5 }, (_, n) => ({ name: `${batch}-${n}.txt`, bytes: 'x' }))
      await upload(s.h, s.owner.token, s.threadId, form(...files))
    }
    const files = Array.from({ length: 5 }, (_, n) => ({ name: `${n}.txt`, bytes: 'x' }))
    await upload(s.h, s.owner.token, s.threadId, form(...files.slice(0, 2)))
    const reply = await upload(s.h, s.owner.token, s.threadId, form(...files))
    expect(reply.status).toBe(400)
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toHaveLength(22)
    expect(await storedFiles(s.h)).toHaveLength(22)
  })
})

describe.concurrent('who may upload', () => {
  test('403 {error, message} for a member who can see the thread but does not own it', async () => {
    await using s = await setup()
    const colleague = await s.h.user()
    const reply = await upload(s.h, colleague.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }))
    expect(reply.status).toBe(403)
    expect(reply.body).toEqual({ error: 'forbidden', message: expect.any(String) })
    await expectNothingStored(s.h)
  })

  test('404 {error, message} when the caller cannot see the thread', async () => {
    await using s = await setup()
    const stranger = await s.h.user({ org: 'elsewhere' })
    const reply = await upload(s.h, stranger.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }))
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual({ error: 'not_found', message: expect.any(String) })
    const unknown = await upload(s.h, s.owner.token, Bun.randomUUIDv7(), form({ name: 'a.txt', bytes: 'x' }))
    expect(unknown.status).toBe(404)
    await expectNothingStored(s.h)
  })

  test('the threads:write scope is required, and a token is', async () => {
    await using s = await setup()
    const reader = await s.h.user({ scopes: ['threads:read'] })
    const reply = await upload(s.h, reader.token, s.threadId, form({ name: 'a.txt', bytes: 'x' }))
    expect(reply.status).toBe(403)
    expect(reply.body).toEqual({
      error: 'insufficient_scope',
      message: expect.any(String),
      required_scope: 'threads:write',
    })
    const anonymous = await s.h.app.handle(
      new Request(`${publicUrl}/api/v1/threads/${s.threadId}/attachments`, {
        method: 'POST',
        body: form({ name: 'a.txt', bytes: 'x' }),
      }),
    )
    expect(anonymous.status).toBe(401)
    await expectNothingStored(s.h)
  })
})

describe.concurrent('messages that reference attachments', () => {
  async function uploaded(s: { h: Harness; owner: TestUser; threadId: string }, ...files: Upload[]) {
    const reply = await upload(s.h, s.owner.token, s.threadId, form(...files))
    expect(reply.status).toBe(201)
    return reply.body.map((attachment: { id: string }) => attachment.id) as string[]
  }

  function send(s: { h: Harness; owner: TestUser; threadId: string }, body: unknown) {
    return s.h.call('POST', `/api/v1/threads/${s.threadId}/messages`, { token: s.owner.token, body })
  }

  async function messagesOf(s: { h: Harness; owner: TestUser; threadId: string }) {
    await s.h.app.decorator.engine.idle()
    return (await s.h.call('GET', `/api/v1/threads/${s.threadId}/messages`, { token: s.owner.token })).body.data
  }

  test('the text block comes first, then one block per ID in the order given, from several uploads', async () => {
    await using s = await setup()
    const [report, photo] = await uploaded(
      s,
      { name: 'report.pdf', bytes: await pdf(2) },
      { name: 'photo.png', bytes: await png() },
    )
    const [notes] = await uploaded(s, { name: 'notes.md', bytes: '# Notes' })
    const sent = await send(s, { text: 'Look at these', attachment_ids: [notes, photo, report] })
    expect(sent.status).toBe(201)
    const [user] = await messagesOf(s)
    expect(user.contents).toEqual([
      { type: 'text', text: 'Look at these' },
      { type: 'document', attachment_id: notes },
      { type: 'image', attachment_id: photo },
      { type: 'document', attachment_id: report },
    ])
  })

  test('a file may be attached to several messages', async () => {
    await using s = await setup()
    const [photo] = await uploaded(s, { name: 'photo.png', bytes: await png() })
    expect((await send(s, { text: 'first', attachment_ids: [photo] })).status).toBe(201)
    await s.h.app.decorator.engine.idle()
    expect((await send(s, { text: 'again', attachment_ids: [photo] })).status).toBe(201)
    const users = (await messagesOf(s)).filter((message: { role: string }) => message.role === 'user')
    expect(users.map((message: { contents: unknown[] }) => message.contents[1])).toEqual([
      { type: 'image', attachment_id: photo },
      { type: 'image', attachment_id: photo },
    ])
  })

  test('a sent message queues its files for search; a file already queued or read keeps its row', async () => {
    await using s = await setup()
    const [notes, photo, unsent] = (await uploaded(
      s,
      { name: 'notes.md', bytes: '# Notes' },
      { name: 'photo.png', bytes: await png() },
      { name: 'unsent.txt', bytes: 'never attached' },
    )) as [string, string, string]
    const { attachmentTexts } = s.h.tables
    const queue = async () =>
      Object.fromEntries(
        (
          await s.h.orm.select({ id: attachmentTexts.attachmentId, state: attachmentTexts.state }).from(attachmentTexts)
        ).map((row) => [row.id, row.state]),
      )
    // Uploading alone queues nothing: a file is searched once a message attaches it.
    expect(await queue()).toEqual({})
    expect((await send(s, { text: 'see', attachment_ids: [notes, photo] })).status).toBe(201)
    expect(await queue()).toEqual({ [notes]: 'pending', [photo]: 'pending' })
    // The file indexer (a later step) reads one; attaching it again neither queues it again nor loses its text.
    await s.h.orm
      .update(attachmentTexts)
      .set({ state: 'indexed', words: 'notes' })
      .where(eq(attachmentTexts.attachmentId, notes))
    await s.h.app.decorator.engine.idle()
    expect((await send(s, { text: 'again', attachment_ids: [notes] })).status).toBe(201)
    expect(await queue()).toEqual({ [notes]: 'indexed', [photo]: 'pending' })
    expect(Object.keys(await queue())).not.toContain(unsent)
    // The rows go with their files when the thread is deleted.
    expect((await s.h.call('DELETE', `/api/v1/threads/${s.threadId}`, { token: s.owner.token })).status).toBe(204)
    expect(await queue()).toEqual({})
  })

  test('400 naming the ID for an unknown ID, another thread’s file, or an ID listed twice; nothing is sent', async () => {
    await using s = await setup()
    const [mine] = await uploaded(s, { name: 'mine.txt', bytes: 'mine' })
    const other = await s.h.call('POST', '/api/v1/threads', { token: s.owner.token, body: {} })
    const [elsewhere] = (
      await upload(s.h, s.owner.token, other.body.thread_id, form({ name: 'elsewhere.txt', bytes: 'x' }))
    ).body.map((attachment: { id: string }) => attachment.id)
    const unknown = Bun.randomUUIDv7()
    for (const [ids, named] of [
      [[mine, unknown], unknown],
      [[elsewhere], elsewhere],
      [[mine, mine], mine],
    ] as const) {
      const reply = await send(s, { text: 'hi', attachment_ids: ids })
      expect(reply.status).toBe(400)
      expect(reply.body).toEqual({ error: 'invalid_request', message: expect.stringContaining(named) })
    }
    expect(await messagesOf(s)).toEqual([])
    const thread = await s.h.call('GET', `/api/v1/threads/${s.threadId}`, { token: s.owner.token })
    expect(thread.body.state).toBe('ready')
  })

  test('at most 25 attachments per message', async () => {
    await using s = await setup()
    const ids = Array.from({ length: 26 }, () => Bun.randomUUIDv7())
    const reply = await send(s, { text: 'too many', attachment_ids: ids })
    expect(reply).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
  })

  test('the echo responder names each attached file and its type', async () => {
    await using s = await setup()
    const ids = await uploaded(
      s,
      { name: 'photo.png', bytes: await png() },
      { name: 'report.pdf', bytes: await pdf(1) },
      { name: 'table.csv', bytes: 'a,b' },
    )
    await send(s, { text: 'What is in these?', attachment_ids: ids })
    const [, answer] = await messagesOf(s)
    expect(answer.contents).toEqual([
      {
        type: 'text',
        text:
          'You said, in turn 1:\n\n> What is in these?\n\n' +
          'Attached: photo.png (image/png), report.pdf (application/pdf), table.csv (text/csv).',
      },
    ])
  })

  test('a generator gets each file’s name, type and a key to read: the scaled copy of a large image', async () => {
    const runner = new ScriptedRunner()
    await using s = await setup({ runner })
    const [large, small, notes] = (await uploaded(
      s,
      { name: 'large.jpg', bytes: await jpeg(2000, 1600) },
      { name: 'small.png', bytes: await png() },
      { name: 'notes.md', bytes: '# Notes' },
    )) as [string, string, string]
    const sent = await send(s, { text: 'see', attachment_ids: [notes, large, small] })
    await runner.started(sent.body.message_id)
    const history = runner.jobs.get(sent.body.message_id)?.history ?? []
    expect(history.map((message) => message.attachments)).toEqual([
      {
        [notes]: { filename: 'notes.md', mediaType: 'text/markdown', key: notes },
        [large]: { filename: 'large.jpg', mediaType: 'image/jpeg', key: `${large}.resized` },
        [small]: { filename: 'small.png', mediaType: 'image/png', key: small },
      },
    ])
    const read = await s.h.blobs.get(history[0]?.attachments?.[large]?.key ?? '')
    const scaled = await sharp(await read?.bytes()).metadata()
    expect([scaled.width, scaled.height]).toEqual([1568, 1254])
  })
})

describe.concurrent('GET /api/v1/limits', () => {
  test('lists the upload limits for any valid token, and only for one', async () => {
    await using h = await harness()
    const user = await h.user({ scopes: ['threads:read:own'] })
    const reply = await h.call('GET', '/api/v1/limits', { token: user.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      files_per_request: 5,
      files_per_thread: 25,
      attachments_per_message: 25,
      request_max_bytes: 15 * 1024 * 1024 + 64 * 1024,
      filename_max_length: 255,
      image: {
        media_types: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'],
        max_bytes: 3 * 1024 * 1024,
        max_pixels: 50_000_000,
        model_longest_side: 1568,
      },
      pdf: {
        media_types: ['application/pdf'],
        max_bytes: 2.5 * 1024 * 1024,
        max_pages: 100,
        max_inflated_bytes: 128 * 1024 * 1024,
      },
      text: { media_types: ['text/plain', 'text/markdown', 'text/csv'], max_bytes: 512 * 1024 },
    })
    expect((await h.call('GET', '/api/v1/limits')).status).toBe(401)
  })
})

describe.concurrent('web form files', () => {
  test('checked files wait under temporary names; a refused form removes them at once', async () => {
    await using s = await setup()
    const file = new File(['a note'], 'note.txt', { type: 'text/plain' })
    const checked = await checkFormFiles({ inspector, uploadsDir: s.h.uploadsDir }, [file])
    expect(checked.accepted).toHaveLength(1)
    expect(await storedFiles(s.h)).toHaveLength(1)
    await discardCheckedFiles(checked)
    await expectNothingStored(s.h)
  })

  test('a refused form leaves no file behind, not even the ones handed to the inspector', async () => {
    await using s = await setup()
    const note = new File(['a note'], 'note.txt', { type: 'text/plain' })
    const fake = new File(['not an image'], 'photo.png', { type: 'image/png' })
    const refused = checkFormFiles({ inspector, uploadsDir: s.h.uploadsDir }, [note, fake])
    await expect(refused).rejects.toMatchObject({ status: 422 })
    await expectNothingStored(s.h)
  })
})

describe.concurrent('start-up sweep', () => {
  test('removes temporary and orphaned files, keeps every attachment’s files and dotfiles', async () => {
    // The local store's sweep, on either database: its uploads folder is the store too. A bucket's sweep, which
    // leaves young keys and others' objects alone, is tested in attachment-storage.test.ts.
    const uploadsDir = mkdtempSync(join(tmpdir(), 'threadhouse-sweep-'))
    await using _ = { [Symbol.asyncDispose]: () => rm(uploadsDir, { recursive: true, force: true }) }
    await using s = await setup({ uploadsDir, blobs: new LocalBlobStore(uploadsDir) })
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form({ name: 'big.jpg', bytes: await jpeg(2000, 1600) }, { name: 'notes.md', bytes: '# Notes' }),
    )
    expect(reply.status).toBe(201)
    const kept = await storedFiles(s.h)
    const orphan = crypto.randomUUID()
    for (const name of [`${orphan}`, `${orphan}.resized`, `${kept[0]}.tmp`, 'junk', '.gitkeep']) {
      await Bun.write(join(s.h.uploadsDir, name), 'x')
    }
    expect(await sweepUploads(s.h.store.attachments, s.h.blobs, s.h.uploadsDir)).toBe(4)
    expect(await storedFiles(s.h)).toEqual(['.gitkeep', ...kept].sort())
  })
})
