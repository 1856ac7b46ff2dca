// The tool loop of a model's answer (providers/model.ts), against a scripted model and a scripted port: what each
// request offers and carries, what the generator yields, and when it asks the port.
import { expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { type LoadedMessage, loadHistory, transcriptEntry } from '../src/generation/providers/conversation'
import { ProviderFailure } from '../src/generation/providers/failures'
import {
  type ChatModel,
  choiceAlone,
  type ModelRequest,
  modelGenerator,
  type ReplyEvent,
} from '../src/generation/providers/model'
import type {
  GeneratorEvent,
  HistoryMessage,
  ModelSettings,
  OfferedTool,
  ToolCallRequest,
  ToolPort,
  ToolRound,
  ToolRoundReply,
} from '../src/generation/types'
import { LocalBlobStore } from '../src/storage/blobs'

const noFiles = new LocalBlobStore(tmpdir())

const settings: ModelSettings = {
  provider: 'openai',
  model: 'test-model',
  extraHeaders: {},
  systemPrompt: 'You are a test assistant.',
  maxOutputTokens: 256,
  contextTokens: 100_000,
  timeoutMs: 10_000,
  maxAttempts: 1,
  retryBaseDelayMs: 1,
}

const search: OfferedTool = {
  name: 'docs__search',
  description: 'Search the docs',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
}

const question: HistoryMessage = { id: 'u1', role: 'user', contents: [{ type: 'text', text: 'Find the page' }] }

const usage = (inputTokens: number): ReplyEvent => ({
  type: 'usage',
  usage: { inputTokens, outputTokens: 5, cachedInputTokens: 0 },
})

const call = (id: string, q: string): ToolCallRequest => ({
  id,
  name: 'docs__search',
  arguments: JSON.stringify({ q }),
})

/** Replies in order, each a list of events or a failure to throw; every request is kept. */
function scripted(...replies: (ReplyEvent[] | ProviderFailure)[]): ChatModel & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    requests,
    async *reply(request) {
      requests.push(structuredClone(request))
      const next = replies.shift()
      if (!next) throw new Error('the test scripted no reply')
      if (next instanceof ProviderFailure) throw next
      yield* next
    },
  }
}

/** A port answering each round in turn; it records the rounds asked, and what had been yielded by then. */
function port(
  yielded: GeneratorEvent[],
  ...replies: ToolRoundReply[]
): ToolPort & { asked: { round: number; calls: ToolCallRequest[]; seen: number }[] } {
  const asked: { round: number; calls: ToolCallRequest[]; seen: number }[] = []
  return {
    asked,
    async round(round, calls) {
      asked.push({ round, calls, seen: yielded.length })
      const reply = replies.shift()
      if (!reply) throw new Error('the test scripted no round')
      return reply
    },
  }
}

async function run(
  model: ChatModel,
  tools: { offered?: OfferedTool[]; rounds?: ToolRound[]; final?: boolean; question?: string } | null,
  replies: ToolRoundReply[] = [],
  history: HistoryMessage[] = [question],
) {
  const events: GeneratorEvent[] = []
  const toolPort = port(events, ...replies)
  const generator = modelGenerator(model, settings, noFiles)
  const request = {
    history,
    signal: new AbortController().signal,
    ...(tools ? { tools: { offered: [search], rounds: [], ...tools, port: toolPort } } : {}),
  }
  for await (const event of generator.generate(request)) events.push(event)
  return { events, asked: toolPort.asked }
}

const textOf = (events: GeneratorEvent[]) =>
  events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('')

test('two rounds of calls, then the answer: each request carries the rounds before it', async () => {
  const model = scripted(
    [{ type: 'text', text: 'Looking.' }, { type: 'tool_calls', calls: [call('c1', 'a')] }, usage(10)],
    [{ type: 'tool_calls', calls: [call('c2', 'b'), call('c3', 'c')] }, usage(20)],
    [{ type: 'text', text: 'Found it.' }, usage(30)],
  )
  const { events, asked } = await run(model, {}, [
    { next: 'continue', results: [{ id: 'c1', content: 'one', isError: false }] },
    {
      next: 'continue',
      results: [
        { id: 'c2', content: 'two', isError: false },
        { id: 'c3', content: 'failed', isError: true },
      ],
    },
  ])
  expect(asked.map(({ round, calls }) => ({ round, calls }))).toEqual([
    { round: 1, calls: [call('c1', 'a')] },
    { round: 2, calls: [call('c2', 'b'), call('c3', 'c')] },
  ])
  expect(model.requests.map((request) => [request.toolChoice, request.tools])).toEqual([
    ['auto', [search]],
    ['auto', [search]],
    ['auto', [search]],
  ])
  expect(model.requests[2]?.turns).toEqual([
    { role: 'user', parts: [{ type: 'text', text: 'Find the page' }] },
    { role: 'assistant', text: 'Looking.', calls: [call('c1', 'a')] },
    { role: 'user', parts: [], results: [{ id: 'c1', content: 'one', isError: false }] },
    { role: 'assistant', text: '', calls: [call('c2', 'b'), call('c3', 'c')] },
    {
      role: 'user',
      parts: [],
      results: [
        { id: 'c2', content: 'two', isError: false },
        { id: 'c3', content: 'failed', isError: true },
      ],
    },
  ])
  expect(textOf(events)).toBe('Looking.\n\nFound it.')
})

