// The generator interface every provider implements, and the messages between the main thread and
// the generation worker.
import type { BlobLocation } from '../storage/blobs'
import type { ThreadsModel } from '../threads/model'

/** What a generator needs to read an attachment; resolved on the main thread from a block's attachment_id. */
export interface AttachmentFile {
  filename: string
  /** The sniffed media type, such as image/png, application/pdf or text/markdown. */
  mediaType: string
  /** The bytes' key in the blob store (for images, the scaled copy when there is one). */
  key: string
}

/** Where a tool call stands (tool-calls.table.ts stores these). */
export type ToolCallStatus =
  | 'running'
  | 'ok'
  | 'error'
  | 'timeout'
  | 'refused'
  | 'awaiting_approval'
  | 'allowed'
  | 'denied'
  | 'unknown'

/** A tool call of an earlier answer, as later prompts describe it. */
export interface HistoryToolCall {
  round: number
  /** Its place among its round's calls. */
  position: number
  toolUseId: string
  /** The name the model called it by. */
  modelName: string
  serverName: string
  toolName: string
  /** The arguments as the model wrote them (JSON text). */
  arguments: string
  status: ToolCallStatus
  /** What the model was told. */
  result: string | null
  /** The `tool_use_id` of the choice block that asked the thread's owner about it. */
  approvalId: string | null
}

export interface HistoryMessage {
  id: string
  role: 'user' | 'assistant' | 'summary'
  contents: ThreadsModel.contentBlock[]
  /** The files behind this message's `image` and `document` blocks, by attachment_id. */
  attachments?: Record<string, AttachmentFile>
  /** An assistant message's tool calls, by round and position. */
  toolCalls?: HistoryToolCall[]
  /** An assistant message with tool calls: what it wrote before each of its rounds' calls, in round order. */
  roundTexts?: string[]
  /** A user message that decided an approval with exactly "Allow" or "Deny": left out of prompts. */
  decision?: true
}

/** A tool an answer's model is offered, under the name the model calls it by. */
export interface OfferedTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
}

/** A tool call the model asked for: `id` cleaned by toolUseId, `arguments` the raw JSON text it wrote. */
export interface ToolCallRequest {
  id: string
  name: string
  arguments: string
}

export interface ToolCallResult {
  id: string
  content: string
  isError: boolean
}

/** One reply that asked for tools: its text, its calls and what they answered. */
export interface ToolRound {
  text: string
  calls: ToolCallRequest[]
  results: ToolCallResult[]
}

/** What the model is told after a round of calls, and what the generator does next. */
export type ToolRoundReply =
  | { next: 'continue'; results: ToolCallResult[] }
  /** Rounds or the deadline are spent: one more request, with `tool_choice` none. */
  | { next: 'final'; results: ToolCallResult[] }
  /** A call waits for a person: the generator ends now (done). */
  | { next: 'pause' }

/**
 * The tools of one answer: those offered, the rounds already done (a continuation, or a takeover), and whether the
 * next request is the last.
 */
export interface JobTools {
  offered: OfferedTool[]
  rounds: ToolRound[]
  final?: boolean
  /**
   * The user message the rounds answer: they follow it in the prompt, and what the person wrote after it (words other
   * than Allow or Deny) follows them. Absent: the rounds follow the whole history.
   */
  question?: string
}

/** How the generator asks the main thread to run a round of calls (worker.ts posts `tool_calls`). */
export interface ToolPort {
  round(round: number, calls: ToolCallRequest[], signal: AbortSignal): Promise<ToolRoundReply>
}

export interface GenerationRequest {
  history: HistoryMessage[]
  signal: AbortSignal
  /** The thread's own instructions, added to the system prompt (the echo responder ignores them). */
  instructions?: string
  /** Told of every request to the provider made again after a transient failure, with the failure's kind. */
  retried?: (kind: string) => void
  /** The answer's tools and the way to call them; absent: no tool but the choice tool. */
  tools?: JobTools & { port: ToolPort }
}

/** Tokens one request to a provider used, as the provider reported them. */
export interface TokenUsage {
  /** Every token of the prompt, cached ones included. */
  inputTokens: number
  outputTokens: number
  /** The part of `inputTokens` read from the provider's prompt cache. */
  cachedInputTokens: number
}

/** Which request a provider's usage report is for: the answer itself, or the summary written before it. */
export type UsageOf = 'answer' | 'summary'

/**
 * Text arrives token by token; other content blocks (such as `user_get_choice`) arrive whole. A
 * `summary` replaces the named older messages of the history with one `summary` message. `usage` is what the
 * provider reported for one request (the echo responder and providers that report nothing send none: the engine
 * estimates then, see generation/usage.ts).
 */
