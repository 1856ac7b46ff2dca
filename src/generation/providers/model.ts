// A real model behind the Generator interface. The vendor adapters (openai.ts, anthropic.ts) only know
// how to make one streaming request; everything around it is here, the same for both: reading the
// history, compacting it when it outgrows the context budget, retrying transient failures, falling
// back when a model has no tool support, and turning every failure into a sentence for the user.
import type { BlobStore } from '../../storage/blobs'
import type {
  GenerationRequest,
  Generator,
  GeneratorEvent,
  ModelSettings,
  OfferedTool,
  TokenUsage,
  ToolCallRequest,
} from '../types'
import { type ChoiceBlock, choiceInput, choiceToolName } from './choice-tool'
import {
  budgetRounds,
  inputBudget,
  offeredTokens,
  planCompaction,
  promptTokens,
  summaryMessage,
  summaryRequest,
} from './compaction'
import {
  type ChoiceTool,
  type ImageInput,
  type LoadedMessage,
  loadHistory,
  type Turn,
  withoutImages,
  withRounds,
} from './conversation'
import { failure, ProviderFailure } from './failures'
import { type RetryPolicy, withRetries } from './retry'

export interface ModelRequest {
  system: string
  turns: Turn[]
  maxOutputTokens: number
  choiceTool: ChoiceTool
  /** The MCP tools offered beside the choice tool; none when the choice tool is withheld. */
  tools: OfferedTool[]
  /** `none` on an answer's last request: the tools stay defined (its earlier calls name them) but none may be called. */
  toolChoice: 'auto' | 'none'
}

/**
 * Text and content blocks of one reply, as they arrive, and at its end what the provider reported it used (when it
 * reports anything).
 */
export type ReplyEvent =
  | Extract<GeneratorEvent, { type: 'text' } | { type: 'block' }>
  | { type: 'usage'; usage: TokenUsage }
  /** Every call of the reply but the choice tool's, in the reply's order, once the reply has ended. */
  | { type: 'tool_calls'; calls: ToolCallRequest[] }

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

/** What a choice asked beside other tool calls is told: the person is asked once the other calls have answered. */
export const choiceAlone = 'Ask alone, after the other tools answered.'
/** Between the texts of an answer's rounds, which the reader gets as one text. */
export const roundSeparator = '\n\n'

/** A reply as the loop needs it once it has ended: its text, its tool calls and the question it asked. */
interface Reply {
  text: string
  calls: ToolCallRequest[]
  choice?: ChoiceBlock
  /** Whether the request offered tools: calls of tools it did not offer are not run. */
  offered: boolean
}

export function modelGenerator(model: ChatModel, settings: ModelSettings, blobs: BlobStore): Generator {
  // Learnt once per process: a model that refused the tool, or images, will refuse them again.
  let choiceTool: ChoiceTool = 'offer'
  let images: ImageInput = 'inline'

  async function* answer(
    initial: LoadedMessage[],
    { signal, instructions, retried, tools }: Omit<GenerationRequest, 'history'>,
  ): AsyncIterable<GeneratorEvent> {
    let messages = initial
    // The thread's own instructions follow the server's system prompt: they add to it, never replace it.
    const system = instructions ? `${settings.systemPrompt}\n\n${instructions}` : settings.systemPrompt
    // Rounds handed in were written by earlier answers, or before a takeover: their text is never yielded again.
    const rounds = [...(tools?.rounds ?? [])]
    let toolChoice: ModelRequest['toolChoice'] = tools?.final ? 'none' : 'auto'
    let wrote = false

    async function* reply(): AsyncGenerator<GeneratorEvent, Reply> {
      // Set for this request alone when a server refused `tool_choice: none`: the rounds are then written as text.
      let bare = false
      while (true) {
        const offer = choiceTool === 'offer' && !bare
        const offered = offer ? (tools?.offered ?? []) : []
        // Results grow the prompt round by round: the oldest give way first, and when nothing more can, this
        // request is the answer's last.
        const room = inputBudget(settings) - promptTokens(messages, system, offeredTokens(offered))
        const fitted = budgetRounds(rounds, room)
        if (rounds.length > 0 && !fitted.fits) toolChoice = 'none'
        // Calls are sent as the vendor's own only beside tools that define them: a thread whose tools were all turned
        // off while a call waited reads the chain as text.
        const form = offered.length > 0 ? 'native' : 'text'
        const request: ModelRequest = {
          system,
          turns: withRounds(messages, offer ? 'offer' : 'withhold', fitted.rounds, form, tools?.question),
          maxOutputTokens: settings.maxOutputTokens,
          choiceTool: offer ? 'offer' : 'withhold',
          tools: offered,
          toolChoice,
        }
        const result: Reply = { text: '', calls: [], offered: offer }
        let streamed = false
        try {
          const attempts = withRetries(() => model.reply(request, signal), retryPolicy(settings), signal, retried)
          for await (const event of attempts) {
            if (event.type === 'text') {
              if (!streamed && wrote) yield { type: 'text', text: roundSeparator }
              streamed = true
              wrote = true
              result.text += event.text
              yield event
            } else if (event.type === 'usage') {
              // Yielded as soon as the reply ends, so it is counted before its calls are run.
              streamed = true
              yield { type: 'usage', usage: event.usage, of: 'answer' }
            } else if (event.type === 'tool_calls') {
              result.calls.push(...event.calls)
            } else if (event.block.type === 'user_get_choice') {
              result.choice ??= event.block
            }
          }
          return result
        } catch (error) {
          // Asking again once the reader has part of this answer would stream that part twice.
          if (!(error instanceof ProviderFailure) || streamed) throw error
          // Servers that took tools in earlier rounds and refuse the last request's `tool_choice: none`.
          if (error.kind === 'tools_unsupported' && toolChoice === 'none' && offer && rounds.length > 0) {
            bare = true
            continue
          }
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

    for (let round = rounds.length + 1; ; round += 1) {
      const { text, calls, choice, offered } = yield* reply()
      if (!tools || !offered || calls.length === 0 || toolChoice === 'none') {
        // Calls of tools not offered are not run; a question asked alone is today's choice block.
        if (choice) yield { type: 'block', block: choice }
        return
      }
      // The person can be asked only once the tools have answered: the model is told so, and asks again later.
      const asked = choice
        ? {
            call: { id: choice.tool_use_id, name: choiceToolName, arguments: JSON.stringify(choiceInput(choice)) },
            result: { id: choice.tool_use_id, content: choiceAlone, isError: true },
          }
        : null
      const next = await tools.port.round(round, calls, signal)
      if (next.next === 'pause') return
      rounds.push({
        text,
        calls: asked ? [...calls, asked.call] : calls,
        results: asked ? [...next.results, asked.result] : next.results,
      })
      if (next.next === 'final') toolChoice = 'none'
    }
  }

  return {
    async *generate(request: GenerationRequest): AsyncIterable<GeneratorEvent> {
      const { history, signal, retried } = request
      try {
        let messages = await loadHistory(history, images, blobs)
        const plan = planCompaction(messages, settings, offeredTokens(request.tools?.offered ?? []))
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
