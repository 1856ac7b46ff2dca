// The guarantees GenerationRepository's JSDoc promises, checked on the contract itself rather than through the
// engine, which never lets them race: every implementation must pass these.
import { expect, test } from 'bun:test'
import { count, eq } from 'drizzle-orm'
import type { AnswerRelay } from '../src/generation/relay'
import { onPostgres } from './support/backend'
import { harness } from './support/helpers'

const lease = { id: 'lease-1', holder: 'test', expiresAt: 60_000 }

async function queuedAnswer() {
  const h = await harness()
  const owner = await h.user()
  const { thread_id: threadId } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const messageId = crypto.randomUUID()
  const { generations, messages, threads } = h.tables
  await h.orm.insert(messages).values({
    id: messageId,
    threadId,
    role: 'user',
    contents: [{ type: 'text', text: 'hi' }],
    text: 'hi',
    createdAt: 1,
  })
  await h.orm.insert(generations).values({ messageId, threadId, status: 'queued', attempts: 0, createdAt: 1 })
  await h.orm.update(threads).set({ state: 'waiting' }).where(eq(threads.id, threadId))
  return {
    h,
    answer: { messageId, threadId },
    generations: h.store.generations,
    generation: async () =>
      (
        await h.orm
          .select({ status: generations.status, attempts: generations.attempts, error: generations.error })
          .from(generations)
          .where(eq(generations.messageId, messageId))
      )[0],
    threadState: async () =>
      (await h.orm.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId)))[0],
    replies: async () => (await h.orm.select({ n: count() }).from(messages).where(eq(messages.replyTo, messageId)))[0],
    [Symbol.asyncDispose]: () => h[Symbol.asyncDispose](),
  }
}

test('a queued answer is claimed by exactly one caller, and its thread becomes active', async () => {
  await using s = await queuedAnswer()
  const claims = await Promise.all(
    [1, 2, 3].map((n) => s.generations.claim(s.answer, 5, { ...lease, id: `lease-${n}` })),
  )
  expect(claims.filter(Boolean)).toHaveLength(1)
  expect(await s.generation()).toEqual({ status: 'running', attempts: 1, error: null })
  expect(await s.threadState()).toEqual({ state: 'active' })
})

test('an answer is stored once: a second end writes nothing', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5, lease)
  const ended = { ...s.answer, lease: lease.id, contents: [{ type: 'text' as const, text: 'Hello' }] }
  await s.generations.finish({ ...ended, outcome: 'complete', error: null }, 6)
  await s.generations.finish({ ...ended, outcome: 'error', error: 'late' }, 7)
  expect(await s.generation()).toEqual({ status: 'complete', attempts: 1, error: null })
  expect(await s.threadState()).toEqual({ state: 'ready' })
  expect(await s.replies()).toEqual({ n: 1 })
})

test('an answer stopped part way is found among the messages asked about; others are not', async () => {
  await using s = await queuedAnswer()
  expect(await s.generations.interrupted([])).toEqual(new Set())
  await s.generations.claim(s.answer, 5, lease)
  expect(await s.generations.interrupted([s.answer.messageId])).toEqual(new Set())
  await s.generations.markStopping(s.answer.threadId, 6)
  const ended = { ...s.answer, lease: lease.id, contents: [{ type: 'text' as const, text: 'Hel' }] }
  await s.generations.finish({ ...ended, outcome: 'interrupted', error: 'Stopped' }, 7)
  const other = crypto.randomUUID()
  expect(await s.generations.interrupted([s.answer.messageId, other])).toEqual(new Set([s.answer.messageId]))
})

test('a stop that crosses the end of the answer leaves the thread ready', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5, lease)
  await s.generations.finish({ ...s.answer, lease: lease.id, contents: [], outcome: 'complete', error: null }, 6)
  await s.generations.markStopping(s.answer.threadId, 7)
  expect(await s.threadState()).toEqual({ state: 'ready' })
})

test('released claims are queued again with their attempt given back', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5, lease)
  await s.generations.release([{ messageId: s.answer.messageId, lease: lease.id }])
  expect(await s.generation()).toEqual({ status: 'queued', attempts: 0, error: null })
})

// Leases: where several instances share the database (PostgreSQL). SQLite stores none (one process holds it).
const policy = { maxAttempts: 3, stoppedError: 'stopped', failedError: 'failed', limit: 10, graceMs: 0 }

