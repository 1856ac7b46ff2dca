// The `anthropic` provider against a loopback server speaking the Messages streaming protocol, through
// the real worker: what the server is sent, what reaches the API client, what is stored, the state.
import { expect, test } from 'bun:test'
import type { HistoryMessage, ModelSettings } from '../src/generation/types'
import {
  answerWithTools,
  anthropicChoice,
  anthropicError,
  anthropicStreamError,
  anthropicText,
  anthropicTextDelta,
  anthropicTextStart,
  anthropicToolUse,
  ask,
  errorOf,
  eventsOf,
  FakeLlm,
  Feed,
  messagesOf,
  providerHarness,
  sse,
  stateOf,
  testApiKey,
} from './support/fake-llm'
import { collect, openStream, tokensOf, until } from './support/helpers'

// Each answer runs in the generation worker beside a fake provider, which a busy machine slows down. Each test has
// its own fake provider, app and worker, so the tests run concurrently: much of their time is spent waiting for
// timeouts, retries and workers to start, and they all start at once.

const setup = (fake: FakeLlm, overrides: Partial<ModelSettings> = {}) => providerHarness('anthropic', fake, overrides)

test.concurrent('streams the answer token by token and stores it', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(anthropicText(['Bonjour', ' à', ' tous'])))
  const { h, token } = await setup(fake)
  await using _ = h

  const answer = await ask(h, token, 'Greet in French')
  expect(eventsOf(answer.events)).toEqual([
    { event: 'token', data: { token: 'Bonjour' } },
    { event: 'token', data: { token: ' à' } },
    { event: 'token', data: { token: ' tous' } },
    { event: 'done', data: {} },
  ])
  const [request] = fake.received
  expect(request?.path).toBe('/v1/messages')
  expect(request?.headers.get('x-api-key') ?? request?.headers.get('authorization')).toContain(testApiKey)
  expect(request?.headers.get('anthropic-version')).toBeString()
  expect(request?.headers.get('x-title')).toBe('Threadhouse tests')
  expect(request?.body).toMatchObject({
    model: 'test-model',
    max_tokens: 256,
    stream: true,
    system: 'You are a test assistant.',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Greet in French' }] }],
    tools: [{ name: 'user_get_choice', input_schema: { type: 'object', required: ['question', 'choices'] } }],
  })
  const stored = await messagesOf(h, token, answer.threadId)
  expect(stored[1]?.contents).toEqual([{ type: 'text', text: 'Bonjour à tous' }])
  expect(await stateOf(h, token, answer.threadId)).toBe('ready')
})

