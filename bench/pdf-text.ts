// One user's PDF must not delay another user's answer: another user's plain question is answered through a fake
// OpenAI-compatible upstream, first alone (the baseline) and then while a stored PDF of nested forms (a million form
// invocations, minutes of pdf.js) is attached to an answer in another thread; that answer's own time is measured
// against the per-file deadline. Production's settings: the extract processes in the idle class, 10 s per file.
// Run with `bun bench/pdf-text.ts` (ROUNDS, default 5, questions per phase).
import { defaultPdfTextLimits } from '../src/attachments/text-extractor'
import { createWorkerRunner } from '../src/generation/runner'
import { silentLogger } from '../src/shared/log'
import { ask, FakeLlm, openaiText, settingsFor, sse } from '../test/support/fake-llm'
import { collect, harness, openStream } from '../test/support/helpers'
import { nestedForms } from '../test/support/hostile-pdf'

const rounds = Number(process.env.ROUNDS ?? 5)
const fake = new FakeLlm()
fake.reply(...Array.from({ length: 4 * rounds + 4 }, () => () => sse(openaiText(['Hello', '!']))))
const h = await harness({ runner: (blobs) => createWorkerRunner(settingsFor('openai', fake), blobs, silentLogger) })
const attacker = await h.user()
const other = await h.user()

async function timedQuestion(): Promise<number> {
  const started = performance.now()
  await ask(h, other.token, 'hello')
  return performance.now() - started
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b)
const median = (values: number[]) => sorted(values)[Math.floor(values.length / 2)] ?? 0
const ms = (value: number) => `${Math.round(value)} ms`

// Warm the worker and the fake, then the baseline.
await timedQuestion()
const baseline: number[] = []
for (let round = 0; round < rounds; round++) baseline.push(await timedQuestion())

const thread = (await h.call('POST', '/api/v1/threads', { token: attacker.token, body: {} })).body.thread_id
const id = Bun.randomUUIDv7()
const bytes = nestedForms()
await h.blobs.put(id, bytes)
await h.store.attachments.insertWithinQuota(
  thread,
  [
    {
      id,
      kind: 'pdf',
      mediaType: 'application/pdf',
      filename: 'nested.pdf',
      sizeBytes: bytes.length,
      resized: false,
      createdAt: Date.now(),
    },
  ],
  25,
)
const attackStarted = performance.now()
const sent = await h.call('POST', `/api/v1/threads/${thread}/messages`, {
  token: attacker.token,
  body: { text: 'Summarise', attachment_ids: [id] },
})
const path = `/api/v1/threads/${thread}/messages/${sent.body.message_id}/response/stream`
const attackDone = collect((await openStream(h, path, attacker.token)).events).then(
  () => performance.now() - attackStarted,
)
const during: number[] = []
for (let round = 0; round < rounds; round++) during.push(await timedQuestion())
const attackMs = await attackDone

const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
console.log(`load average: ${load}`)
console.log(
  `another user's answer alone:               median ${ms(median(baseline))}, max ${ms(Math.max(...baseline))}`,
)
console.log(`the same while the nested forms are read: median ${ms(median(during))}, max ${ms(Math.max(...during))}`)
console.log(`difference of medians: ${ms(median(during) - median(baseline))}`)
console.log(
  `the nested forms' own answer: ${ms(attackMs)} (deadline ${defaultPdfTextLimits.fileTimeoutMs} ms per file + 5 s)`,
)
await h[Symbol.asyncDispose]()
await fake[Symbol.asyncDispose]()
process.exit(0)
