// The `openai` provider against a loopback server speaking Chat Completions streaming, through the
// real worker: what the server is sent, what reaches the API client, what is stored, the thread state.
import { expect, test } from 'bun:test'
import sharp from 'sharp'
import { createWorkerRunner } from '../src/generation/runner'
import type { HistoryMessage, ModelSettings } from '../src/generation/types'
import { silentLogger } from '../src/shared/log'
import {
  answerWithTools,
  ask,
  errorOf,
  eventsOf,
  FakeLlm,
  Feed,
  messagesOf,
  openaiChoice,
  openaiChunk,
  openaiError,
  openaiText,
  openaiToolCalls,
  providerHarness,
  settingsFor,
  sse,
  stateOf,
  testApiKey,
} from './support/fake-llm'
import { collect, harness, openStream, tokensOf, until } from './support/helpers'

// Each answer runs in the generation worker beside a fake provider, which a busy machine slows down. Each test has
// its own fake provider, app and worker, so the tests run concurrently: much of their time is spent waiting for
// timeouts, retries and workers to start, and they all start at once.

const setup = (fake: FakeLlm, overrides: Partial<ModelSettings> = {}) => providerHarness('openai', fake, overrides)

test.concurrent('streams the answer token by token and stores it', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(openaiText(['Hello', ',', ' world', '!'])))
  const { h, token } = await setup(fake)
  await using _ = h

  const answer = await ask(h, token, 'Say hello')
  expect(eventsOf(answer.events)).toEqual([
    { event: 'token', data: { token: 'Hello' } },
    { event: 'token', data: { token: ',' } },
    { event: 'token', data: { token: ' world' } },
    { event: 'token', data: { token: '!' } },
    { event: 'done', data: {} },
  ])
  const [request] = fake.received
  expect(request?.path).toBe('/v1/chat/completions')
  expect(request?.headers.get('authorization')).toBe(`Bearer ${testApiKey}`)
  expect(request?.headers.get('x-title')).toBe('Threadhouse tests')
  expect(request?.body).toMatchObject({
    model: 'test-model',
    stream: true,
    max_tokens: 256,
    messages: [
      { role: 'system', content: 'You are a test assistant.' },
      { role: 'user', content: 'Say hello' },
    ],
    tools: [
      { type: 'function', function: { name: 'user_get_choice', parameters: { required: ['question', 'choices'] } } },
    ],
  })
  const stored = await messagesOf(h, token, answer.threadId)
  expect(stored.map((m) => [m.role, m.contents])).toEqual([
    ['user', [{ type: 'text', text: 'Say hello' }]],
    ['assistant', [{ type: 'text', text: 'Hello, world!' }]],
  ])
  expect(await stateOf(h, token, answer.threadId)).toBe('ready')
})

