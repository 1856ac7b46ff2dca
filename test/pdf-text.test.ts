// The text of PDFs for models is read in extract processes, never in the worker that streams every answer: a file
// that takes minutes to read holds up no other user's answer, its own answer comes by its deadline and says which
// file could not be read (to the model, and under the answer on the page), and the file is not read again.
import { describe, expect, test } from 'bun:test'
import { storedPdfText } from '../src/attachments/pdf-text'
import { defaultPdfTextLimits, type ExtractorOptions, type PdfTextLimits } from '../src/attachments/text-extractor'
import { createWorkerRunner } from '../src/generation/runner'
import type { Logger } from '../src/shared/log'
import { ask, FakeLlm, openaiText, settingsFor, sse, stateOf } from './support/fake-llm'
import { collect, type Harness, harness, openStream, tokensOf, until } from './support/helpers'
import { nestedForms, plainText } from './support/hostile-pdf'
import { signedIn } from './support/oauth-helpers'

/** A logger that keeps its warnings, to count the readings that timed out. */
function keptLog(): Logger & { warnings: string[] } {
  const warnings: string[] = []
  return {
    warnings,
    enabled: () => true,
    debug() {},
    info() {},
    warn: (message) => void warnings.push(message),
    error() {},
  }
}

/**
 * An app whose answers come from the real worker and a fake OpenAI-compatible upstream, with PDF text read under
 * `limits`. Extract processes run at the server's priority here, and a timeout always marks the file: on a busy
 * test machine the idle class could leave them without a core (production's rule, inspector.ts).
 */
async function app(fake: FakeLlm, limits: Partial<PdfTextLimits>, log: Logger = keptLog()): Promise<Harness> {
  const pdfText: PdfTextLimits & ExtractorOptions = {
    ...defaultPdfTextLimits,
    ...limits,
    idle: false,
    minimumCpuShare: 0,
  }
  return harness({
    runner: (blobs) => createWorkerRunner(settingsFor('openai', fake), blobs, log, undefined, pdfText),
  })
}

/**
 * Stores a PDF in the thread as a file stored before the upload checks bounded drawing would be: the nested forms
 * are refused at upload now (pdf-hostile.test.ts), but files already stored are read all the same.
 */
async function storedPdf(h: Harness, threadId: string, filename: string, bytes: Uint8Array): Promise<string> {
  const id = Bun.randomUUIDv7()
  await h.blobs.put(id, bytes)
  const file = { id, kind: 'pdf' as const, mediaType: 'application/pdf', filename, sizeBytes: bytes.length }
  await h.store.attachments.insertWithinQuota(threadId, [{ ...file, resized: false, createdAt: Date.now() }], 25)
  return id
}

async function send(h: Harness, token: string, threadId: string, text: string, files: string[] = []) {
  const sent = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
    token,
    body: { text, attachment_ids: files },
  })
  expect(sent.status).toBe(201)
  return sent.body.message_id as string
}

/** Reads the answer's whole stream: its text once it has ended. */
async function answered(h: Harness, token: string, threadId: string, messageId: string): Promise<string> {
  const path = `/api/v1/threads/${threadId}/messages/${messageId}/response/stream`
  return tokensOf(await collect((await openStream(h, path, token)).events))
}

const hello = () => sse(openaiText(['Hello!']))

