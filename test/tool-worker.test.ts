// Tool rounds across the worker boundary: the real worker posts a round's calls, the runner hands them to the job's
// handlers and posts back what the model is told. Against a fake provider, without a database.
import { expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { createWorkerRunner } from '../src/generation/runner'
import type { HistoryMessage, JobHandlers, JobTools, ToolCallRequest, ToolRoundReply } from '../src/generation/types'
import { silentLogger } from '../src/shared/log'
import { FakeLlm, openaiText, openaiToolCalls, settingsFor, sse } from './support/fake-llm'

const history: HistoryMessage[] = [{ id: 'u1', role: 'user', contents: [{ type: 'text', text: 'Find pages' }] }]
const tools: JobTools = {
  offered: [{ name: 'docs__search_docs', description: 'Search the docs', inputSchema: { type: 'object' } }],
  rounds: [],
}
const searchA = { id: 'call_A', name: 'docs__search_docs', arguments: '{"q":"a"}' }

/** Handlers that record how the job ended and what it streamed; `toolCalls` as given. */
function handlersOf(toolCalls?: JobHandlers['toolCalls']) {
  const { promise: ended, resolve } = Promise.withResolvers<string>()
  const tokens: string[] = []
  const handlers: JobHandlers = {
    token: (text) => tokens.push(text),
    block: () => {},
    summary: () => {},
    done: () => resolve('done'),
    error: (message) => resolve(`error: ${message}`),
    cancelled: () => resolve('cancelled'),
    ...(toolCalls ? { toolCalls } : {}),
  }
  return { handlers, ended, tokens }
}

function runnerFor(fake: FakeLlm) {
  return createWorkerRunner(settingsFor('openai', fake), { kind: 'local', root: tmpdir() }, silentLogger)
}

test('a round of calls goes to the handlers, and their reply reaches the model', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiToolCalls(['Looking.'], [searchA])),
    () => sse(openaiText(['Found.'])),
  )
  const runner = runnerFor(fake)
  const asked: { round: number; calls: ToolCallRequest[] }[] = []
  const job = handlersOf(async (round, calls) => {
    asked.push({ round, calls })
    return { next: 'continue', results: [{ id: 'call_A', content: 'page a', isError: false }] }
  })
  runner.run('j1', history, job.handlers, { model: 'test-model', instructions: null, tools })
  expect(await job.ended).toBe('done')
  await runner.close()
  expect(asked).toEqual([{ round: 1, calls: [searchA] }])
  expect(job.tokens.join('')).toBe('Looking.\n\nFound.')
  expect(fake.received[1]?.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_A', content: 'page a' })
})

test('without a handler for calls, the model is told tools are not available and asked once more', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiToolCalls([], [searchA])),
    () => sse(openaiText(['Sorry.'])),
  )
  const runner = runnerFor(fake)
  const job = handlersOf()
  runner.run('j1', history, job.handlers, { model: 'test-model', instructions: null, tools })
  expect(await job.ended).toBe('done')
  await runner.close()
  const second = fake.received[1]?.body
  expect(second?.tool_choice).toBe('none')
  expect(second?.messages.at(-1)).toEqual({
    role: 'tool',
    tool_call_id: 'call_A',
    content: 'Error: Tools are not available.',
  })
})

test('handlers that fail are answered final with every call an error', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiToolCalls([], [searchA])),
    () => sse(openaiText(['Sorry.'])),
  )
  const runner = runnerFor(fake)
  const job = handlersOf(() => Promise.reject(new Error('database gone')))
  runner.run('j1', history, job.handlers, { model: 'test-model', instructions: null, tools })
  expect(await job.ended).toBe('done')
  await runner.close()
  expect(fake.received[1]?.body.tool_choice).toBe('none')
  expect(fake.received[1]?.body.messages.at(-1).content).toBe('Error: The tool could not be run.')
})

test('a stop while calls run cancels the job, and their late reply asks the model nothing', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(openaiToolCalls([], [searchA])))
  const runner = runnerFor(fake)
  const { promise: reached, resolve: reach } = Promise.withResolvers<void>()
  const { promise: late, resolve: answer } = Promise.withResolvers<ToolRoundReply>()
  const job = handlersOf(() => {
    reach()
    return late
  })
  runner.run('j1', history, job.handlers, { model: 'test-model', instructions: null, tools })
  await reached
  runner.cancel('j1')
  expect(await job.ended).toBe('cancelled')
  answer({ next: 'continue', results: [{ id: 'call_A', content: 'page a', isError: false }] })
  // A job run after it goes through the same worker: had the late reply reached the model, it would come first.
  fake.reply(() => sse(openaiText(['Next.'])))
  const next = handlersOf()
  runner.run('j2', history, next.handlers, { model: 'test-model', instructions: null })
  expect(await next.ended).toBe('done')
  await runner.close()
  expect(fake.received).toHaveLength(2)
  expect(next.tokens.join('')).toBe('Next.')
})

test('a job without tools offers only the choice tool, as before', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(openaiText(['Hi.'])))
  const runner = runnerFor(fake)
  const job = handlersOf()
  runner.run('j1', history, job.handlers, { model: 'test-model', instructions: null })
  expect(await job.ended).toBe('done')
  await runner.close()
  expect(fake.received[0]?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual([
    'user_get_choice',
  ])
})