test('usage is yielded once per round, before the port is asked', async () => {
  const model = scripted(
    [{ type: 'tool_calls', calls: [call('c1', 'a')] }, usage(10)],
    [{ type: 'text', text: 'Done.' }, usage(20)],
  )
  const { events, asked } = await run(model, {}, [
    { next: 'continue', results: [{ id: 'c1', content: 'one', isError: false }] },
  ])
  const usages = events.flatMap((event) => (event.type === 'usage' ? [[event.usage.inputTokens, event.of]] : []))
  expect(usages).toEqual([
    [10, 'answer'],
    [20, 'answer'],
  ])
  // The first round's usage was out before its calls were asked for.
  expect(asked[0]?.seen).toBe(1)
  expect(events[0]).toMatchObject({ type: 'usage', usage: { inputTokens: 10 } })
})

test('rounds are separated in the text only when both wrote some', async () => {
  const model = scripted(
    [{ type: 'tool_calls', calls: [call('c1', 'a')] }],
    [
      { type: 'text', text: 'First' },
      { type: 'text', text: ' part.' },
      { type: 'tool_calls', calls: [call('c2', 'b')] },
    ],
    [{ type: 'text', text: 'Second.' }],
  )
  const { events } = await run(model, {}, [
    { next: 'continue', results: [{ id: 'c1', content: 'one', isError: false }] },
    { next: 'continue', results: [{ id: 'c2', content: 'two', isError: false }] },
  ])
  expect(events.filter((event) => event.type === 'text').map((event) => (event as { text: string }).text)).toEqual([
    'First',
    ' part.',
    '\n\n',
    'Second.',
  ])
})

test('a pause ends the answer at once, without another request', async () => {
  const model = scripted([
    { type: 'text', text: 'I will delete it.' },
    { type: 'tool_calls', calls: [call('c1', 'a')] },
  ])
  const { events, asked } = await run(model, {}, [{ next: 'pause' }])
  expect(asked).toHaveLength(1)
  expect(model.requests).toHaveLength(1)
  expect(events).toEqual([{ type: 'text', text: 'I will delete it.' }])
})

test('final asks once more with tool_choice none, and calls asked for then are not run', async () => {
  const model = scripted(
    [{ type: 'tool_calls', calls: [call('c1', 'a')] }],
    [
      { type: 'text', text: 'Out of time.' },
      { type: 'tool_calls', calls: [call('c2', 'b')] },
    ],
  )
  const { events, asked } = await run(model, {}, [
    { next: 'final', results: [{ id: 'c1', content: 'limit reached', isError: true }] },
  ])
  expect(model.requests.map((request) => request.toolChoice)).toEqual(['auto', 'none'])
  // The tools stay defined: the earlier calls name them.
  expect(model.requests[1]?.tools).toEqual([search])
  expect(asked).toHaveLength(1)
  expect(textOf(events)).toBe('Out of time.')
})

test('an answer that starts final sends tool_choice none on its only request', async () => {
  const model = scripted([{ type: 'text', text: 'Sorry.' }])
  await run(model, {
    final: true,
    rounds: [{ text: '', calls: [call('c1', 'a')], results: [{ id: 'c1', content: 'x', isError: true }] }],
  })
  expect(model.requests.map((request) => request.toolChoice)).toEqual(['none'])
})