// An answer's run (generations.run_id) names the tool calls it records: it must survive what resumes the answer (a
// release, a takeover) and end with it, so that a regenerate starts afresh.
test('an answer’s run lasts from its first claim to its end: a release keeps it, the end clears it', async () => {
  await using s = await queuedAnswer()
  const runOf = () => s.h.store.toolCalls.runOf(s.answer.messageId)
  expect(await runOf()).toBeNull()
  await s.generations.claim(s.answer, 5, { ...lease, id: 'lease-1' })
  expect(await runOf()).toBe('lease-1')
  await s.generations.release([{ messageId: s.answer.messageId, lease: 'lease-1' }])
  expect(await runOf()).toBe('lease-1')
  // Claimed again (a restart): the run goes on under the new claim.
  await s.generations.claim(s.answer, 6, { ...lease, id: 'lease-2' })
  expect(await runOf()).toBe('lease-1')
  const ended = { ...s.answer, lease: 'lease-2', contents: [{ type: 'text' as const, text: 'Hello' }] }
  await s.generations.finish({ ...ended, outcome: 'complete', error: null }, 7)
  expect(await runOf()).toBeNull()
  // A regenerate: the next claim starts a new run.
  expect(await s.h.store.threads.regenerate(s.answer.threadId, s.answer.messageId, null, 8)).toEqual({ ok: true })
  await s.generations.claim(s.answer, 9, { ...lease, id: 'lease-3' })
  expect(await runOf()).toBe('lease-3')
})

test('recovery that ends an answer ends its run; one it queues again keeps it', async () => {
  const outcomes: Record<string, unknown> = {}
  for (const [name, maxAttempts, stopping] of [
    ['requeued', 3, false],
    ['failed', 1, false],
    ['stopped', 3, true],
  ] as const) {
    await using s = await queuedAnswer()
    await s.generations.claim(s.answer, 5, { id: `lease-${name}`, holder: 'a', expiresAt: 100 })
    if (stopping) await s.generations.markStopping(s.answer.threadId, 6)
    await s.generations.recover({ ...policy, maxAttempts }, 200)
    outcomes[name] = [(await s.generation())?.status, await s.h.store.toolCalls.runOf(s.answer.messageId)]
  }
  expect(outcomes).toEqual({
    requeued: ['queued', 'lease-requeued'],
    failed: ['error', null],
    stopped: ['interrupted', null],
  })
})

test.skipIf(!onPostgres)(
  'an expired lease is taken over, and its old holder can then neither publish text nor store the answer',
  async () => {
    await using s = await queuedAnswer()
    const relay = s.h.store.relay as AnswerRelay
    const old = { id: '0001-old', holder: 'a', expiresAt: 100 }
    expect(await s.generations.claim(s.answer, 5, old)).toBe(true)
    const chunk = { ...s.answer, lease: old.id, start: 0, end: 5, text: 'Hello' }
    expect(await relay.publish(chunk)).toBe(true)
    expect(await s.generations.renew([old.id], 150)).toEqual({ lost: [], stopping: [] })
    // Not yet expired at 120 (renewed to 150); expired at 200.
    expect((await s.generations.recover(policy, 120)).abandoned).toBe(0)
    const recovered = await s.generations.recover(policy, 200)
    expect(recovered.abandoned).toBe(1)
    expect(recovered.requeued).toEqual([s.answer])
    const next = { id: '0002-new', holder: 'b', expiresAt: 10_000 }
    expect(await s.generations.claim(s.answer, 201, next)).toBe(true)
    expect(await s.generation()).toEqual({ status: 'running', attempts: 2, error: null })
    // The old holder's text went with its lease, and it can add none.
    expect(await relay.chunks(s.answer.messageId, old.id, 0)).toEqual([])
    expect(await relay.publish({ ...chunk, start: 5, end: 6, text: '!' })).toBe(false)
    expect(await s.generations.renew([old.id, next.id], 20_000)).toEqual({ lost: [old.id], stopping: [] })
    const ended = { ...s.answer, contents: [{ type: 'text' as const, text: 'Hello' }], outcome: 'complete' as const }
    expect(await s.generations.finish({ ...ended, error: null, lease: old.id }, 300)).toBe(false)
    expect(await s.generations.finish({ ...ended, error: null, lease: next.id }, 300)).toBe(true)
    expect(await s.replies()).toEqual({ n: 1 })
  },
)

test.skipIf(!onPostgres)('renewing a lease tells its holder when another instance asked for a stop', async () => {
  await using s = await queuedAnswer()
  const held = { id: '0001-held', holder: 'a', expiresAt: 100 }
  await s.generations.claim(s.answer, 5, held)
  await s.generations.markStopping(s.answer.threadId, 6)
  expect(await s.generations.renew([held.id], 200)).toEqual({ lost: [], stopping: [held.id] })
  // Its holder died before stopping it: whoever takes it over ends it as stopped.
  expect(await s.generations.recover(policy, 300)).toMatchObject({ requeued: [], stopped: 1 })
  expect(await s.generation()).toEqual({ status: 'interrupted', attempts: 1, error: 'stopped' })
  expect(await s.threadState()).toEqual({ state: 'ready' })
})
