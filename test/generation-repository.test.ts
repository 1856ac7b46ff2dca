// The guarantees GenerationRepository's JSDoc promises, checked on the contract itself rather than through the
// engine, which never lets them race: every implementation must pass these.
import { expect, test } from 'bun:test'
import { count, eq } from 'drizzle-orm'
import { harness } from './support/helpers'

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
  const claims = await Promise.all([1, 2, 3].map(() => s.generations.claim(s.answer, 5)))
  expect(claims.filter(Boolean)).toHaveLength(1)
  expect(await s.generation()).toEqual({ status: 'running', attempts: 1, error: null })
  expect(await s.threadState()).toEqual({ state: 'active' })
})

test('an answer is stored once: a second end writes nothing', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  const ended = { ...s.answer, contents: [{ type: 'text' as const, text: 'Hello' }] }
  await s.generations.finish({ ...ended, outcome: 'complete', error: null }, 6)
  await s.generations.finish({ ...ended, outcome: 'error', error: 'late' }, 7)
  expect(await s.generation()).toEqual({ status: 'complete', attempts: 1, error: null })
  expect(await s.threadState()).toEqual({ state: 'ready' })
  expect(await s.replies()).toEqual({ n: 1 })
})

test('an answer stopped part way is found among the messages asked about; others are not', async () => {
  await using s = await queuedAnswer()
  expect(await s.generations.interrupted([])).toEqual(new Set())
  await s.generations.claim(s.answer, 5)
  expect(await s.generations.interrupted([s.answer.messageId])).toEqual(new Set())
  await s.generations.markStopping(s.answer.threadId, 6)
  const ended = { ...s.answer, contents: [{ type: 'text' as const, text: 'Hel' }] }
  await s.generations.finish({ ...ended, outcome: 'interrupted', error: 'Stopped' }, 7)
  const other = crypto.randomUUID()
  expect(await s.generations.interrupted([s.answer.messageId, other])).toEqual(new Set([s.answer.messageId]))
})

test('a stop that crosses the end of the answer leaves the thread ready', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  await s.generations.finish({ ...s.answer, contents: [], outcome: 'complete', error: null }, 6)
  await s.generations.markStopping(s.answer.threadId, 7)
  expect(await s.threadState()).toEqual({ state: 'ready' })
})

test('released claims are queued again with their attempt given back', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  await s.generations.release([s.answer.messageId])
  expect(await s.generation()).toEqual({ status: 'queued', attempts: 0, error: null })
})
