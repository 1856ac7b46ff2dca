// The generation worker: runs the configured generator for many jobs at once, off the main thread,
// and posts every token back as soon as it exists.
import { openBlobStore } from '../storage/blobs'
import { createGenerator } from './providers'
import { describeForLog, ProviderFailure } from './providers/failures'
import type { FromWorker, Generator, HistoryMessage, ToWorker } from './types'

declare const self: Worker

let generator: Promise<Generator> | undefined
let apiKey: string | undefined
const running = new Map<string, AbortController>()

function post(message: FromWorker): void {
  self.postMessage(message)
}

async function run(jobId: string, history: HistoryMessage[]): Promise<void> {
  const controller = new AbortController()
  running.set(jobId, controller)
  try {
    if (!generator) throw new Error('worker used before init')
    for await (const event of (await generator).generate({ history, signal: controller.signal })) {
      if (event.type === 'text') post({ type: 'token', jobId, text: event.text })
      else if (event.type === 'block') post({ type: 'block', jobId, block: event.block })
      else post({ type: 'summary', jobId, text: event.text, replaces: event.replaces })
    }
    post({ type: 'done', jobId })
  } catch (error) {
    if (controller.signal.aborted) return post({ type: 'cancelled', jobId })
    const forLog = describeForLog(error, apiKey)
    if (forLog) post({ type: 'log', jobId, message: forLog })
    post({ type: 'error', jobId, message: error instanceof ProviderFailure ? error.message : 'The generator failed' })
  } finally {
    running.delete(jobId)
  }
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const message = event.data
  switch (message.type) {
    case 'init':
      generator = createGenerator(message.settings, openBlobStore(message.blobs))
      apiKey = 'apiKey' in message.settings ? message.settings.apiKey : undefined
      break
    case 'start':
      void run(message.jobId, message.history)
      break
    case 'cancel':
      running.get(message.jobId)?.abort()
      break
  }
}