test('a resumed answer sends its rounds but does not yield their text again, and numbers on from them', async () => {
  const rounds: ToolRound[] = [
    { text: 'Earlier words.', calls: [call('c1', 'a')], results: [{ id: 'c1', content: 'one', isError: false }] },
  ]
  const model = scripted(
    [
      { type: 'text', text: 'Next.' },
      { type: 'tool_calls', calls: [call('c2', 'b')] },
    ],
    [{ type: 'text', text: 'End.' }],
  )
  const { events, asked } = await run(model, { rounds }, [
    { next: 'continue', results: [{ id: 'c2', content: 'two', isError: false }] },
  ])
  expect(asked.map((each) => each.round)).toEqual([2])
  expect(textOf(events)).toBe('Next.\n\nEnd.')
  expect(model.requests[0]?.turns.slice(1)).toEqual([
    { role: 'assistant', text: 'Earlier words.', calls: [call('c1', 'a')] },
    { role: 'user', parts: [], results: [{ id: 'c1', content: 'one', isError: false }] },
  ])
})

test("the person's own words instead of Allow follow the rounds of the question they answer", async () => {
  const rounds: ToolRound[] = [
    { text: '', calls: [call('c1', 'a')], results: [{ id: 'c1', content: 'denied', isError: true }] },
  ]
  const words: HistoryMessage = { id: 'u2', role: 'user', contents: [{ type: 'text', text: 'Search b instead' }] }
  const model = scripted([{ type: 'text', text: 'Fine.' }])
  await run(model, { rounds, question: 'u1' }, [], [question, words])
  expect(model.requests[0]?.turns).toEqual([
    { role: 'user', parts: [{ type: 'text', text: 'Find the page' }] },
    { role: 'assistant', text: '', calls: [call('c1', 'a')] },
    // One user turn: the results first, as both vendors want them, then the person's words.
    {
      role: 'user',
      parts: [{ type: 'text', text: 'Search b instead' }],
      results: [{ id: 'c1', content: 'denied', isError: true }],
    },
  ])
})

test('a choice asked beside other calls is told to wait, and the other calls run', async () => {
  const choice = { type: 'user_get_choice' as const, tool_use_id: 'ch1', question: 'Which?', choices: ['A', 'B'] }
  const model = scripted(
    [
      { type: 'tool_calls', calls: [call('c1', 'a')] },
      { type: 'block', block: choice },
    ],
    [{ type: 'text', text: 'Done.' }],
  )
  const { events, asked } = await run(model, {}, [
    { next: 'continue', results: [{ id: 'c1', content: 'one', isError: false }] },
  ])
  expect(asked[0]?.calls).toEqual([call('c1', 'a')])
  expect(events.some((event) => event.type === 'block')).toBe(false)
  expect(model.requests[1]?.turns.slice(1)).toEqual([
    {
      role: 'assistant',
      text: '',
      calls: [
        call('c1', 'a'),
        { id: 'ch1', name: 'user_get_choice', arguments: '{"question":"Which?","choices":["A","B"]}' },
      ],
    },
    {
      role: 'user',
      parts: [],
      results: [
        { id: 'c1', content: 'one', isError: false },
        { id: 'ch1', content: choiceAlone, isError: true },
      ],
    },
  ])
})

test('a choice asked alone ends the answer with its block, as without tools', async () => {
  const choice = { type: 'user_get_choice' as const, tool_use_id: 'ch1', question: 'Which?', choices: ['A', 'B'] }
  const model = scripted([
    { type: 'text', text: 'Hm.' },
    { type: 'block', block: choice },
  ])
  const { events, asked } = await run(model, {})
  expect(asked).toHaveLength(0)
  expect(events).toEqual([
    { type: 'text', text: 'Hm.' },
    { type: 'block', block: choice },
  ])
})

test('a model that refuses tools is asked again without either kind, and later answers too', async () => {
  const refused = new ProviderFailure('tools_unsupported', 'The model does not support tools.')
  const model = scripted(refused, [{ type: 'text', text: 'Plain.' }], [{ type: 'text', text: 'Again.' }])
  const generator = modelGenerator(model, settings, noFiles)
  const toolPort = port([])
  for (const _ of [1, 2]) {
    const tools = { offered: [search], rounds: [], port: toolPort }
    for await (const _event of generator.generate({
      history: [question],
      signal: new AbortController().signal,
      tools,
    })) {
    }
  }
  expect(model.requests.map((request) => [request.choiceTool, request.tools.length])).toEqual([
    ['offer', 1],
    ['withhold', 0],
    ['withhold', 0],
  ])
})

