// Attached files' text for search (issue 39): read in the background once the answer to the message that attached
// a file has ended, bounded like every reading of a stored file, recorded in `attachment_texts` with its search
// tokens, and its thread's search document queued to be written again. Uploads and messages go through the API.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import {
  claimLeaseMs,
  type FileIndexerDeps,
  indexFileTexts,
  maxAttempts,
  maxFileTextChars,
  startFileIndexer,
} from '../src/attachments/file-texts'
import { storedPdfText } from '../src/attachments/pdf-text'
import { createPdfTextExtractor, defaultPdfTextLimits, type PdfTextLimits } from '../src/attachments/text-extractor'
import { createWorkerRunner } from '../src/generation/runner'
import { silentLogger } from '../src/shared/log'
import { openBlobStore } from '../src/storage/blobs'
import { documentTokens } from '../src/threads/search-text'
import { backendEnv, databaseOf } from './support/backend'
import { ask, FakeLlm, openaiText, settingsFor, sse } from './support/fake-llm'
import {
  firstRunToken,
  type Harness,
  ManualClock,
  ScriptedRunner,
  sharedInspector,
  startServer,
  type TestUser,
  until,
} from './support/helpers'
import { nestedForms } from './support/hostile-pdf'
import { animated, form, jpeg, png, setup, type Upload, upload } from './support/uploads'

const inspector = sharedInspector()

type Setup = { h: Harness; owner: TestUser; threadId: string }

/** A one-page PDF showing `text` in a standard font: what pdf.js reads back as that text. */
async function pdfSaying(text: string): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const font = await document.embedFont(StandardFonts.Helvetica)
  document.addPage([600, 200]).drawText(text, { x: 20, y: 100, size: 12, font })
  return document.save()
}

async function uploaded(s: Setup, ...files: Upload[]): Promise<string[]> {
  const reply = await upload(s.h, s.owner.token, s.threadId, form(...files))
  expect(reply.status).toBe(201)
  return reply.body.map((attachment: { id: string }) => attachment.id)
}

/** Sends a message attaching the files; answers its ID. */
async function send(s: Setup, text: string, ids: string[]): Promise<string> {
  const sent = await s.h.call('POST', `/api/v1/threads/${s.threadId}/messages`, {
    token: s.owner.token,
    body: { text, attachment_ids: ids },
  })
  expect(sent.status).toBe(201)
  return sent.body.message_id
}

/**
 * Stores a file in the thread without the upload's checks, as files stored before them were (a PDF of nested forms
 * is refused at upload now, text that is not UTF-8 always was).
 */
async function storedFile(s: Setup, kind: 'pdf' | 'text', filename: string, bytes: Uint8Array): Promise<string> {
  const id = Bun.randomUUIDv7()
  await s.h.blobs.put(id, bytes)
  const mediaType = kind === 'pdf' ? 'application/pdf' : 'text/plain'
  const file = { id, kind, mediaType, filename, sizeBytes: bytes.length, resized: false, createdAt: Date.now() }
  expect(await s.h.store.attachments.insertWithinQuota(s.threadId, [file], 25)).toEqual({ inserted: true })
  return id
}

async function textRow(h: Harness, id: string) {
  const [row] = await h.orm.select().from(h.tables.attachmentTexts).where(eq(h.tables.attachmentTexts.attachmentId, id))
  return row
}

/** Whether the thread's search document is queued to be written again. */
async function searchQueued(s: Setup): Promise<boolean> {
  const { threads, searchPending } = s.h.tables
  const [thread] = await s.h.orm.select({ seq: threads.seq }).from(threads).where(eq(threads.id, s.threadId))
  const queued = await s.h.orm
    .select()
    .from(searchPending)
    .where(eq(searchPending.threadSeq, thread?.seq ?? -1))
  return queued.length > 0
}

/** The extract processes at the server's priority, and a timeout always marks the file (see pdf-text.test.ts). */
function extractor(h: Pick<Harness, 'blobs'>, limits: Partial<PdfTextLimits> = {}) {
  const pdfText = createPdfTextExtractor(
    h.blobs,
    silentLogger,
    { ...defaultPdfTextLimits, ...limits },
    {
      idle: false,
      minimumCpuShare: 0,
    },
  )
  return Object.assign(pdfText, { [Symbol.asyncDispose]: () => pdfText.close() })
}

function deps(h: Harness, pdfText: FileIndexerDeps['pdfText'], clock = h.clock): FileIndexerDeps {
  return { attachments: h.store.attachments, blobs: h.blobs, pdfText, clock, log: silentLogger }
}

/** Runs claims until none is left to take. */
async function indexAll(d: FileIndexerDeps): Promise<void> {
  while ((await indexFileTexts(d)) > 0) {}
}

