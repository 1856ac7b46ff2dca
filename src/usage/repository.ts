// The storage contract of usage: one `answer_usage` row per answer that ran, written with the answer's end in the
// generation repository's `finish` unit (see recordUsage in repository.common.ts), and the reads the API, quotas and
// charts make of it.
import type { usageOutcomes } from './usage.table'

export type UsageOutcome = (typeof usageOutcomes)[number]

/** What the engine measured of one answer that ran. */
export interface AnswerUsage {
  /** The configured model's ID. */
  model: string
  /** Every prompt token, cached ones included, of the answer and of any summary written before it. */
  inputTokens: number
  outputTokens: number
  cachedInputTokens: number
  /** Some or all of the counts are the server's estimate (generation/usage.ts says how). */
  estimated: boolean
  /** Millionths of `currency`; null when the model has no price. */
  costMicros: number | null
  currency: string | null
  /** From the answer's start (handed to the generator) to its first token or block; null when none came. */
  firstTokenMs: number | null
  totalMs: number | null
  outcome: UsageOutcome
}

/** The row: the usage with whom it counts against and what it answered (IDs only: it outlives the thread). */
export interface UsageRow extends AnswerUsage {
  organizationId: number
  /** The thread's owner. */
  userId: number
  threadId: string
  /** The user message it answered. */
  questionId: string
  /** The assistant message it stored; null when it stored none. */
  answerId: string | null
  createdAt: number
}

export type UsageGroup = 'day' | 'user' | 'model' | 'thread'

export interface UsageQuery {
  organizationId: number
  /** Only this member's answers (those of threads they own); the whole organization when absent. */
  userId?: number
  /** Epoch ms, inclusive. */
  from: number
  /** Epoch ms, exclusive. */
  to: number
  /** What rows are grouped by, in this order; none: one row for the whole range (when it has answers). */
  by: UsageGroup[]
}

/** One group: its key per grouping (day `YYYY-MM-DD` UTC, user's numeric ID, model ID, thread ID) and its sums. */
export interface UsageAggregate {
  keys: Record<string, string>
  answers: number
  input_tokens: number
  output_tokens: number
  /** Of the answers that had a price; null when none had. */
  cost_micros: number | null
}

/** A month's running totals (usage_totals): tokens are input + output. */
export interface UsageTotal {
  tokens: number
  costMicros: number
}

export interface UsageRepository {
  /** Sums over answers created in [from, to), grouped; ordered by the keys. One statement. */
  aggregate(query: UsageQuery): Promise<UsageAggregate[]>
  /**
   * The organization's and the member's totals for `period` (`YYYY-MM`, UTC): one indexed read of usage_totals (both
   * keys in one statement); zeros where nothing was recorded.
   */
  monthTotals(
    organizationId: number,
    userId: number,
    period: string,
  ): Promise<{ organization: UsageTotal; member: UsageTotal }>
  /** The usage recorded for these answers (assistant message IDs), by answer ID. */
  forAnswers(answerIds: string[]): Promise<Map<string, UsageRow>>
}
