// What an answer used, measured by the engine while it ran: the providers' reports (the answer's request and any
// summary's before it, added up), the time to its first token and its whole time, and its cost from its model's
// price. An answer whose provider reported nothing for its own request (the echo responder, a server that ignores
// `stream_options.include_usage`, an answer stopped or failed before the report) gets estimated counts
// (usage/estimate.ts: about four characters per token), marked `estimated`; a failed answer that produced nothing
// counts no estimated prompt (the provider most likely refused it before doing any work). Only answers handed to the
// generator have usage: one stopped or failed before it started writes none.
import { estimatePromptTokens } from '../usage/estimate'
import { costMicros, type ModelPrice } from '../usage/price'
import type { AnswerUsage, UsageOutcome } from '../usage/repository'
import type { Compaction, EndedAnswer } from './repository'
import type { HistoryMessage, TokenUsage, ToolRound, UsageOf } from './types'

/** A model's price by configured ID (the models list); undefined for a model without one. */
export type Prices = (model: string) => ModelPrice | undefined

const outcomes: Record<EndedAnswer['outcome'], UsageOutcome> = {
  complete: 'complete',
  error: 'failed',
  interrupted: 'stopped',
}

const noTokens = (): TokenUsage => ({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 })

function add(into: TokenUsage, usage: TokenUsage): void {
  into.inputTokens += usage.inputTokens
  into.outputTokens += usage.outputTokens
  into.cachedInputTokens += usage.cachedInputTokens
}

/** One running answer's meter: started when the generator is handed the answer, read once when it ends. */
export class UsageMeter {
  private readonly startedAt = performance.now()
  private firstAt: number | undefined
  private readonly reported = noTokens()
  private answerReported = false
  /** Each history message's estimated prompt tokens, by ID (kept instead of the history itself). */
  private readonly prompt: Map<string, number>
  /**
   * Each later request of a tool loop, by what its prompt holds beyond the history: every round before it (their
   * text, calls and results), estimated.
   */
  private readonly later: number[] = []

  constructor(history: HistoryMessage[]) {
    this.prompt = new Map(history.map((message) => [message.id, estimatePromptTokens([message])]))
  }

  /** A token or block arrived. */
  produced(): void {
    this.firstAt ??= performance.now()
  }

  /** A round of tool calls ended and the model is asked again, with the round's `promptTokens` added. */
  round(promptTokens: number): void {
    this.later.push((this.later.at(-1) ?? 0) + promptTokens)
  }

  report(usage: TokenUsage, of: UsageOf): void {
    add(this.reported, usage)
    if (of === 'answer') this.answerReported = true
  }

  /** What the answer used, as it ended with `contents` (its text first). */
  read(
    answer: Pick<EndedAnswer, 'outcome' | 'contents' | 'compaction'>,
    model: string,
    prices: Prices | undefined,
  ): AnswerUsage {
    const now = performance.now()
    const tokens = { ...this.reported }
    if (!this.answerReported) {
      const output = answer.contents.length === 0 ? 0 : estimatePromptTokens([{ contents: answer.contents }])
      // Every request of a tool loop sends the history again, with the rounds before it.
      const requests = 1 + this.later.length
      const input =
        answer.outcome === 'error' && output === 0
          ? 0
          : this.promptTokens(answer.compaction) * requests + this.later.reduce((sum, tokens) => sum + tokens, 0)
      add(tokens, { inputTokens: input, outputTokens: output, cachedInputTokens: 0 })
    }
    const price = prices?.(model)
    return {
      model,
      ...tokens,
      estimated: !this.answerReported,
      costMicros: price ? costMicros(tokens, price) : null,
      currency: price?.currency ?? null,
      firstTokenMs: this.firstAt === undefined ? null : Math.round(this.firstAt - this.startedAt),
      totalMs: Math.round(now - this.startedAt),
      outcome: outcomes[answer.outcome],
    }
  }

  /** The prompt the answer was asked with: the history, less what a summary replaced, plus the summary. */
  private promptTokens(compaction: Compaction | undefined): number {
    const replaced = new Set(compaction?.replaces ?? [])
    let tokens = 0
    for (const [id, estimate] of this.prompt) if (!replaced.has(id)) tokens += estimate
    if (compaction) tokens += estimatePromptTokens([{ contents: [{ type: 'text', text: compaction.text }] }])
    return tokens
  }
}

/** What a round of tool calls adds to the prompt of the requests after it: its text, the calls and their results. */
export function roundTokens(round: ToolRound): number {
  const pieces = [round.text, ...round.calls.map((call) => call.arguments), ...round.results.map((r) => r.content)]
  return estimatePromptTokens([{ contents: pieces.map((text) => ({ type: 'text', text })) }])
}