export type GeneratorEvent =
  | { type: 'text'; text: string }
  | { type: 'block'; block: ThreadsModel.contentBlock }
  | { type: 'summary'; text: string; replaces: string[] }
  | { type: 'usage'; usage: TokenUsage; of: UsageOf }

export interface Generator {
  generate(request: GenerationRequest): AsyncIterable<GeneratorEvent>
}

/** How a real model is reached and used; see README, "AI providers". */
export interface ModelSettings {
  provider: 'openai' | 'anthropic'
  model: string
  /** The vendor's own endpoint when absent. */
  baseUrl?: string
  apiKey?: string
  extraHeaders: Record<string, string>
  systemPrompt: string
  maxOutputTokens: number
  /** The model's context window in tokens: older turns are summarised to stay within it. */
  contextTokens: number
  /** The longest wait for the provider to start answering or to send the next piece. */
  timeoutMs: number
  /** Attempts per request, the first included, when the provider fails transiently. */
  maxAttempts: number
  /** Wait before the first retry; doubled for each later one. */
  retryBaseDelayMs: number
}

export type ProviderSettings = { provider: 'echo'; echoTokenDelayMs: number } | ModelSettings

/**
 * The models a worker runs, by configured ID (src/models/catalogue.ts). A worker given one model's settings alone
 * runs them for every job, whatever model it names (tests, and the LLM_* list of one): that one is under `anyModel`.
 */
export type WorkerModels = Record<string, ProviderSettings>
export const anyModel = '*'

/** The model an answer is asked of and the thread's instructions, resolved when the answer is prepared. */
export interface JobModel {
  /** A configured model's ID. */
  model: string
  instructions: string | null
  /** The tools the answer may call; absent: none. */
  tools?: JobTools
}

/** Resolves an answer's model as the engine prepares it (src/models/ implements it; see models/choice.ts). */
export interface AnswerModels {
  prepare(threadId: string, messageId: string): Promise<JobModel>
}

export type ToWorker =
  /** Once, first: every model's settings by ID, and where attachments' bytes are (a store the worker opens itself). */
  | { type: 'init'; models: WorkerModels; blobs: BlobLocation }
  /** One answer; its generator is made for `model` on first use and kept. */
  | {
      type: 'start'
      jobId: string
      history: HistoryMessage[]
      model?: string
      instructions?: string
      tools?: JobTools
    }
  | { type: 'cancel'; jobId: string }
  /** What the main thread answered a job's `tool_calls` with. */
  | { type: 'tool_results'; jobId: string; round: number; reply: ToolRoundReply }

export type FromWorker =
  | { type: 'token'; jobId: string; text: string }
  | { type: 'block'; jobId: string; block: ThreadsModel.contentBlock }
  | { type: 'summary'; jobId: string; text: string; replaces: string[] }
  | { type: 'usage'; jobId: string; usage: TokenUsage; of: UsageOf }
  | { type: 'done'; jobId: string }
  /** `kind`: what failed (providers/failures.ts FailureKind, or `unexpected`), for the operators' metrics. */
  | { type: 'error'; jobId: string; message: string; kind: string }
  | { type: 'cancelled'; jobId: string }
  /** A request to the provider was made again after a transient failure of this kind. */
  | { type: 'retry'; jobId: string; kind: string }
  /** What went wrong inside the generator, for the server log (the user gets a plain sentence). */
  | { type: 'log'; jobId: string; message: string }
  /** The model asked for tool calls: the generator waits for `tool_results`. */
  | { type: 'tool_calls'; jobId: string; round: number; calls: ToolCallRequest[] }

/** Receives one job's output, in order. Exactly one of done, error or cancelled ends it. */
export interface JobHandlers {
  token(text: string): void
  block(block: ThreadsModel.contentBlock): void
  /** The history was compacted: store `text` as a summary and deactivate `replaces`. */
  summary(text: string, replaces: string[]): void
  /** A provider reported what one request used (the answer's, or the summary's before it); added up by the engine. */
  usage?(usage: TokenUsage, of: UsageOf): void
  done(): void
  /** `kind` says what failed, where the runner knows (providers/failures.ts FailureKind), for the metrics. */
  error(message: string, kind?: string): void
  cancelled(): void
  /** A request to the provider was made again after a transient failure of this kind (the metrics count these). */
  retried?(kind: string): void
  /** Resolves what the model is told; a rejection is answered `final` with every call an error. */
  toolCalls?(round: number, calls: ToolCallRequest[]): Promise<ToolRoundReply>
}

/** Runs generation jobs somewhere (a Bun Worker in production) and reports back on the main thread. */
export interface GenerationRunner {
  /** `model` names the configured model to ask (and carries the thread's instructions); absent: the only one. */
  run(jobId: string, history: HistoryMessage[], handlers: JobHandlers, model?: JobModel): void
  cancel(jobId: string): void
  close(): Promise<void>
}
