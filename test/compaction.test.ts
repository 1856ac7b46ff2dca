// Context budget: older turns are summarised by the model and replaced by a `summary` message.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import {
  budgetRounds,
  offeredTokens,
  planCompaction,
  summaryPrompt,
  summaryRequest,
} from '../src/generation/providers/compaction'
import type { LoadedMessage } from '../src/generation/providers/conversation'
import { summaryHeading } from '../src/generation/providers/conversation'
import { createWorkerRunner } from '../src/generation/runner'
import { silentLogger } from '../src/shared/log'
import { ask, FakeLlm, messagesOf, openaiText, settingsFor, sse } from './support/fake-llm'
import { harness, tokensOf } from './support/helpers'

const budget = { systemPrompt: 'You are a test assistant.', maxOutputTokens: 100, contextTokens: 700 }

test('older turns are summarised once the history outgrows the context budget', async () => {
  await using fake = new FakeLlm()
  const words = (word: string, count: number): string => Array(count).fill(word).join(' ')
  fake.reply(
    () => sse(openaiText([words('first', 60)])),
    () => sse(openaiText([words('second', 60)])),
    () => sse(openaiText(['The user counted; the assistant repeated words.'])),
    () => sse(openaiText(['Third', ' answer.'])),
    () => sse(openaiText(['Fourth answer.'])),
  )
  const settings = settingsFor('openai', fake, budget)
  await using h = await harness({ runner: (blobs) => createWorkerRunner(settings, blobs, silentLogger) })
  const { token } = await h.user()

  const one = await ask(h, token, words('one', 100))
  await ask(h, token, words('two', 100), one.threadId)
  expect(fake.received).toHaveLength(2)

  const three = await ask(h, token, words('three', 100), one.threadId)
  // The summary's own tokens are not part of the answer the client streams.
  expect(tokensOf(three.events)).toBe('Third answer.')
  const [summarising, answering] = fake.received.slice(2)
  expect(summarising?.body.tools).toBeUndefined()
  expect(summarising?.body.max_tokens).toBe(100)
  expect(summarising?.body.messages[0]).toEqual({ role: 'system', content: summaryPrompt })
  const transcript: string = summarising?.body.messages[1].content
  expect(transcript).toStartWith(`User: ${words('one', 100)}\n\nAssistant: ${words('first', 60)}\n\nUser: two`)
  expect(transcript).not.toContain('three')
  expect(answering?.body.messages).toEqual([
    { role: 'system', content: 'You are a test assistant.' },
    {
      role: 'user',
      content: `${summaryHeading}\n\nThe user counted; the assistant repeated words.\n\n${words('three', 100)}`,
    },
  ])

  const listed = await messagesOf(h, token, one.threadId)
  expect(listed.map((message) => [message.role, message.contents])).toEqual([
    ['summary', [{ type: 'text', text: 'The user counted; the assistant repeated words.' }]],
    ['user', [{ type: 'text', text: words('three', 100) }]],
    ['assistant', [{ type: 'text', text: 'Third answer.' }]],
  ])
  const { messages } = h.tables
  expect(await h.orm.select().from(messages).where(eq(messages.active, false))).toHaveLength(4)

  // The stored summary is the context of the following turns.
  await ask(h, token, 'And now?', one.threadId)
  expect(fake.received[4]?.body.messages.slice(1)).toEqual([
    {
      role: 'user',
      content: `${summaryHeading}\n\nThe user counted; the assistant repeated words.\n\n${words('three', 100)}`,
    },
    { role: 'assistant', content: 'Third answer.' },
    { role: 'user', content: 'And now?' },
  ])
})

function message(id: string, role: LoadedMessage['role'], chars: number): LoadedMessage {
  return { id, role, parts: [{ type: 'text', text: 'x'.repeat(chars) }] }
}