describe.concurrent('PDF text is read where it can be stopped', () => {
  test("one user's PDF that takes minutes to read holds up no other user's answer", async () => {
    await using fake = new FakeLlm()
    fake.reply(hello, hello)
    // Deadlines far beyond the test: the nested forms are still being read when the other answer has come.
    await using h = await app(fake, { fileTimeoutMs: 600_000, messageTimeoutMs: 600_000 })
    const attacker = await h.user()
    const other = await h.user()
    const thread = (await h.call('POST', '/api/v1/threads', { token: attacker.token, body: {} })).body.thread_id
    const nested = await storedPdf(h, thread, 'nested.pdf', nestedForms())
    await send(h, attacker.token, thread, 'Summarise this', [nested])
    await until(async () => (await stateOf(h, attacker.token, thread)) === 'active')

    const answer = await ask(h, other.token, 'hello')
    expect(tokensOf(answer.events)).toBe('Hello!')
    // The upstream has seen only the other user's question; the attacker's answer is still waiting for its file.
    expect(fake.received.map((request) => JSON.stringify(request.body).includes('hello'))).toEqual([true])
    expect(await stateOf(h, attacker.token, thread)).toBe('active')
    expect(await storedPdfText(h.blobs, nested)).toBeNull()
    // A stop ends the wait at once.
    expect((await h.call('POST', `/api/v1/threads/${thread}/stop`, { token: attacker.token })).status).toBe(202)
    await until(async () => (await stateOf(h, attacker.token, thread)) === 'ready')
  })

  test('a PDF that cannot be read in time: the answer still comes, the model and the person are told, and it is never read again', async () => {
    await using fake = new FakeLlm()
    fake.reply(hello, hello)
    const log = keptLog()
    await using h = await app(fake, { fileTimeoutMs: 3000 }, log)
    const { browser, user } = await signedIn(h)
    const thread = (await h.call('POST', '/api/v1/threads', { token: user.token, body: {} })).body.thread_id
    const nested = await storedPdf(h, thread, 'nested.pdf', nestedForms())
    const plain = await storedPdf(h, thread, 'report.pdf', plainText('Quarterly report'))

    const first = await send(h, user.token, thread, 'Summarise these', [nested, plain])
    expect(await answered(h, user.token, thread, first)).toBe('Hello!')
    const told = JSON.stringify((await fake.requests(1))[0]?.body)
    expect(told).toContain(
      '[PDF \\"nested.pdf\\" attached; its text could not be read: reading it took longer than 3 s]',
    )
    expect(told).toContain('<file name=\\"report.pdf\\">\\nQuarterly report\\n</file>')
    expect(await storedPdfText(h.blobs, nested)).toEqual({ unreadable: 'reading it took longer than 3 s' })

    // The next answer is told the same without reading the file again.
    const second = await send(h, user.token, thread, 'And now?')
    expect(await answered(h, user.token, thread, second)).toBe('Hello!')
    expect(JSON.stringify((await fake.requests(2))[1]?.body)).toContain('its text could not be read: reading it')
    expect(log.warnings).toEqual(['PDF text extraction timed out'])

    // The person reads it under the answer to the message that attached the file, and only there.
    const html = await (await browser.get(`/threads/${thread}`)).text()
    const note = 'The model could not read nested.pdf: reading it took longer than 3 s.'
    expect(html.split(note).length - 1).toBe(1)
    const answerAt = html.indexOf('message-assistant')
    expect(html.indexOf(`message-${first}`)).toBeLessThan(answerAt)
    expect(html.indexOf(note)).toBeGreaterThan(answerAt)
  })

  test('a PDF whose reading outgrows the memory bound is stopped and remembered as unreadable', async () => {
    await using fake = new FakeLlm()
    fake.reply(hello)
    // A bound below what any process starts with: the first look at the reading process stops it.
    await using h = await app(fake, { fileTimeoutMs: 600_000, memoryBytes: 1024 * 1024 })
    const user = await h.user()
    const thread = (await h.call('POST', '/api/v1/threads', { token: user.token, body: {} })).body.thread_id
    const nested = await storedPdf(h, thread, 'nested.pdf', nestedForms())
    const sent = await send(h, user.token, thread, 'Summarise this', [nested])
    expect(await answered(h, user.token, thread, sent)).toBe('Hello!')
    const reason = 'reading it needed more than 1 MiB of memory'
    expect(await storedPdfText(h.blobs, nested)).toEqual({ unreadable: reason })
    expect(JSON.stringify(fake.received[0]?.body)).toContain(`its text could not be read: ${reason}`)
  })
})
