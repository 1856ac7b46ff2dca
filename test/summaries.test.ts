import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { collect, harness, ManualClock, openStream, ScriptedRunner, tokensOf } from './support/helpers'

async function twoTurns(clockStep: number) {
  const clock = new ManualClock()
  const runner = new ScriptedRunner()
  const h = await harness({ runner, clock })
  const user = await h.user()
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'first question' } })
  const threadId: string = created.body.thread_id
  const first = await runner.started(created.body.message_id)
  clock.advance(clockStep)
  first.token('first answer')
  first.done()
  await h.app.decorator.engine.idle()
  clock.advance(clockStep)
  const sent = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
    token: user.token,
    body: { text: 'second question' },
  })
  const second = await runner.started(sent.body.message_id)
  return { h, runner, clock, user, threadId, secondId: sent.body.message_id as string, second }
}

test('the worker receives message IDs, and a summary replaces the messages it names', async () => {
  const { h, runner, user, threadId, secondId, second } = await twoTurns(1000)
  await using _ = h
  const history = runner.jobs.get(secondId)?.history ?? []
  expect(history.map((message) => message.role)).toEqual(['user', 'assistant', 'user'])
  const replaced = history.slice(0, 2).map((message) => message.id)

  second.summary('They asked a first question and got a first answer.', replaced)
  second.token('second answer')
  second.done()
  await h.app.decorator.engine.idle()

  const listed = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })
  expect(listed.body.data.map((m: { role: string; contents: unknown }) => [m.role, m.contents])).toEqual([
    ['summary', [{ type: 'text', text: 'They asked a first question and got a first answer.' }]],
    ['user', [{ type: 'text', text: 'second question' }]],
    ['assistant', [{ type: 'text', text: 'second answer' }]],
  ])
  const { messages } = h.tables
  const inactive = await h.orm.select({ id: messages.id }).from(messages).where(eq(messages.active, false))
  expect(inactive.map((row) => row.id).sort()).toEqual([...replaced].sort())

  // The replaced answer is no longer listed, but its poll and stream still give it.
  const path = `/api/v1/threads/${threadId}/messages/${replaced[0]}/response`
  const poll = await h.call('GET', path, { token: user.token })
  expect(poll.status).toBe(200)
  expect(poll.body.status).toBe('complete')
  expect(poll.body.messages.map((m: { contents: unknown }) => m.contents)).toEqual([
    [{ type: 'text', text: 'first answer' }],
  ])
  const replay = await collect((await openStream(h, `${path}/stream`, user.token)).events)
  expect(tokensOf(replay)).toBe('first answer')
})

test('a summary lists before the kept messages even when they share a timestamp', async () => {
  const { h, runner, user, threadId, secondId, second } = await twoTurns(0)
  await using _ = h
  const history = runner.jobs.get(secondId)?.history ?? []
  second.summary('Summary.', [history[0]?.id ?? ''])
  second.error('The AI provider is overloaded right now. Please try again shortly.')
  await h.app.decorator.engine.idle()

  // The summary is kept although the answer failed: it stays true of the messages it replaced.
  const listed = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })
  expect(listed.body.data.map((m: { role: string }) => m.role)).toEqual(['summary', 'assistant', 'user'])
})