test('compaction keeps the newest turns that fit half the room, starting with a user message', () => {
  const history = [
    message('u1', 'user', 2000),
    message('a1', 'assistant', 2000),
    message('u2', 'user', 600),
    message('a2', 'assistant', 1200),
    message('u3', 'user', 400),
  ]
  const ids = (contextTokens: number) => {
    const plan = planCompaction(history, { ...budget, contextTokens })
    return plan && [plan.replaced.map((m) => m.id), plan.kept.map((m) => m.id)]
  }
  expect(ids(2000)).toBeNull()
  expect(ids(1700)).toEqual([
    ['u1', 'a1'],
    ['u2', 'a2', 'u3'],
  ])
  // u2 no longer fits, and the kept part may not start with the assistant's a2.
  expect(ids(1500)).toEqual([['u1', 'a1', 'u2', 'a2'], ['u3']])
})

test('compaction never just re-summarises a lone summary', () => {
  const history = [message('s', 'summary', 400), message('u', 'user', 4000)]
  expect(planCompaction(history, budget)).toBeNull()
})

test('a transcript too long for one request loses its oldest turns, never the earlier summary', () => {
  const replaced = [
    message('s', 'summary', 200),
    message('u1', 'user', 3000),
    message('a1', 'assistant', 200),
    message('u2', 'user', 200),
  ]
  const request = summaryRequest(replaced, budget)
  const part = request.turns[0]?.role === 'user' ? request.turns[0].parts[0] : undefined
  const text = part?.type === 'text' ? part.text : ''
  expect(text).toStartWith(`Earlier summary:\n${'x'.repeat(200)}\n\nAssistant: `)
  expect(text).toContain(`User: ${'x'.repeat(200)}`)
  expect(text).not.toContain('x'.repeat(201 + 200))
  expect(request).toMatchObject({ system: summaryPrompt, maxOutputTokens: 100, choiceTool: 'withhold' })
})

test("the answer's tool definitions count towards the budget", () => {
  const history = [message('u1', 'user', 2000), message('a1', 'assistant', 2000), message('u2', 'user', 400)]
  const tools = [{ name: 'docs__search', description: 'd'.repeat(400), inputSchema: { type: 'object' } }]
  expect(offeredTokens(tools)).toBeGreaterThan(100)
  expect(planCompaction(history, { ...budget, contextTokens: 1450 })).toBeNull()
  expect(
    planCompaction(history, { ...budget, contextTokens: 1450 }, offeredTokens(tools))?.kept.map((m) => m.id),
  ).toEqual(['u2'])
})

test("an answer's oldest tool results give way first when its rounds outgrow the room", () => {
  const result = (id: string, chars: number) => ({ id, content: 'r'.repeat(chars), isError: false })
  const call = (id: string) => ({ id, name: 'docs__search', arguments: '{}' })
  const rounds = [
    { text: '', calls: [call('c1'), call('c2')], results: [result('c1', 800), result('c2', 800)] },
    { text: '', calls: [call('c3')], results: [result('c3', 800)] },
  ]
  const contents = (fitted: { rounds: typeof rounds }) =>
    fitted.rounds.flatMap((round) => round.results.map((each) => each.content.slice(0, 12)))
  expect(contents(budgetRounds(rounds, 700))).toEqual(['rrrrrrrrrrrr', 'rrrrrrrrrrrr', 'rrrrrrrrrrrr'])
  const trimmed = budgetRounds(rounds, 500)
  expect(trimmed.fits).toBe(true)
  expect(trimmed.rounds[0]?.results[0]?.content).toBe('[result left out to fit the context: 800 characters]')
  expect(contents(trimmed).slice(1)).toEqual(['rrrrrrrrrrrr', 'rrrrrrrrrrrr'])
  const all = budgetRounds(rounds, 100)
  expect(all.fits).toBe(true)
  expect(contents(all)).toEqual(['[result left', '[result left', '[result left'])
  expect(budgetRounds(rounds, 10).fits).toBe(false)
  // The rounds given are left as they were: the next request fits them again from the start.
  expect(rounds[0]?.results[0]?.content).toHaveLength(800)
})