test.concurrent('a tool_use block becomes a choice block, and the reply goes back as its tool_result', async () => {
  await using fake = new FakeLlm()
  const input = { question: 'Which city?', choices: ['Lyon', 'Nice', 'Lille'] }
  fake.reply(
    () => sse(anthropicChoice(['Let me check. '], 'toolu_01A09q90qw90lq917835lq9', input)),
    () => sse(anthropicText(['Nice is sunny.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h

  const first = await ask(h, token, 'Weather in France?')
  expect(tokensOf(first.events)).toBe('Let me check. ')
  const stored = await messagesOf(h, token, first.threadId)
  expect(stored[1]?.contents).toEqual([
    { type: 'text', text: 'Let me check. ' },
    { type: 'user_get_choice', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', ...input },
  ])

  await ask(h, token, 'Nice', first.threadId)
  expect(fake.received[1]?.body.messages).toEqual([
    { role: 'user', content: [{ type: 'text', text: 'Weather in France?' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check. ' },
        { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'user_get_choice', input },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: 'Nice' }] },
  ])
})

test.concurrent('an overloaded_error event before any text is retried', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse([...anthropicTextStart(), anthropicStreamError('overloaded_error', 'Overloaded')]),
    () => sse(anthropicText(['Back.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(tokensOf(answer.events)).toBe('Back.')
  expect(answer.events.at(-1)?.event).toBe('done')
  expect(fake.received).toHaveLength(2)
})

test.concurrent('an error event after text ends the answer in error, keeping the text', async () => {
  await using fake = new FakeLlm()
  fake.reply(() =>
    sse([...anthropicTextStart(), anthropicTextDelta('The first'), anthropicStreamError('api_error', 'Internal')]),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(eventsOf(answer.events)).toEqual([
    { event: 'token', data: { token: 'The first' } },
    { event: 'error', data: { message: 'The AI provider had an internal error. Please try again later.' } },
  ])
  expect(fake.received).toHaveLength(1)
  expect((await messagesOf(h, token, answer.threadId))[1]?.contents).toEqual([{ type: 'text', text: 'The first' }])
  expect(await stateOf(h, token, answer.threadId)).toBe('error')
})

test.concurrent('HTTP errors map to helpful messages', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => anthropicError(401, 'authentication_error', 'invalid x-api-key'),
    () => anthropicError(404, 'not_found_error', 'model: test-model'),
    () => anthropicError(400, 'invalid_request_error', 'prompt is too long: 215000 tokens > 200000 maximum'),
    () =>
      anthropicError(403, 'permission_error', 'Your API key does not have permission to use the specified resource.'),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const messages: (string | undefined)[] = []
  for (const text of ['one', 'two', 'three', 'four']) messages.push(errorOf((await ask(h, token, text)).events))
  expect(messages).toEqual([
    'The AI provider rejected the API key. An administrator should check the key configured for this model.',
    'The AI provider does not offer the model "test-model". An administrator should check the model’s name in the configuration (with Ollama, pull the model first).',
    'This conversation is too long for the model. An administrator can lower its context size so that older turns get summarised.',
    'The AI provider refused the request: the API key has no access to this model or feature.',
  ])
  expect(fake.received).toHaveLength(4)
})

test.concurrent('rate limits and overload are retried within the bound, honouring retry-after', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () =>
      anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', {
        'retry-after': '0',
      }),
    () => anthropicError(529, 'overloaded_error', 'Overloaded'),
    () => anthropicError(529, 'overloaded_error', 'Overloaded'),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(errorOf(answer.events)).toBe(
    'The AI provider is overloaded right now. Please try again shortly. (gave up after 3 attempts)',
  )
  expect(fake.received).toHaveLength(3)
})

test.concurrent('a stalled stream times out and a dropped one breaks off, both keeping the partial answer', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => new Feed([...anthropicTextStart(), anthropicTextDelta('Waiting')]).response())
  // Long enough that the first chunk, sent at once, arrives in time however busy this file's other tests keep the
  // fake upstream (at 1 s a loaded run counted it a stall before the first token, which is retried).
  const { h, token } = await setup(fake, { timeoutMs: 8000 })
  await using _ = h
  const stalled = await ask(h, token, 'Hi')
  expect(eventsOf(stalled.events)).toEqual([
    { event: 'token', data: { token: 'Waiting' } },
    { event: 'error', data: { message: 'The AI provider did not respond in time (see LLM_TIMEOUT_MS).' } },
  ])
  await fake.received[0]?.hungUp

  fake.reply(() => new Feed([...anthropicTextStart(), anthropicTextDelta('Cut')]).response())
  const sent = await h.call('POST', '/api/v1/threads', { token, body: { text: 'Again' } })
  const stream = await openStream(
    h,
    `/api/v1/threads/${sent.body.thread_id}/messages/${sent.body.message_id}/response/stream`,
    token,
  )
  await stream.events.next()
  await fake.crash()
  expect(eventsOf(await collect(stream.events))).toEqual([
    { event: 'error', data: { message: 'The connection to the AI provider broke off in the middle of the answer.' } },
  ])
  expect((await messagesOf(h, token, sent.body.thread_id))[1]?.contents).toEqual([{ type: 'text', text: 'Cut' }])
})

test.concurrent('stopping the answer aborts the upstream request at once', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => new Feed([...anthropicTextStart(), anthropicTextDelta('Once')]).response())
  const { h, token } = await setup(fake, { timeoutMs: 60_000 })
  await using _ = h
  const sent = await h.call('POST', '/api/v1/threads', { token, body: { text: 'Story' } })
  const threadId: string = sent.body.thread_id
  const stream = await openStream(
    h,
    `/api/v1/threads/${threadId}/messages/${sent.body.message_id}/response/stream`,
    token,
  )
  await stream.events.next()
  await h.app.decorator.engine.interrupt(threadId)
  await fake.received[0]?.hungUp
  expect(eventsOf(await collect(stream.events))).toEqual([
    { event: 'error', data: { message: 'The response was stopped' } },
  ])
  await until(async () => (await stateOf(h, token, threadId)) === 'ready')
})

// Tool rounds, through the provider's generator with a scripted port (the engine that runs calls is elsewhere).

const search = {
  name: 'docs__search_docs',
  description: 'Search the docs',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
}
const asks: HistoryMessage = { id: 'u1', role: 'user', contents: [{ type: 'text', text: 'Find pages' }] }

