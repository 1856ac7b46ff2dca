// The generator interface every provider implements, and the messages between the main thread and
// the generation worker.
import type { ThreadsModel } from '../threads/model'

/** A file a message refers to, as a provider reads it. */
export interface HistoryAttachment {
  id: string
  filename: string
  mediaType: string
  /** Absolute path of the bytes to give a model: for a large image, its copy scaled to the model bound. */
  path: string
}

export interface HistoryMessage {
  role: 'user' | 'assistant' | 'summary'
  contents: ThreadsModel.contentBlock[]
  /** The files that the message's image and document blocks refer to, in block order. */
  attachments: HistoryAttachment[]
}

export interface GenerationRequest {
  history: HistoryMessage[]
  signal: AbortSignal
}

/** Text arrives token by token; other content blocks (such as `user_get_choice`) arrive whole. */
export type GeneratorEvent = { type: 'text'; text: string } | { type: 'block'; block: ThreadsModel.contentBlock }

export interface Generator {
  generate(request: GenerationRequest): AsyncIterable<GeneratorEvent>
}

export interface ProviderSettings {
  provider: 'echo'
  echoTokenDelayMs: number
}

export type ToWorker =
  | { type: 'init'; settings: ProviderSettings }
  | { type: 'start'; jobId: string; history: HistoryMessage[] }
  | { type: 'cancel'; jobId: string }

export type FromWorker =
  | { type: 'token'; jobId: string; text: string }
  | { type: 'block'; jobId: string; block: ThreadsModel.contentBlock }
  | { type: 'done'; jobId: string }
  | { type: 'error'; jobId: string; message: string }
  | { type: 'cancelled'; jobId: string }

/** Receives one job's output, in order. Exactly one of done, error or cancelled ends it. */
export interface JobHandlers {
  token(text: string): void
  block(block: ThreadsModel.contentBlock): void
  done(): void
  error(message: string): void
  cancelled(): void
}

/** Runs generation jobs somewhere (a Bun Worker in production) and reports back on the main thread. */
export interface GenerationRunner {
  run(jobId: string, history: HistoryMessage[], handlers: JobHandlers): void
  cancel(jobId: string): void
  close(): Promise<void>
}
