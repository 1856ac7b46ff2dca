// What issue 37 adds to every answer, each part timed alone in process on the run's backend
// (THREADHOUSE_TEST_BACKEND, as the tests choose it; bench/quotas.ts runs this for each):
//   - the budget check before a send: quotas' one prepared read of the budgets and the month's totals;
//   - the usage writes in an answer's finishing transaction: `finish` with usage against `finish` without, in
//     alternating turns over answers queued alike (the answer's message, its generation and its thread's state are
//     written either way);
//   - the meter that estimates an answer's tokens when its provider reports none (a 20-message history).
// Prints one JSON line: medians in µs. `BENCH_ITERATIONS` (default 3000) per measure.
import { UsageMeter } from '../src/generation/usage'
import { closeShared } from '../test/support/after-run'
import { testEvent } from '../test/support/audit'
import { testDatabase } from '../test/support/backend'
import { postgresCpuSeconds } from './load'
import { benchOwner, percentile } from './micro'

const iterations = Number(process.env.BENCH_ITERATIONS ?? 3000)
// The tests' shared PostgreSQL cluster, stopped after a test run by its preload, is stopped here when this ends.
await using _shared = { [Symbol.asyncDispose]: closeShared }
await using database = await testDatabase()
const { store } = database
const owner = await benchOwner(store, 'team')
// Budgets set (far from used up), so that the check weighs both: the organization's and the members' default.
await store.quotas.setOrganizationBudget(
  owner.organizationId,
  { tokens: 1e12, costMicros: 1e12 },
  testEvent('settings.quota_changed'),
)
await store.quotas.setMemberDefault(
  owner.organizationId,
  { tokens: 1e12, costMicros: null },
  testEvent('settings.quota_changed'),
)

async function timed(call: () => Promise<unknown>): Promise<number> {
  const started = Bun.nanoseconds()
  await call()
  return (Bun.nanoseconds() - started) / 1000
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )

/** CPU ms used so far by this process and by every PostgreSQL process (none on SQLite runs). */
function cpuMs(): number {
  const own = process.cpuUsage()
  return (own.user + own.system) / 1000 + postgresCpuSeconds() * 1000
}

const period = new Date().toISOString().slice(0, 7)
const check: number[] = []
let checkCpu = 0
for (let i = 0; i < iterations + 200; i++) {
  if (i === 200) checkCpu = cpuMs()
  const spent = await timed(() => store.quotas.standing(owner.organizationId, owner.userId, period))
  if (i >= 200) check.push(spent)
}
checkCpu = cpuMs() - checkCpu

const lease = { id: 'bench', holder: 'bench', expiresAt: Date.now() + 3_600_000 }
const contents = [
  { type: 'text' as const, text: 'Here is the budget for the weekend trip, and what is still missing.' },
]
const usage = {
  model: 'echo',
  inputTokens: 420,
  outputTokens: 37,
  cachedInputTokens: 0,
  estimated: true,
  costMicros: null,
  currency: null,
  firstTokenMs: 3,
  totalMs: 12,
  outcome: 'complete' as const,
}
/** A thread whose first message's answer is claimed and ready to end. */
async function runningAnswer() {
  const now = Date.now()
  const created = await store.threads.createThread({
    organizationId: owner.organizationId,
    ownerId: owner.userId,
    name: 'Weekend trip',
    isPrivate: false,
    first: { role: 'user', contents: [{ type: 'text', text: 'What is missing from the plan?' }] },
    now,
  })
  const answer = { messageId: created.messageId as string, threadId: created.threadId }
  if (!(await store.generations.claim(answer, now, lease))) throw new Error('the answer was not claimed')
  return answer
}
// Timed per call, and in blocks of one kind at a time, whose CPU (this process's and the database's) is counted.
const finish = { with: [] as number[], without: [] as number[] }
const finishCpu = { with: 0, without: 0 }
const block = 250
for (let i = 0; i < 2 * iterations + 2 * block; i += block) {
  const withUsage = (i / block) % 2 === 0
  const answers = []
  for (let j = 0; j < block; j++) answers.push(await runningAnswer())
  const before = cpuMs()
  for (const answer of answers) {
    const ended = { ...answer, lease: lease.id, outcome: 'complete' as const, error: null, contents, model: 'echo' }
    const spent = await timed(() => store.generations.finish(withUsage ? { ...ended, usage } : ended, Date.now()))
    if (i >= 2 * block) finish[withUsage ? 'with' : 'without'].push(spent)
  }
  if (i >= 2 * block) finishCpu[withUsage ? 'with' : 'without'] += cpuMs() - before
}

const history = Array.from({ length: 20 }, (_, i) => ({
  id: `m${i}`,
  role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
  contents: [{ type: 'text' as const, text: 'A sentence or two of an ordinary conversation about a trip. '.repeat(4) }],
  attachments: {},
}))
const meter: number[] = []
for (let i = 0; i < iterations + 200; i++) {
  const started = Bun.nanoseconds()
  const running = new UsageMeter(history)
  running.produced()
  running.read({ outcome: 'complete', contents }, 'echo', undefined)
  if (i >= 200) meter.push((Bun.nanoseconds() - started) / 1000)
}

console.log(
  JSON.stringify({
    checkUs: median(check),
    checkCpuUs: (1000 * checkCpu) / check.length,
    finishWithUs: median(finish.with),
    finishWithoutUs: median(finish.without),
    finishCpuWithUs: (1000 * finishCpu.with) / finish.with.length,
    finishCpuWithoutUs: (1000 * finishCpu.without) / finish.without.length,
    meterUs: median(meter),
  }),
)