test.concurrent("round 2 carries round 1's tool_use blocks, in order, and a user turn of their tool_results", async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () =>
      sse(
        anthropicToolUse(
          ['Searching.'],
          [
            { id: 'toolu_A', name: 'docs__search_docs', arguments: '{"q":"alpha"}' },
            { id: 'toolu_B', name: 'docs__search_docs', arguments: '{"q":"beta"}' },
          ],
        ),
      ),
    () => sse(anthropicText(['Both found.'])),
  )
  const { asked } = await answerWithTools('anthropic', fake, [asks], { offered: [search], rounds: [] }, [
    {
      next: 'continue',
      results: [
        { id: 'toolu_A', content: 'alpha page', isError: false },
        { id: 'toolu_B', content: 'no such page', isError: true },
      ],
    },
  ])
  expect(asked).toEqual([
    {
      round: 1,
      calls: [
        { id: 'toolu_A', name: 'docs__search_docs', arguments: '{"q":"alpha"}' },
        { id: 'toolu_B', name: 'docs__search_docs', arguments: '{"q":"beta"}' },
      ],
    },
  ])
  const [first, second] = fake.received
  expect(first?.body.tools).toEqual([
    expect.objectContaining({ name: 'user_get_choice' }),
    { name: 'docs__search_docs', description: 'Search the docs', input_schema: search.inputSchema },
  ])
  expect(first?.body.tool_choice).toBeUndefined()
  expect(second?.body.messages).toEqual([
    { role: 'user', content: [{ type: 'text', text: 'Find pages' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Searching.' },
        { type: 'tool_use', id: 'toolu_A', name: 'docs__search_docs', input: { q: 'alpha' } },
        { type: 'tool_use', id: 'toolu_B', name: 'docs__search_docs', input: { q: 'beta' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_A', content: 'alpha page' },
        { type: 'tool_result', tool_use_id: 'toolu_B', content: 'no such page', is_error: true },
      ],
    },
  ])
})

test.concurrent('the request after a final round says tool_choice none and still defines the tools', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(anthropicToolUse([], [{ id: 'toolu_A', name: 'docs__search_docs', arguments: '{"q":"a"}' }])),
    () => sse(anthropicText(['Out of rounds.'])),
  )
  await answerWithTools('anthropic', fake, [asks], { offered: [search], rounds: [] }, [
    { next: 'final', results: [{ id: 'toolu_A', content: 'deadline or round limit reached', isError: true }] },
  ])
  const second = fake.received[1]?.body
  expect(second?.tool_choice).toEqual({ type: 'none' })
  expect(second?.tools).toHaveLength(2)
  expect(second?.messages.at(-1)).toEqual({
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_A', content: 'deadline or round limit reached', is_error: true },
    ],
  })
})

test.concurrent('a later answer describes earlier calls as text, without the approval or the decision', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(anthropicText(['Sure.'])))
  const earlier: HistoryMessage = {
    id: 'a1',
    role: 'assistant',
    contents: [
      { type: 'text', text: 'Deleting.' },
      {
        type: 'user_get_choice',
        tool_use_id: 'approve_x',
        question: 'Allow delete_page on docs?',
        choices: ['Allow', 'Deny'],
      },
    ],
    roundTexts: ['Deleting.'],
    toolCalls: [
      {
        round: 1,
        position: 0,
        toolUseId: 'toolu_B',
        modelName: 'docs__delete_page',
        serverName: 'docs',
        toolName: 'delete_page',
        arguments: '{"id":"7"}',
        status: 'awaiting_approval',
        result: null,
        approvalId: 'approve_x',
      },
    ],
  }
  const decision: HistoryMessage = {
    id: 'u2',
    role: 'user',
    contents: [{ type: 'text', text: 'Allow' }],
    decision: true,
  }
  const next: HistoryMessage = { id: 'u3', role: 'user', contents: [{ type: 'text', text: 'And now?' }] }
  await answerWithTools('anthropic', fake, [asks, earlier, decision, next], { offered: [search], rounds: [] }, [])
  expect(fake.received[0]?.body.messages).toEqual([
    { role: 'user', content: [{ type: 'text', text: 'Find pages' }] },
    {
      role: 'assistant',
      content: [
        {
          type: 'text',
          text: 'Deleting.\n\n[Called delete_page on docs with {"id":"7"} → awaiting approval]',
        },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'And now?' }] },
  ])
})
