// The generation worker: runs the configured generators for many jobs at once, off the main thread, and posts every
// token back as soon as it exists. Each job names its model; a model's generator is made on its first job and kept
// (providers/model.ts learns per generator what a model refuses, and the SDKs load once).
import { type BlobStore, openBlobStore } from '../storage/blobs'
import { createGenerator } from './providers'
import { describeForLog, ProviderFailure } from './providers/failures'
import {
  anyModel,
  type FromWorker,
  type Generator,
  type HistoryMessage,
  type ToWorker,
  type WorkerModels,
} from './types'

declare const self: Worker

let models: WorkerModels | undefined
let blobs: BlobStore | undefined
const generators = new Map<string, Promise<Generator>>()
const running = new Map<string, AbortController>()

function post(message: FromWorker): void {
  self.postMessage(message)
}

/** The settings' key in `models` for a job's model: its own, else the one model a single-model worker runs. */
function keyOf(model: string | undefined): string | undefined {
  if (!models) return undefined
  if (model !== undefined && model in models) return model
  return anyModel in models ? anyModel : undefined
}

function generatorFor(key: string): Promise<Generator> {
  let generator = generators.get(key)
  if (!generator) {
    generator = createGenerator((models as WorkerModels)[key] as WorkerModels[string], blobs as BlobStore)
    // A failed start (an SDK that cannot load) is tried again by the next job rather than kept.
    generator.catch(() => generators.delete(key))
    generators.set(key, generator)
  }
  return generator
}

async function run(jobId: string, history: HistoryMessage[], model?: string, instructions?: string): Promise<void> {
  const controller = new AbortController()
  running.set(jobId, controller)
  const key = keyOf(model)
  const settings = key === undefined ? undefined : models?.[key]
  const apiKey = settings && 'apiKey' in settings ? settings.apiKey : undefined
  try {
    if (!models) throw new Error('worker used before init')
    if (key === undefined) throw new ProviderFailure('unexpected', `The model "${model}" is not configured`)
    const generator = await generatorFor(key)
    const retried = (kind: string) => post({ type: 'retry', jobId, kind })
    for await (const event of generator.generate({ history, signal: controller.signal, instructions, retried })) {
      if (event.type === 'text') post({ type: 'token', jobId, text: event.text })
      else if (event.type === 'block') post({ type: 'block', jobId, block: event.block })
      else if (event.type === 'usage') post({ type: 'usage', jobId, usage: event.usage, of: event.of })
      else post({ type: 'summary', jobId, text: event.text, replaces: event.replaces })
    }
    post({ type: 'done', jobId })
  } catch (error) {
    if (controller.signal.aborted) return post({ type: 'cancelled', jobId })
    const forLog = describeForLog(error, apiKey)
    if (forLog) post({ type: 'log', jobId, message: forLog })
    if (error instanceof ProviderFailure) post({ type: 'error', jobId, message: error.message, kind: error.kind })
    else post({ type: 'error', jobId, message: 'The generator failed', kind: 'unexpected' })
  } finally {
    running.delete(jobId)
  }
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const message = event.data
  switch (message.type) {
    case 'init':
      models = message.models
      blobs = openBlobStore(message.blobs)
      break
    case 'start':
      void run(message.jobId, message.history, message.model, message.instructions)
      break
    case 'cancel':
      running.get(message.jobId)?.abort()
      break
  }
}
