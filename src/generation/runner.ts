// The main thread's side of the generation worker. If the worker dies, every job it held ends with an
// error (never silently), and the next job starts a fresh worker.
import type { Logger } from '../shared/log'
import type { BlobLocation } from '../storage/blobs'
import type { FromWorker, GenerationRunner, HistoryMessage, JobHandlers, ProviderSettings, ToWorker } from './types'

export function createWorkerRunner(
  settings: ProviderSettings,
  /** Where the worker reads attachments from: it opens a store of its own there. */
  blobs: BlobLocation,
  log: Logger,
  /** The worker's entry module; tests swap in one that can be made to exit. */
  entry = new URL('./worker.ts', import.meta.url),
): GenerationRunner {
  let worker: Worker | undefined
  const jobs = new Map<string, JobHandlers>()

  function failAll(message: string): void {
    const pending = [...jobs.values()]
    jobs.clear()
    for (const handlers of pending) handlers.error(message)
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
        case 'done':
          jobs.delete(message.jobId)
          return handlers.done()
        case 'error':
          jobs.delete(message.jobId)
          return handlers.error(message.message)
        case 'cancelled':
          jobs.delete(message.jobId)
          return handlers.cancelled()
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
    created.postMessage({ type: 'init', settings, blobs } satisfies ToWorker)
    // The worker must not keep the process alive on its own: the server and pending jobs do that.
    created.unref()
    return created
  }

  return {
    run(jobId: string, history: HistoryMessage[], handlers: JobHandlers): void {
      worker ??= spawn()
      jobs.set(jobId, handlers)
      worker.postMessage({ type: 'start', jobId, history } satisfies ToWorker)
    },
    cancel(jobId: string): void {
      worker?.postMessage({ type: 'cancel', jobId } satisfies ToWorker)
    },
    async close(): Promise<void> {
      const closing = worker
      worker = undefined
      closing?.terminate()
      failAll('The server is shutting down')
    },
  }
}
