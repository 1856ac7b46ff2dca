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

export interface HistoryMessage {
  id: string
  role: 'user' | 'assistant' | 'summary'
  contents: ThreadsModel.contentBlock[]
  /** The files behind this message's `image` and `document` blocks, by attachment_id. */
  attachments?: Record<string, AttachmentFile>
}

export interface GenerationRequest {
  history: HistoryMessage[]
  signal: AbortSignal
  /** The thread's own instructions, added to the system prompt (the echo responder ignores them). */
  instructions?: string
  /** Told of every request to the provider made again after a transient failure, with the failure's kind. */
  retried?: (kind: string) => void
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
}

/** Resolves an answer's model as the engine prepares it (src/models/ implements it; see models/choice.ts). */
export interface AnswerModels {
  prepare(threadId: string, messageId: string): Promise<JobModel>
}

export type ToWorker =
  /** Once, first: every model's settings by ID, and where attachments' bytes are (a store the worker opens itself). */
  | { type: 'init'; models: WorkerModels; blobs: BlobLocation }
  /** One answer; its generator is made for `model` on first use and kept. */
  | { type: 'start'; jobId: string; history: HistoryMessage[]; model?: string; instructions?: string }
  | { type: 'cancel'; jobId: string }

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
}

/** Runs generation jobs somewhere (a Bun Worker in production) and reports back on the main thread. */
export interface GenerationRunner {
  /** `model` names the configured model to ask (and carries the thread's instructions); absent: the only one. */
  run(jobId: string, history: HistoryMessage[], handlers: JobHandlers, model?: JobModel): void
  cancel(jobId: string): void
  close(): Promise<void>
}
