// Loopback HTTP servers that speak the OpenAI Chat Completions and Anthropic Messages streaming
// protocols byte for byte as their documentation shows them. Each request gets the next scripted
// reply; every request is recorded, with a promise that settles when the client hangs up early.

import { tmpdir } from 'node:os'
import type { EventSourceMessage } from 'eventsource-parser'
import { createGenerator } from '../../src/generation/providers'
import { createWorkerRunner } from '../../src/generation/runner'
import type {
  GeneratorEvent,
  HistoryMessage,
  JobTools,
  ModelSettings,
  ToolCallRequest,
  ToolRoundReply,
} from '../../src/generation/types'
import { silentLogger } from '../../src/shared/log'
import { LocalBlobStore } from '../../src/storage/blobs'
import type { ThreadsModel } from '../../src/threads/model'
import { collect, type Harness, harness, openStream } from './helpers'

export interface Received {
  method: string
  path: string
  headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any
  /** Resolves when the client closes the connection before the reply has ended. */
  hungUp: Promise<void>
}

export type Script = (request: Received) => Response | Promise<Response>

export class FakeLlm implements AsyncDisposable {
  readonly received: Received[] = []
  private readonly scripts: Script[] = []
  private readonly server: ReturnType<typeof Bun.serve>
  private arrivals: (() => void)[] = []