const indexed = (text: string, truncated = false) => ({
  state: 'indexed' as const,
  text,
  words: documentTokens([text]),
  truncated,
  indexedAt: expect.any(Number),
  attempts: 1,
  leaseExpiresAt: null,
})

describe.concurrent('files are read for search', () => {
  test('text, Markdown, CSV and PDF files are indexed with their words, images hold none, and the thread is queued for search', async () => {
    await using s = await setup({ inspector })
    await using pdfText = extractor(s.h)
    const ids = await uploaded(
      s,
      // A byte order mark is not text.
      { name: 'notes.txt', bytes: '\ufeffCafé notes from the weekend in Lyon' },
      { name: 'plan.md', bytes: '# Roadmap\n\n- **markdown** exporter\n- 東京 office' },
      { name: 'budget.csv', bytes: 'item,amount\nrent,1200\nsnacks,45\n' },
      { name: 'report.pdf', bytes: await pdfSaying('Quarterly revenue grew in Lyon') },
      { name: 'photo.png', bytes: await png() },
    )
    const [notes, plan, budget, report, photo] = ids as [string, string, string, string, string]
    const images = await uploaded(
      s,
      { name: 'photo.jpg', bytes: await jpeg() },
      { name: 'loop.gif', bytes: await animated('gif') },
      { name: 'loop.webp', bytes: await animated('webp') },
    )
    await send(s, 'What is in these?', [...ids, ...images])
    await s.h.app.decorator.engine.idle()
    // The answer's own write queued the thread; once written, only reading the files queues it again.
    await s.h.store.search.flush()
    expect(await searchQueued(s)).toBe(false)

    await indexAll(deps(s.h, pdfText))
    const textOf = async (id: string) => (await textRow(s.h, id))?.text ?? ''
    expect(await textRow(s.h, notes)).toEqual({
      attachmentId: notes,
      ...indexed('Café notes from the weekend in Lyon'),
    })
    expect(await textRow(s.h, plan)).toEqual({
      attachmentId: plan,
      ...indexed('# Roadmap\n\n- **markdown** exporter\n- 東京 office'),
    })
    expect(await textRow(s.h, budget)).toEqual({
      attachmentId: budget,
      ...indexed('item,amount\nrent,1200\nsnacks,45\n'),
    })
    expect(await textOf(report)).toBe('Quarterly revenue grew in Lyon')
    expect(await textRow(s.h, report)).toEqual({ attachmentId: report, ...indexed(await textOf(report)) })
    expect((await textRow(s.h, notes))?.words?.split(' ')).toEqual([
      'cafe',
      'notes',
      'from',
      'the',
      'weekend',
      'in',
      'lyon',
    ])
    for (const image of [photo, ...images]) {
      expect(await textRow(s.h, image)).toEqual({
        attachmentId: image,
        state: 'empty',
        text: null,
        words: null,
        truncated: false,
        indexedAt: expect.any(Number),
        attempts: 1,
        leaseExpiresAt: null,
      })
    }
    expect(await searchQueued(s)).toBe(true)
    // Read once: nothing is left to take.
    expect(await indexFileTexts(deps(s.h, pdfText))).toBe(0)
  })

  test('a PDF an answer has read is not read again for search: its remembered text is recorded', async () => {
    await using fake = new FakeLlm()
    fake.reply(() => sse(openaiText(['Noted.'])))
    let shared: ReturnType<typeof extractor> | undefined
    await using s = await setup({
      inspector,
      runner: (blobs) => {
        shared = extractor({ blobs: openBlobStore(blobs) })
        return createWorkerRunner(settingsFor('openai', fake), blobs, silentLogger, undefined, shared)
      },
    })
    const pdfText = shared as ReturnType<typeof extractor>
    await using _ = pdfText
    const [report] = (await uploaded(s, {
      name: 'report.pdf',
      bytes: await pdfSaying('Budget for the Lyon office'),
    })) as [string]
    await send(s, 'Summarise', [report])
    await s.h.app.decorator.engine.idle()
    expect(JSON.stringify(fake.received[0]?.body)).toContain('Budget for the Lyon office')
    // Closed, the extractor reads nothing more: what search records is what the answer's reading left.
    await pdfText.close()
    await indexAll(deps(s.h, pdfText))
    expect(await textRow(s.h, report)).toEqual({ attachmentId: report, ...indexed('Budget for the Lyon office') })
  })

  test('a long text keeps its first 100,000 characters; invalid bytes become U+FFFD; a file without words is empty', async () => {
    await using s = await setup({ inspector })
    await using pdfText = extractor(s.h)
    // Lines of numbered words, then a character written as two code units right across the bound.
    const lines = Array.from({ length: 4000 }, (_, line) => `line ${line} holds word${line} and more`).join('\n')
    const long = `${lines.slice(0, maxFileTextChars - 1)}😀 and words past the bound`
    const cjk = '我住在东京都'.repeat(20_000)
    const ids = await uploaded(
      s,
      { name: 'long.txt', bytes: long },
      { name: 'cjk.md', bytes: cjk },
      { name: 'dashes.csv', bytes: '---,---\n' },
    )
    const [longId, cjkId, dashes] = ids as [string, string, string]
    const latin1 = await storedFile(
      s,
      'text',
      'legacy.txt',
      new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6f, 0x6c, 0xe9]),
    )
    await send(s, 'Long ones', [...ids, latin1])
    await s.h.app.decorator.engine.idle()
    await indexAll(deps(s.h, pdfText))

    const kept = long.slice(0, maxFileTextChars - 1)
    expect(maxFileTextChars).toBe(100_000)
    expect(await textRow(s.h, longId)).toEqual({ attachmentId: longId, ...indexed(kept, true) })
    expect((await textRow(s.h, longId))?.words).not.toContain('past')
    expect(await textRow(s.h, cjkId)).toEqual({ attachmentId: cjkId, ...indexed(cjk.slice(0, maxFileTextChars), true) })
    expect(new Set((await textRow(s.h, cjkId))?.words?.split(' '))).toEqual(
      new Set(['我住', '住在', '在东', '东京', '京都', '都我']),
    )
    expect(await textRow(s.h, latin1)).toEqual({ attachmentId: latin1, ...indexed('caf\ufffd ol\ufffd') })
    expect(await textRow(s.h, dashes)).toMatchObject({ state: 'empty', text: null, words: null })
  })

  test('nothing is read before the answer to its message ends; the answer’s end wakes the indexer', async () => {
    const runner = new ScriptedRunner()
    await using s = await setup({ inspector, runner })
    await using pdfText = extractor(s.h)
    const [notes] = (await uploaded(s, { name: 'notes.txt', bytes: 'minutes of the meeting' })) as [string]
    const sent = await send(s, 'Summarise', [notes])
    const answer = await runner.started(sent)
    expect(await indexFileTexts(deps(s.h, pdfText))).toBe(0)
    expect(await textRow(s.h, notes)).toMatchObject({ state: 'pending', attempts: 0 })

    // An indexer running in the background, whose timer alone would not come round again within the test.
    const files = startFileIndexer(deps(s.h, pdfText), 3_600_000)
    await using _ = { [Symbol.asyncDispose]: () => files.stop() }
    s.h.app.decorator.events.on('answer.stored', () => files.wake())
    answer.token('Done.')
    answer.done()
    await until(async () => (await textRow(s.h, notes))?.state === 'indexed')
    expect(await textRow(s.h, notes)).toEqual({ attachmentId: notes, ...indexed('minutes of the meeting') })
  })

  test('a PDF being read holds up no other user’s answer, and a shutdown gives its claim back', async () => {
    await using s = await setup({ inspector })
    // A deadline far beyond the test: the nested forms are still being read when the other answer has come.
    await using pdfText = extractor(s.h, { fileTimeoutMs: 600_000, messageTimeoutMs: 600_000 })
    const nested = await storedFile(s, 'pdf', 'nested.pdf', nestedForms())
    await send(s, 'Summarise this', [nested])
    await s.h.app.decorator.engine.idle()
    const files = startFileIndexer(deps(s.h, pdfText), 3_600_000)
    await until(async () => (await textRow(s.h, nested))?.attempts === 1)

    const other = await s.h.user()
    const answer = await ask(s.h, other.token, 'hello')
    expect(answer.events.at(-1)?.event).toBe('done')
    expect(await textRow(s.h, nested)).toMatchObject({ state: 'pending', attempts: 1 })
    expect(await storedPdfText(s.h.blobs, nested)).toBeNull()

    await files.stop()
    expect(await textRow(s.h, nested)).toMatchObject({ state: 'pending', attempts: 0, leaseExpiresAt: null })
  })

  test('a PDF that cannot be read in time, or at all, is unreadable and never read again', async () => {
    await using s = await setup({ inspector })
    await using pdfText = extractor(s.h, { fileTimeoutMs: 3000 })
    const nested = await storedFile(s, 'pdf', 'nested.pdf', nestedForms())
    const damaged = await storedFile(s, 'pdf', 'damaged.pdf', new TextEncoder().encode('%PDF-1.7\nnot a PDF\n%%EOF\n'))
    await send(s, 'Summarise these', [nested, damaged])
    await s.h.app.decorator.engine.idle()
    await indexAll(deps(s.h, pdfText))

    const unreadable = { state: 'unreadable', text: null, words: null, attempts: 1, leaseExpiresAt: null }
    expect(await textRow(s.h, nested)).toMatchObject(unreadable)
    expect(await storedPdfText(s.h.blobs, nested)).toEqual({ unreadable: 'reading it took longer than 3 s' })
    expect(await textRow(s.h, damaged)).toMatchObject(unreadable)
    expect(await indexFileTexts(deps(s.h, pdfText))).toBe(0)
  })

  test('claims at once take different files; a claim whose holder stopped is taken again once its lease ends', async () => {
    const clock = new ManualClock(Date.now())
    await using s = await setup({ inspector, clock })
    await using pdfText = extractor(s.h)
    const ids = await uploaded(
      s,
      ...Array.from({ length: 5 }, (_, index) => ({ name: `part${index}.txt`, bytes: `part ${index} of the log` })),
    )
    await send(s, 'All parts', ids)
    await s.h.app.decorator.engine.idle()
    const claims = await Promise.all(
      Array.from({ length: 4 }, () => s.h.store.attachments.claimTexts(2, clock.now(), claimLeaseMs)),
    )
    const taken = claims.flatMap((claim) => claim.map(({ attachment }) => attachment.id))
    expect(taken.sort()).toEqual([...ids].sort())
    expect(claims.flat().every(({ attempts }) => attempts === 1)).toBe(true)

    // Their holder stopped: until the lease ends no one else takes them, then another indexer reads them all.
    expect(await indexFileTexts(deps(s.h, pdfText))).toBe(0)
    clock.advance(claimLeaseMs)
    await indexAll(deps(s.h, pdfText))
    for (const [index, id] of ids.entries()) {
      expect(await textRow(s.h, id)).toEqual({ attachmentId: id, ...indexed(`part ${index} of the log`), attempts: 2 })
    }
  })

  test('a file whose claims keep coming to nothing is given up after the last attempt', async () => {
    const clock = new ManualClock(Date.now())
    await using s = await setup({ inspector, clock })
    await using pdfText = extractor(s.h)
    const [notes] = (await uploaded(s, { name: 'notes.txt', bytes: 'kept notes' })) as [string]
    await send(s, 'See notes', [notes])
    await s.h.app.decorator.engine.idle()
    // Each claim's holder stops before recording anything (a crash), up to the bound.
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      expect(await s.h.store.attachments.claimTexts(4, clock.now(), claimLeaseMs)).toHaveLength(1)
      clock.advance(claimLeaseMs)
    }
    await indexAll(deps(s.h, pdfText))
    expect(await textRow(s.h, notes)).toMatchObject({ state: 'unreadable', attempts: maxAttempts + 1 })
  })
})

