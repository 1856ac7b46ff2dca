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
  type JobTools,
  type ToolPort,
  type ToolRoundReply,
  type ToWorker,
  type WorkerModels,
} from './types'

declare const self: Worker

let models: WorkerModels | undefined
let blobs: BlobStore | undefined
const generators = new Map<string, Promise<Generator>>()
const running = new Map<string, AbortController>()
/** Each job's round of tool calls waiting for the main thread's `tool_results`: a job waits for one at a time. */
const waiting = new Map<string, { round: number; resolve: (reply: ToolRoundReply) => void }>()

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

/**
 * How a job's generator has its tool calls run: the worker has no database, so the main thread runs them (runner.ts)
 * and posts back what the model is told. A stop rejects the wait, and a late reply then finds nothing waiting.
 */
function toolPort(jobId: string): ToolPort {
  return {
    round(round, calls, signal) {
      return new Promise<ToolRoundReply>((resolve, reject) => {
        signal.throwIfAborted()
        const stop = () => {
          waiting.delete(jobId)
          reject(signal.reason)
        }
        signal.addEventListener('abort', stop, { once: true })
        waiting.set(jobId, {
          round,
          resolve: (reply) => {
            signal.removeEventListener('abort', stop)
            waiting.delete(jobId)
            resolve(reply)
          },
        })
        post({ type: 'tool_calls', jobId, round, calls })
      })
    },
  }
}

async function run(
  jobId: string,
  history: HistoryMessage[],
  model?: string,
  instructions?: string,
  tools?: JobTools,
): Promise<void> {
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
    const request = {
      history,
      signal: controller.signal,
      instructions,
      retried,
      ...(tools ? { tools: { ...tools, port: toolPort(jobId) } } : {}),
    }
    for await (const event of generator.generate(request)) {
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
      void run(message.jobId, message.history, message.model, message.instructions, message.tools)
      break
    case 'tool_results': {
      const round = waiting.get(message.jobId)
      if (round?.round === message.round) round.resolve(message.reply)
      break
    }
    case 'cancel':
      running.get(message.jobId)?.abort()
      break
  }
}