test('a server that refuses tool_choice none gets the last request with the rounds written out and no tools', async () => {
  const refused = new ProviderFailure('tools_unsupported', 'tool_choice none is not supported')
  const model = scripted([{ type: 'tool_calls', calls: [call('c1', 'a')] }], refused, [{ type: 'text', text: 'Ok.' }])
  await run(model, {}, [{ next: 'final', results: [{ id: 'c1', content: 'limit reached', isError: true }] }])
  expect(model.requests.map((request) => [request.choiceTool, request.toolChoice, request.tools.length])).toEqual([
    ['offer', 'auto', 1],
    ['offer', 'none', 1],
    ['withhold', 'none', 0],
  ])
  expect(model.requests[2]?.turns).toEqual([
    { role: 'user', parts: [{ type: 'text', text: 'Find the page' }] },
    { role: 'assistant', text: '[Called docs__search with {"q":"a"} → error: limit reached]' },
  ])
})

test('without tools, calls in a reply are not run and nothing waits', async () => {
  const model = scripted([
    { type: 'text', text: 'Hi.' },
    { type: 'tool_calls', calls: [call('c1', 'a')] },
  ])
  const { events } = await run(model, null)
  expect(model.requests[0]?.tools).toEqual([])
  expect(textOf(events)).toBe('Hi.')
})

test('results that outgrow the context give way oldest first, and an answer that cannot fit ends', async () => {
  const small = { ...settings, contextTokens: 1200, maxOutputTokens: 100 }
  const big = (id: string) => ({ id, content: 'r'.repeat(2400), isError: false })
  const model = scripted(
    [{ type: 'tool_calls', calls: [call('c1', 'a')] }],
    [{ type: 'tool_calls', calls: [call('c2', 'b')] }],
    [{ type: 'text', text: 'Done.' }],
  )
  const toolPort = port([], { next: 'continue', results: [big('c1')] }, { next: 'continue', results: [big('c2')] })
  const tools = { offered: [search], rounds: [], port: toolPort }
  const generator = modelGenerator(model, small, noFiles)
  for await (const _ of generator.generate({ history: [question], signal: new AbortController().signal, tools })) {
  }
  const results = (request: ModelRequest | undefined) =>
    request?.turns.flatMap((turn) =>
      turn.role === 'user' ? (turn.results ?? []).map((result) => result.content.slice(0, 20)) : [],
    )
  expect(results(model.requests[1])).toEqual(['rrrrrrrrrrrrrrrrrrrr'])
  expect(results(model.requests[2])).toEqual(['[result left out to ', 'rrrrrrrrrrrrrrrrrrrr'])
  expect(model.requests.map((request) => request.toolChoice)).toEqual(['auto', 'auto', 'auto'])

  const tight = scripted([{ type: 'text', text: 'Sorry.' }])
  const rounds = [{ text: '', calls: [call('c1', 'a'.repeat(8000))], results: [big('c1')] }]
  const cramped = { offered: [search], rounds, port: port([]) }
  for await (const _ of modelGenerator(tight, small, noFiles).generate({
    history: [question],
    signal: new AbortController().signal,
    tools: cramped,
  })) {
  }
  expect(tight.requests[0]?.toolChoice).toBe('none')
})

test("older answers' calls become notes that summaries keep, and only approval questions are dropped", async () => {
  const called = {
    round: 1,
    position: 0,
    toolUseId: 'c1',
    modelName: 'docs__search',
    serverName: 'docs',
    toolName: 'search',
    arguments: '{"q":"a"}',
    status: 'ok' as const,
    result: 'page a',
    approvalId: null,
  }
  const asked = { type: 'user_get_choice' as const, tool_use_id: 'ch1', question: 'Which?', choices: ['A', 'B'] }
  // Its stored text does not start with its rounds' texts (a round whose text was not kept): the notes go first.
  const answer: HistoryMessage = {
    id: 'a1',
    role: 'assistant',
    contents: [{ type: 'text', text: 'All done.' }, asked],
    toolCalls: [called],
    roundTexts: ['Searching.'],
  }
  const [loaded] = await loadHistory([answer], 'inline', noFiles)
  expect(loaded?.parts).toEqual([
    { type: 'text', text: '[Called search on docs with {"q":"a"} → page a]' },
    { type: 'text', text: 'All done.' },
  ])
  expect(loaded?.choice).toEqual(asked)
  expect(transcriptEntry(loaded as LoadedMessage)).toBe(
    'Assistant: [Called search on docs with {"q":"a"} → page a]\nAll done.\n[I asked the user: Which? Options: A | B]',
  )
})