test('a restart finds the files left waiting and reads them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-file-texts-'))
  try {
    const env = await backendEnv({
      DATABASE_PATH: join(dir, 'db.sqlite'),
      ADMIN_EMAIL: 'owner@example.com',
      ADMIN_PASSWORD: 'a long enough password',
    })
    let threadId = ''
    let fileId = ''
    {
      // Slow answers: the server stops while the answer to the file's message is still being written.
      await using server = await startServer({ ...env, ECHO_TOKEN_DELAY_MS: '1000' })
      const headers = { authorization: `Bearer ${await firstRunToken(server)}` }
      const json = { ...headers, 'content-type': 'application/json' }
      const created = await fetch(`${server.url}/api/v1/threads`, { method: 'POST', headers: json, body: '{}' })
      threadId = ((await created.json()) as { thread_id: string }).thread_id
      const files = await fetch(`${server.url}/api/v1/threads/${threadId}/attachments`, {
        method: 'POST',
        headers,
        body: form({ name: 'notes.txt', bytes: 'agenda for the offsite' }),
      })
      fileId = ((await files.json()) as { id: string }[])[0]?.id ?? ''
      const sent = await fetch(`${server.url}/api/v1/threads/${threadId}/messages`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ text: 'Read this', attachment_ids: [fileId] }),
      })
      expect(sent.status).toBe(201)
    }
    {
      await using db = await databaseOf(env)
      const { attachmentTexts } = db.tables
      const [row] = await db.orm.select().from(attachmentTexts).where(eq(attachmentTexts.attachmentId, fileId))
      expect(row).toMatchObject({ state: 'pending', attempts: 0 })
    }
    await using _ = await startServer(env)
    await using db = await databaseOf(env)
    const { attachmentTexts } = db.tables
    const row = await until(async () => {
      const [found] = await db.orm.select().from(attachmentTexts).where(eq(attachmentTexts.attachmentId, fileId))
      return found?.state === 'indexed' && found
    })
    expect(row).toMatchObject({ text: 'agenda for the offsite', words: 'agenda for the offsite', attempts: 1 })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
