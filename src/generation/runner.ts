// The main thread's side of the generation worker. If the worker dies, every job it held ends with an
// error (never silently), and the next job starts a fresh worker.
//
// Before a model's job reaches the worker, the text of its PDFs is read in extract processes
// (attachments/text-extractor.ts), within the answer's deadline: the worker streams every answer, so it only ever
// reads text already extracted, and a file that takes minutes to parse delays no one else's answer.
import {
  createPdfTextExtractor,
  defaultPdfTextLimits,
  type ExtractorOptions,
  type PdfTextExtractor,
  type PdfTextLimits,
} from '../attachments/text-extractor'
import type { Logger } from '../shared/log'
import { type BlobLocation, openBlobStore } from '../storage/blobs'
import {
  anyModel,
  type FromWorker,
  type GenerationRunner,
  type HistoryMessage,
  type JobHandlers,
  type JobModel,
  type ProviderSettings,
  type ToolCallRequest,
  type ToolRoundReply,
  type ToWorker,
  type WorkerModels,
} from './types'

export function createWorkerRunner(
  /**
   * Every configured model's settings by ID (models/catalogue.ts workerModels), or one model's settings, run for
   * every job whatever model it names.
   */
  settings: ProviderSettings | { models: WorkerModels },
  /** Where the worker reads attachments from: it opens a store of its own there. */
  blobs: BlobLocation,
  log: Logger,
  /** The worker's entry module; tests swap in one that can be made to exit. */
  entry = new URL('./worker.ts', import.meta.url),
  /**
   * How the text of PDFs is read for models: the server's extractor, which reading files for search shares (its
   * owner closes it), or the limits of one of the runner's own (tests also choose the extract processes' options).
   */
  pdfText: PdfTextExtractor | (PdfTextLimits & ExtractorOptions) = defaultPdfTextLimits,
): GenerationRunner {
  let worker: Worker | undefined
  const jobs = new Map<string, JobHandlers>()
  const models: WorkerModels = 'models' in settings ? settings.models : { [anyModel]: settings }
  const shared = 'prepare' in pdfText
  // The echo responder reads no file: with only echo models, no answer waits for a PDF's text.
  const extractor = Object.values(models).every((model) => model.provider === 'echo')
    ? null
    : shared
      ? pdfText
      : createPdfTextExtractor(openBlobStore(blobs), log, pdfText, pdfText)
  /** Jobs whose PDFs are being read, not yet handed to the worker: a stop ends the wait. */
  const preparing = new Map<string, { stop: AbortController; handlers: JobHandlers }>()

  function failAll(message: string): void {
    const pending = [...jobs.values()]
    jobs.clear()
    // Not the provider's failure: the worker that talked to it is gone.
    for (const handlers of pending) handlers.error(message, 'worker')
  }

  /**
   * Runs a round of a job's tool calls through its handlers and posts what the model is told. Without a way to run
   * them, or when running them failed, the model is told so and asked for its last reply. A reply for a job that has
   * ended (or a worker that has gone) is dropped.
   */
  async function answerCalls(
    to: Worker,
    jobId: string,
    round: number,
    calls: ToolCallRequest[],
    handlers: JobHandlers,
  ): Promise<void> {
    let reply: ToolRoundReply
    try {
      reply = handlers.toolCalls ? await handlers.toolCalls(round, calls) : failed(calls, 'Tools are not available.')
    } catch (error) {
      log.error('tool calls failed', { jobId, error: String(error) })
      reply = failed(calls, 'The tool could not be run.')
    }
    if (jobs.get(jobId) !== handlers || worker !== to) return
    to.postMessage({ type: 'tool_results', jobId, round, reply } satisfies ToWorker)
  }

  function spawn(): Worker {
    const created = new Worker(entry)
    created.onmessage = (event: MessageEvent<FromWorker>) => {
      const message = event.data
      if (message.type === 'log') return log.error('generator error', { jobId: message.jobId, error: message.message })
      const handlers = jobs.get(message.jobId)
      if (!handlers) return
      switch (message.type) {
        case 'token':
          return handlers.token(message.text)
        case 'block':
          return handlers.block(message.block)
        case 'summary':
          return handlers.summary(message.text, message.replaces)
        case 'usage':
          return handlers.usage?.(message.usage, message.of)
        case 'done':
          jobs.delete(message.jobId)
          return handlers.done()
        case 'retry':
          return handlers.retried?.(message.kind)
        case 'error':
          jobs.delete(message.jobId)
          return handlers.error(message.message, message.kind)
        case 'cancelled':
          jobs.delete(message.jobId)
          return handlers.cancelled()
        case 'tool_calls':
          return void answerCalls(created, message.jobId, message.round, message.calls, handlers)
      }
    }
    created.onerror = (event) => {
      log.error('generation worker crashed', { error: event.message })
      worker = undefined
      created.terminate()
      failAll('The generator stopped unexpectedly')
    }
    // A worker can also end without an error (process.exit in a dependency): its jobs must not wait forever.
    created.addEventListener('close', () => {
      if (worker !== created) return
      log.error('generation worker exited', {})
      worker = undefined
      failAll('The generator stopped unexpectedly')
    })
    created.postMessage({ type: 'init', models, blobs } satisfies ToWorker)
    // The worker must not keep the process alive on its own: the server and pending jobs do that.
    created.unref()
    return created
  }

  function start(jobId: string, history: HistoryMessage[], handlers: JobHandlers, model?: JobModel): void {
    worker ??= spawn()
    jobs.set(jobId, handlers)
    const asked = model ? { model: model.model, instructions: model.instructions ?? undefined, tools: model.tools } : {}
    worker.postMessage({ type: 'start', jobId, history, ...asked } satisfies ToWorker)
  }

  return {
    run(jobId: string, history: HistoryMessage[], handlers: JobHandlers, model?: JobModel): void {
      const pdfs = pdfKeys(history)
      if (!extractor || pdfs.length === 0) {
        start(jobId, history, handlers, model)
        return
      }
      const stop = new AbortController()
      preparing.set(jobId, { stop, handlers })
      void extractor.prepare(pdfs, stop.signal).then(() => {
        if (preparing.get(jobId)?.stop !== stop) return
        preparing.delete(jobId)
        if (stop.signal.aborted) handlers.cancelled()
        else start(jobId, history, handlers, model)
      })
    },
    cancel(jobId: string): void {
      const waiting = preparing.get(jobId)
      if (waiting) waiting.stop.abort()
      else worker?.postMessage({ type: 'cancel', jobId } satisfies ToWorker)
    },
    async close(): Promise<void> {
      const closing = worker
      worker = undefined
      closing?.terminate()
      const waiting = [...preparing.values()]
      preparing.clear()
      // A shared extractor stays open for its owner: the answers' waits for it end here.
      for (const { stop } of waiting) stop.abort()
      if (!shared) await extractor?.close()
      for (const { handlers } of waiting) handlers.error('The server is shutting down')
      failAll('The server is shutting down')
    },
  }
}

/** Every call answered with the same error, and the model asked for its last reply. */
function failed(calls: ToolCallRequest[], content: string): ToolRoundReply {
  return { next: 'final', results: calls.map((call) => ({ id: call.id, content, isError: true })) }
}

/** The keys of the PDFs a history's messages are given. */
function pdfKeys(history: HistoryMessage[]): string[] {
  return history.flatMap((message) =>
    Object.values(message.attachments ?? {}).flatMap((file) =>
      file.mediaType === 'application/pdf' ? [file.key] : [],
    ),
  )
}