test.concurrent('sends the whole active history in order on the next turn', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiText(['Paris.'])),
    () => sse(openaiText(['About 2.1 million.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h

  const first = await ask(h, token, 'Capital of France?')
  await ask(h, token, 'Population?', first.threadId)
  expect(fake.received[1]?.body.messages).toEqual([
    { role: 'system', content: 'You are a test assistant.' },
    { role: 'user', content: 'Capital of France?' },
    { role: 'assistant', content: 'Paris.' },
    { role: 'user', content: 'Population?' },
  ])
})

test.concurrent('a user_get_choice tool call becomes a choice block, and the reply goes back as its result', async () => {
  await using fake = new FakeLlm()
  const input = { question: 'Which format?', choices: ['PDF', 'Word'] }
  fake.reply(
    () => sse(openaiChoice(['Sure. '], 'call_Abc123', input)),
    () => sse(openaiText(['Here is the PDF.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h

  const first = await ask(h, token, 'Export my notes')
  expect(tokensOf(first.events)).toBe('Sure. ')
  const stored = await messagesOf(h, token, first.threadId)
  expect(stored[1]?.contents).toEqual([
    { type: 'text', text: 'Sure. ' },
    { type: 'user_get_choice', tool_use_id: 'call_Abc123', question: 'Which format?', choices: ['PDF', 'Word'] },
  ])
  expect(await stateOf(h, token, first.threadId)).toBe('ready')

  await ask(h, token, 'PDF', first.threadId)
  expect(fake.received[1]?.body.messages.slice(2)).toEqual([
    {
      role: 'assistant',
      content: 'Sure. ',
      tool_calls: [
        {
          id: 'call_Abc123',
          type: 'function',
          function: { name: 'user_get_choice', arguments: JSON.stringify(input) },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_Abc123', content: 'PDF' },
  ])
})

test.concurrent('an invalid API key ends the stream with a helpful error and no secret, without retrying', async () => {
  await using fake = new FakeLlm()
  fake.reply(() =>
    openaiError(401, {
      message: `Incorrect API key provided: ${testApiKey}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    }),
  )
  const { h, token } = await setup(fake)
  await using _ = h

  const answer = await ask(h, token, 'Hi')
  expect(eventsOf(answer.events)).toEqual([
    {
      event: 'error',
      data: {
        message:
          'The AI provider rejected the API key. An administrator should check the key configured for this model.',
      },
    },
  ])
  expect(fake.received).toHaveLength(1)
  expect(await stateOf(h, token, answer.threadId)).toBe('error')
  const poll = await h.call('GET', `/api/v1/threads/${answer.threadId}/messages/${answer.messageId}/response`, {
    token,
  })
  expect(poll.body).toEqual({ status: 'error', messages: [] })
})

test.concurrent('an unknown model is named in the error', async () => {
  await using fake = new FakeLlm()
  fake.reply(() =>
    openaiError(404, {
      message: 'The model `test-model` does not exist or you do not have access to it.',
      type: 'invalid_request_error',
      code: 'model_not_found',
    }),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(errorOf(answer.events)).toBe(
    'The AI provider does not offer the model "test-model". An administrator should check the model’s name in the configuration (with Ollama, pull the model first).',
  )
})

test.concurrent('a 404 that is not about the model points at the base URL', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => new Response('404 page not found', { status: 404, headers: { 'content-type': 'text/plain' } }))
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(errorOf(answer.events)).toContain('check the model’s base URL')
})

test.concurrent('a rate limit is retried after the wait the server asks for, then the answer streams', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () =>
      openaiError(
        429,
        { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' },
        { 'retry-after-ms': '20' },
      ),
    () => sse(openaiText(['Fine', ' now.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(tokensOf(answer.events)).toBe('Fine now.')
  expect(answer.events.at(-1)?.event).toBe('done')
  expect(fake.received).toHaveLength(2)
  expect(fake.received[1]?.body).toEqual(fake.received[0]?.body)
})

test.concurrent('server errors are retried up to the bound, then the thread is in error', async () => {
  await using fake = new FakeLlm()
  const serverError = () =>
    openaiError(500, {
      message: 'The server had an error while processing your request. Sorry about that!',
      type: 'server_error',
      code: null,
    })
  fake.reply(serverError, serverError, serverError, () => sse(openaiText(['never sent'])))
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(errorOf(answer.events)).toBe(
    'The AI provider had an internal error (HTTP 500). Please try again later. (gave up after 3 attempts)',
  )
  expect(fake.received).toHaveLength(3)
  expect(await stateOf(h, token, answer.threadId)).toBe('error')
})

test.concurrent('an unreachable provider is reported as such', async () => {
  const closed = new FakeLlm()
  const settings = settingsFor('openai', closed, { maxAttempts: 2 })
  await closed.crash()
  await using h = await harness({ runner: (blobs) => createWorkerRunner(settings, blobs, silentLogger) })
  const user = await h.user()
  const answer = await ask(h, user.token, 'Hi')
  expect(errorOf(answer.events)).toBe(
    'Could not reach the AI provider. An administrator should check that it is running and that the model’s base URL is right. (gave up after 2 attempts)',
  )
})

test.concurrent('a provider that stalls mid-answer times out; the partial answer is kept', async () => {
  await using fake = new FakeLlm()
  const feed = new Feed([openaiChunk({ role: 'assistant', content: '' }), openaiChunk({ content: 'Partial' })])
  fake.reply(() => feed.response())
  // Long enough that the first chunk, sent at once, arrives in time however busy this process is: the fake upstream
  // shares its event loop with this file's other tests, all running at once, and in a full run it once took more
  // than 3 s, so the stall counted as one before the first token, which is retried.
  const { h, token } = await setup(fake, { timeoutMs: 8000 })
  await using _ = h

  const answer = await ask(h, token, 'Hi')
  expect(eventsOf(answer.events)).toEqual([
    { event: 'token', data: { token: 'Partial' } },
    { event: 'error', data: { message: 'The AI provider did not respond in time (see LLM_TIMEOUT_MS).' } },
  ])
  await fake.received[0]?.hungUp
  // Not retried: the user has already seen part of the answer.
  expect(fake.received).toHaveLength(1)
  const stored = await messagesOf(h, token, answer.threadId)
  expect(stored[1]?.contents).toEqual([{ type: 'text', text: 'Partial' }])
  expect(await stateOf(h, token, answer.threadId)).toBe('error')
})

test.concurrent('a stall before the first token is retried like any transient failure', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => new Feed([openaiChunk({ role: 'assistant', content: '' })]).response(),
    () => sse(openaiText(['Second try.'])),
  )
  // As above: the second try's answer must come within the deadline while this file's other tests keep busy.
  const { h, token } = await setup(fake, { timeoutMs: 8000 })
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(tokensOf(answer.events)).toBe('Second try.')
  expect(answer.events.at(-1)?.event).toBe('done')
})

test.concurrent('a connection dropped mid-stream ends in error with the partial answer kept', async () => {
  await using fake = new FakeLlm()
  const feed = new Feed([openaiChunk({ role: 'assistant', content: '' }), openaiChunk({ content: 'Half an' })])
  fake.reply(() => feed.response())
  const { h, token } = await setup(fake)
  await using _ = h

  const sent = await h.call('POST', '/api/v1/threads', { token, body: { text: 'Hi' } })
  const path = `/api/v1/threads/${sent.body.thread_id}/messages/${sent.body.message_id}/response/stream`
  const stream = await openStream(h, path, token)
  const first = await stream.events.next()
  expect(first.value?.data).toBe(JSON.stringify({ token: 'Half an' }))
  await fake.crash()
  const rest = await collect(stream.events)
  expect(eventsOf(rest)).toEqual([
    { event: 'error', data: { message: 'The connection to the AI provider broke off in the middle of the answer.' } },
  ])
  const stored = await messagesOf(h, token, sent.body.thread_id)
  expect(stored[1]?.contents).toEqual([{ type: 'text', text: 'Half an' }])
  expect(await stateOf(h, token, sent.body.thread_id)).toBe('error')
})

test.concurrent('stopping the answer aborts the upstream request at once and keeps what was said', async () => {
  await using fake = new FakeLlm()
  const feed = new Feed([openaiChunk({ role: 'assistant', content: '' }), openaiChunk({ content: 'Once upon' })])
  fake.reply(() => feed.response())
  // A long timeout: only the interrupt can end this request quickly.
  const { h, token } = await setup(fake, { timeoutMs: 60_000 })
  await using _ = h

  const sent = await h.call('POST', '/api/v1/threads', { token, body: { text: 'Tell a story' } })
  const threadId: string = sent.body.thread_id
  const stream = await openStream(
    h,
    `/api/v1/threads/${threadId}/messages/${sent.body.message_id}/response/stream`,
    token,
  )
  await stream.events.next()
  expect(await h.app.decorator.engine.interrupt(threadId)).toBe(true)
  await fake.received[0]?.hungUp
  const rest = await collect(stream.events)
  expect(eventsOf(rest)).toEqual([{ event: 'error', data: { message: 'The response was stopped' } }])
  await until(async () => (await stateOf(h, token, threadId)) === 'ready')
  expect((await messagesOf(h, token, threadId))[1]?.contents).toEqual([{ type: 'text', text: 'Once upon' }])
})

test.concurrent('shutting down aborts the upstream request', async () => {
  await using fake = new FakeLlm()
  const feed = new Feed([openaiChunk({ role: 'assistant', content: '' }), openaiChunk({ content: 'Still going' })])
  fake.reply(() => feed.response())
  const { h, token } = await setup(fake, { timeoutMs: 60_000 })
  const sent = await h.call('POST', '/api/v1/threads', { token, body: { text: 'Hi' } })
  const stream = await openStream(
    h,
    `/api/v1/threads/${sent.body.thread_id}/messages/${sent.body.message_id}/response/stream`,
    token,
  )
  await stream.events.next()
  expect(fake.received).toHaveLength(1)
  await h[Symbol.asyncDispose]()
  // Resolves only when the provider sees the connection closed; the test times out otherwise.
  await fake.received[0]?.hungUp
})

test.concurrent('a model without tool support is asked again without the tool, and earlier choices become text', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiChoice([], 'call_1', { question: 'Tea or coffee?', choices: ['Tea', 'Coffee'] })),
    () =>
      openaiError(400, {
        message: 'registry.ollama.ai/library/gemma2:2b does not support tools',
        type: 'api_error',
        code: null,
      }),
    () => sse(openaiText(['Tea it is.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const first = await ask(h, token, 'Make me a drink')
  const second = await ask(h, token, 'Tea', first.threadId)
  expect(tokensOf(second.events)).toBe('Tea it is.')
  const retried = fake.received[2]?.body
  expect(retried.tools).toBeUndefined()
  expect(retried.messages.slice(2)).toEqual([
    { role: 'assistant', content: '[I asked the user: Tea or coffee? Options: Tea | Coffee]' },
    { role: 'user', content: 'Tea' },
  ])
})

test.concurrent('an error sent inside the stream before any token is retried (OpenRouter style)', async () => {
  await using fake = new FakeLlm()
  const upstreamDown = { error: { code: 502, message: 'Upstream provider returned an error' } }
  fake.reply(
    () => sse([openaiChunk({ role: 'assistant', content: '' }), `data: ${JSON.stringify(upstreamDown)}\n\n`]),
    () => sse(openaiText(['Recovered.'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const answer = await ask(h, token, 'Hi')
  expect(tokensOf(answer.events)).toBe('Recovered.')
  expect(fake.received).toHaveLength(2)
})

test.concurrent('a text-only model gets a stand-in for an uploaded image instead of a failed answer', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () =>
      openaiError(400, {
        message: 'this model does not support image input',
        type: 'invalid_request_error',
        code: null,
      }),
    () => sse(openaiText(['A chart, you say?'])),
  )
  const { h, token } = await setup(fake)
  await using _ = h
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token, body: {} })).body
  const files = new FormData()
  const pixel = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#08f' } })
    .png()
    .toBuffer()
  files.append('attachments[0]', new File([pixel], 'chart.png'))
  const uploaded = await h.call('POST', `/api/v1/threads/${thread_id}/attachments`, { token, body: files })
  expect(uploaded.status).toBe(201)
  const sent = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
    token,
    body: { text: 'What is this?', attachment_ids: [uploaded.body[0].id] },
  })
  const events = await collect(
    (await openStream(h, `/api/v1/threads/${thread_id}/messages/${sent.body.message_id}/response/stream`, token))
      .events,
  )
  expect(tokensOf(events)).toBe('A chart, you say?')
  expect(JSON.stringify(fake.received[0]?.body)).toContain('image_url')
  const retried = JSON.stringify(fake.received[1]?.body)
  expect(retried).not.toContain('image_url')
  expect(retried).toContain('this model cannot see images')
  expect(retried).toContain('chart.png')
})

// Tool rounds, through the provider's generator with a scripted port (the engine that runs calls is elsewhere).

const search = {
  name: 'docs__search_docs',
  description: 'Search the docs',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
}
const asks: HistoryMessage = { id: 'u1', role: 'user', contents: [{ type: 'text', text: 'Find pages' }] }

test.concurrent("round 2 carries round 1's parallel calls, in order, and their results", async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () =>
      sse(
        openaiToolCalls(
          ['Searching.'],
          [
            { id: 'call_A', name: 'docs__search_docs', arguments: '{"q":"alpha"}' },
            { id: 'call_B', name: 'docs__search_docs', arguments: '{"q":"beta"}' },
          ],
        ),
      ),
    () => sse(openaiText(['Both found.'])),
  )
  const { events, asked } = await answerWithTools('openai', fake, [asks], { offered: [search], rounds: [] }, [
    {
      next: 'continue',
      results: [
        { id: 'call_A', content: 'alpha page', isError: false },
        { id: 'call_B', content: 'no such page', isError: true },
      ],
    },
  ])
  expect(asked).toEqual([
    {
      round: 1,
      calls: [
        { id: 'call_A', name: 'docs__search_docs', arguments: '{"q":"alpha"}' },
        { id: 'call_B', name: 'docs__search_docs', arguments: '{"q":"beta"}' },
      ],
    },
  ])
  const [first, second] = fake.received
  expect(first?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual([
    'user_get_choice',
    'docs__search_docs',
  ])
  expect(first?.body.tools[1]).toEqual({
    type: 'function',
    function: { name: 'docs__search_docs', description: 'Search the docs', parameters: search.inputSchema },
  })
  expect(first?.body.tool_choice).toBeUndefined()
  expect(second?.body.messages).toEqual([
    { role: 'system', content: 'You are a test assistant.' },
    { role: 'user', content: 'Find pages' },
    {
      role: 'assistant',
      content: 'Searching.',
      tool_calls: [
        { id: 'call_A', type: 'function', function: { name: 'docs__search_docs', arguments: '{"q":"alpha"}' } },
        { id: 'call_B', type: 'function', function: { name: 'docs__search_docs', arguments: '{"q":"beta"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_A', content: 'alpha page' },
    { role: 'tool', tool_call_id: 'call_B', content: 'Error: no such page' },
  ])
  const text = events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('')
  expect(text).toBe('Searching.\n\nBoth found.')
})

test.concurrent('the request after a final round says tool_choice none and still defines the tools', async () => {
  await using fake = new FakeLlm()
  fake.reply(
    () => sse(openaiToolCalls([], [{ id: 'call_A', name: 'docs__search_docs', arguments: '{"q":"a"}' }])),
    () => sse(openaiText(['Out of rounds.'])),
  )
  await answerWithTools('openai', fake, [asks], { offered: [search], rounds: [] }, [
    { next: 'final', results: [{ id: 'call_A', content: 'deadline or round limit reached', isError: true }] },
  ])
  const second = fake.received[1]?.body
  expect(second?.tool_choice).toBe('none')
  expect(second?.tools).toHaveLength(2)
  expect(second?.messages.at(-2)).toEqual({
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'docs__search_docs', arguments: '{"q":"a"}' } }],
  })
})

test.concurrent('a later answer describes earlier calls as text, without the approval or the decision', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(openaiText(['Sure.'])))
  const earlier: HistoryMessage = {
    id: 'a1',
    role: 'assistant',
    contents: [
      { type: 'text', text: 'Looking.Deleting.Done.' },
      {
        type: 'user_get_choice',
        tool_use_id: 'approve_x',
        question: 'Allow delete_page on docs?',
        choices: ['Allow', 'Deny'],
      },
    ],
    roundTexts: ['Looking.', 'Deleting.'],
    toolCalls: [
      {
        round: 1,
        position: 0,
        toolUseId: 'call_A',
        modelName: 'docs__search_docs',
        serverName: 'docs',
        toolName: 'search_docs',
        arguments: '{"q":"7"}',
        status: 'ok',
        result: `Page 7 ${'x'.repeat(3000)}`,
        approvalId: null,
      },
      {
        round: 2,
        position: 0,
        toolUseId: 'call_B',
        modelName: 'docs__delete_page',
        serverName: 'docs',
        toolName: 'delete_page',
        arguments: '{"id":"7"}',
        status: 'denied',
        result: 'The thread’s owner denied this call',
        approvalId: 'approve_x',
      },
    ],
  }
  const decision: HistoryMessage = {
    id: 'u2',
    role: 'user',
    contents: [{ type: 'text', text: 'Deny' }],
    decision: true,
  }
  const next: HistoryMessage = { id: 'u3', role: 'user', contents: [{ type: 'text', text: 'What happened?' }] }
  await answerWithTools('openai', fake, [asks, earlier, decision, next], { offered: [search], rounds: [] }, [])
  const cut = `Page 7 ${'x'.repeat(2000 - 'Page 7 '.length)}…`
  expect(fake.received[0]?.body.messages).toEqual([
    { role: 'system', content: 'You are a test assistant.' },
    { role: 'user', content: 'Find pages' },
    {
      role: 'assistant',
      content: [
        'Looking.',
        `[Called search_docs on docs with {"q":"7"} → ${cut}]`,
        'Deleting.',
        '[Called delete_page on docs with {"id":"7"} → denied: The thread’s owner denied this call]',
        'Done.',
      ].join('\n\n'),
    },
    { role: 'user', content: 'What happened?' },
  ])
})
