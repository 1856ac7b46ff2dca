// The guarantees GenerationRepository's JSDoc promises, checked on the contract itself rather than through the
// engine, which never lets them race: every implementation must pass these.
import { expect, test } from 'bun:test'
import { harness } from './support/helpers'

async function queuedAnswer() {
  const h = await harness()
  const owner = await h.user()
  const { thread_id: threadId } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const messageId = crypto.randomUUID()
  h.db.$client.run(
    `insert into messages (id, thread_id, role, contents, text, created_at) values (?, ?, 'user', '[{"type":"text","text":"hi"}]', 'hi', 1)`,
    [messageId, threadId],
  )
  h.db.$client.run(
    `insert into generations (message_id, thread_id, status, attempts, created_at) values (?, ?, 'queued', 0, 1)`,
    [messageId, threadId],
  )
  h.db.$client.run(`update threads set state = 'waiting' where id = ?`, [threadId])
  const row = (sql: string, id = messageId) => h.db.$client.query(sql).get(id)
  return {
    h,
    answer: { messageId, threadId },
    generations: h.store.generations,
    generation: () => row('select status, attempts, error from generations where message_id = ?'),
    threadState: () => row('select state from threads where id = ?', threadId),
    replies: () => row('select count(*) as n from messages where reply_to = ?'),
    [Symbol.asyncDispose]: () => h[Symbol.asyncDispose](),
  }
}

test('a queued answer is claimed by exactly one caller, and its thread becomes active', async () => {
  await using s = await queuedAnswer()
  const claims = await Promise.all([1, 2, 3].map(() => s.generations.claim(s.answer, 5)))
  expect(claims.filter(Boolean)).toHaveLength(1)
  expect(s.generation()).toEqual({ status: 'running', attempts: 1, error: null })
  expect(s.threadState()).toEqual({ state: 'active' })
})

test('an answer is stored once: a second end writes nothing', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  const ended = { ...s.answer, contents: [{ type: 'text' as const, text: 'Hello' }] }
  await s.generations.finish({ ...ended, outcome: 'complete', error: null }, 6)
  await s.generations.finish({ ...ended, outcome: 'error', error: 'late' }, 7)
  expect(s.generation()).toEqual({ status: 'complete', attempts: 1, error: null })
  expect(s.threadState()).toEqual({ state: 'ready' })
  expect(s.replies()).toEqual({ n: 1 })
})

test('a stop that crosses the end of the answer leaves the thread ready', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  await s.generations.finish({ ...s.answer, contents: [], outcome: 'complete', error: null }, 6)
  await s.generations.markStopping(s.answer.threadId, 7)
  expect(s.threadState()).toEqual({ state: 'ready' })
})

test('released claims are queued again with their attempt given back', async () => {
  await using s = await queuedAnswer()
  await s.generations.claim(s.answer, 5)
  await s.generations.release([s.answer.messageId])
  expect(s.generation()).toEqual({ status: 'queued', attempts: 0, error: null })
})
