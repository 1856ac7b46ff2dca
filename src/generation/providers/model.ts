// A real model behind the Generator interface. The vendor adapters (openai.ts, anthropic.ts) only know
// how to make one streaming request; everything around it is here, the same for both: reading the
// history, compacting it when it outgrows the context budget, retrying transient failures, falling
// back when a model has no tool support, and turning every failure into a sentence for the user.
import type { BlobStore } from '../../storage/blobs'
import type { GenerationRequest, Generator, GeneratorEvent, ModelSettings, TokenUsage } from '../types'
import { planCompaction, summaryMessage, summaryRequest } from './compaction'
import {
  type ChoiceTool,
  type ImageInput,
  type LoadedMessage,
  loadHistory,
  type Turn,
  toTurns,
  withoutImages,
} from './conversation'
import { failure, ProviderFailure } from './failures'
import { type RetryPolicy, withRetries } from './retry'

export interface ModelRequest {
  system: string
  turns: Turn[]
  maxOutputTokens: number
  choiceTool: ChoiceTool
}

/**
 * Text and content blocks of one reply, as they arrive, and at its end what the provider reported it used (when it
 * reports anything).
 */
export type ReplyEvent =
  | Extract<GeneratorEvent, { type: 'text' } | { type: 'block' }>
  | { type: 'usage'; usage: TokenUsage }

export interface ChatModel {
  /**
   * One attempt at one reply, streamed. Throws a ProviderFailure when the provider fails, and the
   * signal's reason when the signal aborts; ends normally only when the reply is complete.
   */
  reply(request: ModelRequest, signal: AbortSignal): AsyncIterable<ReplyEvent>
}

function retryPolicy(settings: ModelSettings): RetryPolicy {
  return { maxAttempts: settings.maxAttempts, baseDelayMs: settings.retryBaseDelayMs }
}

async function summarise(
  model: ChatModel,
  replaced: LoadedMessage[],
  settings: ModelSettings,
  signal: AbortSignal,
  retried: GenerationRequest['retried'],
): Promise<{ text: string; usage?: TokenUsage }> {
  const request = summaryRequest(replaced, settings)
  let text = ''
  let usage: TokenUsage | undefined
  for await (const event of withRetries(() => model.reply(request, signal), retryPolicy(settings), signal, retried)) {
    if (event.type === 'text') text += event.text
    else if (event.type === 'usage') usage = event.usage
  }
  return { text: text.trim(), usage }
}

export function modelGenerator(model: ChatModel, settings: ModelSettings, blobs: BlobStore): Generator {
  // Learnt once per process: a model that refused the tool, or images, will refuse them again.
  let choiceTool: ChoiceTool = 'offer'
  let images: ImageInput = 'inline'

  async function* answer(
    initial: LoadedMessage[],
    { signal, instructions, retried }: Omit<GenerationRequest, 'history'>,
  ): AsyncIterable<GeneratorEvent> {
    let messages = initial
    // The thread's own instructions follow the server's system prompt: they add to it, never replace it.
    const system = instructions ? `${settings.systemPrompt}\n\n${instructions}` : settings.systemPrompt
    while (true) {
      const request: ModelRequest = {
        system,
        turns: toTurns(messages, choiceTool),
        maxOutputTokens: settings.maxOutputTokens,
        choiceTool,
      }
      let streamed = false
      try {
        const attempts = withRetries(() => model.reply(request, signal), retryPolicy(settings), signal, retried)
        for await (const event of attempts) {
          streamed = true
          yield event.type === 'usage' ? { type: 'usage', usage: event.usage, of: 'answer' } : event
        }
        return
      } catch (error) {
        // Asking again once the reader has part of this answer would stream that part twice.
        if (!(error instanceof ProviderFailure) || streamed) throw error
        // Many local models (and llama.cpp without --jinja) reject any request offering tools.
        if (error.kind === 'tools_unsupported' && choiceTool === 'offer') {
          choiceTool = 'withhold'
          continue
        }
        // A text-only model gets each image as a labelled stand-in rather than a failed answer.
        if (error.kind === 'images_unsupported' && images === 'inline') {
          images = 'describe'
          messages = withoutImages(messages)
          continue
        }
        throw error
      }
    }
  }

  return {
    async *generate(request: GenerationRequest): AsyncIterable<GeneratorEvent> {
      const { history, signal, retried } = request
      try {
        let messages = await loadHistory(history, images, blobs)
        const plan = planCompaction(messages, settings)
        if (plan) {
          const { text, usage } = await summarise(model, plan.replaced, settings, signal, retried)
          // The summary's request is paid for whether or not it said anything: it counts with the answer.
          if (usage) yield { type: 'usage', usage, of: 'summary' }
          if (text !== '') {
            yield { type: 'summary', text, replaces: plan.replaced.map((message) => message.id) }
            messages = [summaryMessage(text), ...plan.kept]
          }
        }
        yield* answer(messages, request)
      } catch (error) {
        if (signal.aborted || error instanceof ProviderFailure) throw error
        // The user reads a plain sentence; the original goes to the server log (see worker.ts).
        throw Object.assign(failure('unexpected', settings), { cause: error })
      }
    },
  }
}