  constructor() {
    // No idle timeout: a stalling upstream stalls until the client gives up, never until Bun's 10 s close it first.
    this.server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      idleTimeout: 0,
      fetch: (request) => this.handle(request),
    })
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`
  }

  /** Queues replies for the next requests, in order. */
  reply(...scripts: Script[]): this {
    this.scripts.push(...scripts)
    return this
  }

  /** Waits until the server has received `count` requests in total. */
  async requests(count: number): Promise<Received[]> {
    while (this.received.length < count) await new Promise<void>((resolve) => this.arrivals.push(resolve))
    return this.received
  }

  private async handle(request: Request): Promise<Response> {
    const text = await request.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {}
    const hungUp = new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()))
    const received: Received = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: request.headers,
      body,
      hungUp,
    }
    this.received.push(received)
    for (const wake of this.arrivals.splice(0)) wake()
    const script = this.scripts.shift()
    if (!script) return Response.json({ error: { message: 'the test scripted no reply' } }, { status: 500 })
    return script(received)
  }

  /** Drops every open connection mid-reply, as a crashing or restarting server would. */
  async crash(): Promise<void> {
    await this.server.stop(true)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.server.stop(true)
  }
}

/** A streamed body the test drives piece by piece: it can end, or be left hanging. */
export class Feed {
  readonly body: ReadableStream<Uint8Array>
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined
  private readonly encoder = new TextEncoder()

  constructor(pieces: string[] = []) {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller
        for (const piece of pieces) controller.enqueue(this.encoder.encode(piece))
      },
    })
  }

  send(...pieces: string[]): void {
    for (const piece of pieces) this.controller?.enqueue(this.encoder.encode(piece))
  }

  end(): void {
    this.controller?.close()
  }

  response(): Response {
    return new Response(this.body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
  }
}

/** A complete event stream, each event written separately so the client reads it token by token. */
export function sse(pieces: string[]): Response {
  const feed = new Feed(pieces)
  feed.end()
  return feed.response()
}

// OpenAI Chat Completions: `data: <chunk>` lines, a usage chunk with no choices, then `data: [DONE]`.

const created = 1_767_225_600

export function openaiChunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
  const chunk = {
    id: 'chatcmpl-fake1',
    object: 'chat.completion.chunk',
    created,
    model: 'test-model',
    system_fingerprint: 'fp_fake',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  }
  return `data: ${JSON.stringify(chunk)}\n\n`
}

export function openaiUsage(): string {
  const usage = { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 }
  const chunk = {
    id: 'chatcmpl-fake1',
    object: 'chat.completion.chunk',
    created,
    model: 'test-model',
    choices: [],
    usage,
  }
  return `data: ${JSON.stringify(chunk)}\n\n`
}

export const openaiDone = 'data: [DONE]\n\n'

export function openaiText(tokens: string[]): string[] {
  return [
    openaiChunk({ role: 'assistant', content: '', refusal: null }),
    ...tokens.map((content) => openaiChunk({ content })),
    openaiChunk({}, 'stop'),
    openaiUsage(),
    openaiDone,
  ]
}

/** Text, then a `user_get_choice` call whose arguments arrive in three pieces. */
export function openaiChoice(tokens: string[], id: string, input: { question: string; choices: string[] }): string[] {
  const json = JSON.stringify(input)
  const third = Math.ceil(json.length / 3)
  const pieces = [json.slice(0, third), json.slice(third, 2 * third), json.slice(2 * third)]
  return [
    openaiChunk({ role: 'assistant', content: null, refusal: null }),
    ...tokens.map((content) => openaiChunk({ content })),
    openaiChunk({
      tool_calls: [{ index: 0, id, type: 'function', function: { name: 'user_get_choice', arguments: '' } }],
    }),
    ...pieces.map((part) => openaiChunk({ tool_calls: [{ index: 0, function: { arguments: part } }] })),
    openaiChunk({}, 'tool_calls'),
    openaiUsage(),
    openaiDone,
  ]
}

/** A scripted tool call: its vendor ID, the tool's name and its arguments as JSON text. */
export interface ScriptedCall {
  id: string
  name: string
  arguments: string
}

/** Text, then tool calls in parallel, each call's arguments in two pieces and the calls' pieces interleaved. */
export function openaiToolCalls(tokens: string[], calls: ScriptedCall[]): string[] {
  const halves = calls.map((call) => {
    const half = Math.ceil(call.arguments.length / 2)
    return [call.arguments.slice(0, half), call.arguments.slice(half)]
  })
  return [
    openaiChunk({ role: 'assistant', content: null, refusal: null }),
    ...tokens.map((content) => openaiChunk({ content })),
    ...calls.map((call, index) =>
      openaiChunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    ),
    ...[0, 1].flatMap((piece) =>
      halves.map((parts, index) => openaiChunk({ tool_calls: [{ index, function: { arguments: parts[piece] } }] })),
    ),
    openaiChunk({}, 'tool_calls'),
    openaiUsage(),
    openaiDone,
  ]
}

export function openaiError(
  status: number,
  error: { message: string; type: string; code: string | null },
  headers: Record<string, string> = {},
): Response {
  return Response.json({ error: { ...error, param: null } }, { status, headers })
}

// Anthropic Messages: named events, `ping`s in between, `message_stop` at the end.

export function anthropicEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
}

function messageStart(): string {
  return anthropicEvent('message_start', {
    message: {
      id: 'msg_fake01',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'test-model',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1 },
    },
  })
}

function messageEnd(stopReason: string): string[] {
  return [
    anthropicEvent('message_delta', {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 15 },
    }),
    anthropicEvent('message_stop', {}),
  ]
}

export function anthropicTextStart(): string[] {
  return [
    messageStart(),
    anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    anthropicEvent('ping', {}),
  ]
}

export function anthropicTextDelta(text: string, index = 0): string {
  return anthropicEvent('content_block_delta', { index, delta: { type: 'text_delta', text } })
}

export function anthropicText(tokens: string[]): string[] {
  return [
    ...anthropicTextStart(),
    ...tokens.map((token) => anthropicTextDelta(token)),
    anthropicEvent('content_block_stop', { index: 0 }),
    ...messageEnd('end_turn'),
  ]
}

/** Text in block 0, then a `tool_use` block whose input arrives as `input_json_delta` pieces. */
export function anthropicChoice(
  tokens: string[],
  id: string,
  input: { question: string; choices: string[] },
): string[] {
  const json = JSON.stringify(input)
  const half = Math.ceil(json.length / 2)
  return [
    ...anthropicTextStart(),
    ...tokens.map((token) => anthropicTextDelta(token)),
    anthropicEvent('content_block_stop', { index: 0 }),
    anthropicEvent('content_block_start', {
      index: 1,
      content_block: { type: 'tool_use', id, name: 'user_get_choice', input: {} },
    }),
    anthropicEvent('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }),
    anthropicEvent('content_block_delta', {
      index: 1,
      delta: { type: 'input_json_delta', partial_json: json.slice(0, half) },
    }),
    anthropicEvent('content_block_delta', {
      index: 1,
      delta: { type: 'input_json_delta', partial_json: json.slice(half) },
    }),
    anthropicEvent('content_block_stop', { index: 1 }),
    ...messageEnd('tool_use'),
  ]
}

/** Text in block 0 (when there is any), then one `tool_use` block per call, each input in two pieces. */
export function anthropicToolUse(tokens: string[], calls: ScriptedCall[]): string[] {
  const first = tokens.length > 0 ? 1 : 0
  const text =
    tokens.length > 0
      ? [...tokens.map((token) => anthropicTextDelta(token)), anthropicEvent('content_block_stop', { index: 0 })]
      : []
  return [
    ...(tokens.length > 0 ? anthropicTextStart() : [messageStart()]),
    ...text,
    ...calls.flatMap((call, offset) => {
      const index = first + offset
      const half = Math.ceil(call.arguments.length / 2)
      return [
        anthropicEvent('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
        }),
        anthropicEvent('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: call.arguments.slice(0, half) },
        }),
        anthropicEvent('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: call.arguments.slice(half) },
        }),
        anthropicEvent('content_block_stop', { index }),
      ]
    }),
    ...messageEnd('tool_use'),
  ]
}

export function anthropicStreamError(type: string, message: string): string {
  return anthropicEvent('error', { error: { type, message } })
}

export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json({ type: 'error', error: { type, message }, request_id: 'req_fake01' }, { status, headers })
}

export const testApiKey = 'sk-test-0123456789abcdef-secret'

/** Settings pointing a provider at a fake server: quick timeouts and retries, so tests stay fast. */
export function settingsFor(
  provider: 'openai' | 'anthropic',
  fake: FakeLlm,
  overrides: Partial<ModelSettings> = {},
): ModelSettings {
  return {
    provider,
    model: 'test-model',
    baseUrl: provider === 'openai' ? `${fake.url}/v1` : fake.url,
    apiKey: testApiKey,
    extraHeaders: { 'X-Title': 'Threadhouse tests' },
    systemPrompt: 'You are a test assistant.',
    maxOutputTokens: 256,
    contextTokens: 100_000,
    // The product's default (LLM_TIMEOUT_MS): a test that is not about the idle timeout must never meet it. The fake
    // upstream shares its event loop with every test of its file, and a CI run at load 12 once kept a reply from
    // the worker for over 10 s, which was retried and took the next test step's scripted reply.
    timeoutMs: 120_000,
    maxAttempts: 3,
    retryBaseDelayMs: 1,
    ...overrides,
  }
}

/**
 * One answer of a provider against the fake server, in this thread, with tools: the port answers each round with the
 * next reply given. The engine that runs the calls is not needed to see what the provider is sent.
 */
export async function answerWithTools(
  provider: 'openai' | 'anthropic',
  fake: FakeLlm,
  history: HistoryMessage[],
  tools: JobTools,
  replies: ToolRoundReply[],
): Promise<{ events: GeneratorEvent[]; asked: { round: number; calls: ToolCallRequest[] }[] }> {
  const generator = await createGenerator(settingsFor(provider, fake), new LocalBlobStore(tmpdir()))
  const asked: { round: number; calls: ToolCallRequest[] }[] = []
  const port = {
    async round(round: number, calls: ToolCallRequest[]): Promise<ToolRoundReply> {
      asked.push({ round, calls })
      const reply = replies.shift()
      if (!reply) throw new Error('the test scripted no round')
      return reply
    },
  }
  const events: GeneratorEvent[] = []
  const request = { history, signal: new AbortController().signal, tools: { ...tools, port } }
  for await (const event of generator.generate(request)) events.push(event)
  return { events, asked }
}

// Driving a thread through the API, the way a client would.

export interface Answer {
  threadId: string
  messageId: string
  events: EventSourceMessage[]
}

/** Sends a message (a new thread when `threadId` is absent) and reads its whole response stream. */
export async function ask(h: Harness, token: string, text: string, threadId?: string): Promise<Answer> {
  const sent = threadId
    ? await h.call('POST', `/api/v1/threads/${threadId}/messages`, { token, body: { text } })
    : await h.call('POST', '/api/v1/threads', { token, body: { text } })
  if (sent.status !== 201) throw new Error(`sending failed: ${sent.status} ${JSON.stringify(sent.body)}`)
  const thread: string = threadId ?? sent.body.thread_id
  const message: string = sent.body.message_id
  const stream = await openStream(h, `/api/v1/threads/${thread}/messages/${message}/response/stream`, token)
  return { threadId: thread, messageId: message, events: await collect(stream.events) }
}

/** The event types and data of a stream, without ids, for one `toEqual`. */
export function eventsOf(events: EventSourceMessage[]): { event: string | undefined; data: unknown }[] {
  return events.map((event) => ({ event: event.event, data: JSON.parse(event.data) }))
}

export async function messagesOf(h: Harness, token: string, threadId: string): Promise<ThreadsModel.message[]> {
  const reply = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token })
  return reply.body.data
}

export async function stateOf(h: Harness, token: string, threadId: string): Promise<string> {
  return (await h.call('GET', `/api/v1/threads/${threadId}`, { token })).body.state
}

/**
 * A fresh app whose generator is the real worker running this provider against the fake server, and a user. Other
 * harness options (a tool caller, configuration) are passed on.
 */
export async function providerHarness(
  provider: 'openai' | 'anthropic',
  fake: FakeLlm,
  overrides: Partial<ModelSettings> = {},
  options: Omit<NonNullable<Parameters<typeof harness>[0]>, 'runner'> = {},
): Promise<{ h: Harness; token: string }> {
  const h = await harness({
    ...options,
    runner: (blobs) => createWorkerRunner(settingsFor(provider, fake, overrides), blobs, silentLogger),
  })
  const user = await h.user()
  return { h, token: user.token }
}

/** The message of the stream's final `error` event, if it ended with one. */
export function errorOf(events: { event?: string; data: string }[]): string | undefined {
  const last = events.at(-1)
  return last?.event === 'error' ? JSON.parse(last.data).message : undefined
}
