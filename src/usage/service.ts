// What the API says about usage: an answer's usage as shown in details, exports and webhooks, and GET /usage (the
// range's rules, grouping and CSV). Other features read usage through UsageRepository (repository.ts): `aggregate`
// for sums and `monthTotals` for a month's running totals (quotas).
import type { Caller } from '../auth/model'
import { csvField, csvText } from '../shared/csv'
import { forbidden, invalidRequest } from '../shared/errors'
import { dateOnly, dayMs, parseInstant } from '../shared/time'
import { maxRangeDays, type UsageModel } from './model'
import { fromMicros } from './price'
import type { AnswerUsage, UsageAggregate, UsageGroup, UsageRepository } from './repository'

/** An answer's usage as the API shows it. */
export function toAnswerUsage(usage: Omit<AnswerUsage, 'model' | 'outcome'>): UsageModel.answerUsage {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cached_input_tokens: usage.cachedInputTokens,
    estimated: usage.estimated,
    cost: fromMicros(usage.costMicros),
    currency: usage.currency,
    first_token_ms: usage.firstTokenMs,
    total_ms: usage.totalMs,
  }
}

/** The usage of these answers as the API shows it, by answer ID (absent: none recorded). */
export async function answerUsages(
  usage: UsageRepository,
  answerIds: string[],
): Promise<Map<string, UsageModel.answerUsage>> {
  const rows = await usage.forAnswers(answerIds)
  return new Map([...rows].map(([id, row]) => [id, toAnswerUsage(row)]))
}

export interface UsageRange {
  from: string
  to: string
  /** Epoch ms, inclusive. */
  fromMs: number
  /** Epoch ms, exclusive. */
  toMs: number
}

/**
 * The range asked for: by default from the first day of the current month (UTC) through today. A date `to` includes
 * its whole day. 400 when `from` is after `to` or the range is longer than 400 days.
 */
export function usageRange(query: Pick<UsageModel.usageQuery, 'from' | 'to'>, now: number): UsageRange {
  const today = new Date(now).toISOString().slice(0, 10)
  const from = query.from ?? `${today.slice(0, 7)}-01`
  const to = query.to ?? today
  const fromMs = parseInstant(from, 'from')
  const toMs = parseInstant(to, 'to') + (dateOnly.test(to) ? dayMs : 0)
  if (fromMs > toMs || (fromMs === toMs && !dateOnly.test(to))) throw invalidRequest('from must not be after to')
  if (toMs - fromMs > maxRangeDays * dayMs) {
    throw invalidRequest(`The range is longer than ${maxRangeDays} days`)
  }
  return { from, to, fromMs, toMs }
}

export interface UsageReportDeps {
  usage: UsageRepository
  /** The currency of the models' prices (models list); null when none has one. */
  currency: string | null
  now: number
}

/** Whose usage: one member's, or (no userId) the whole organization's. */
export interface UsageScope {
  organizationId: number
  userId?: number
}

/** The scope's usage in the range, in rows of one grouping: what GET /usage answers, and its CSV. */
export async function usageList(
  deps: UsageReportDeps,
  scope: UsageScope,
  range: UsageRange,
  group: UsageGroup,
): Promise<UsageModel.usageList> {
  const rows = await deps.usage.aggregate({ ...scope, from: range.fromMs, to: range.toMs, by: [group] })
  return {
    data: rows.map((row) => ({
      key: row.keys[group] ?? '',
      answers: row.answers,
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      cost: fromMicros(row.cost_micros),
    })),
    from: range.from,
    to: range.to,
    currency: deps.currency,
  }
}

/** GET /usage: the caller's own usage, or (owners and admins) the organization's, in rows of one grouping. */
export async function usageReport(
  deps: UsageReportDeps,
  caller: Caller,
  query: UsageModel.usageQuery,
): Promise<UsageModel.usageList> {
  const range = usageRange(query, deps.now)
  const organization = query.scope === 'organization'
  if (organization && caller.role === 'member') {
    throw forbidden('Only owners and admins may read the organization’s usage (scope=organization)')
  }
  const scope = { organizationId: caller.organizationId, ...(organization ? {} : { userId: caller.userId }) }
  return usageList(deps, scope, range, query.group_by ?? 'day')
}

/** What the usage pages chart: sums by day and model, by model, and (the organization's) by member. */
export interface UsageOverview {
  range: UsageRange
  currency: string | null
  /** Every day of the range (`YYYY-MM-DD`, UTC), answers or not. */
  days: string[]
  /** Models by tokens, most first. */
  models: string[]
  byDayAndModel: UsageAggregate[]
  byModel: UsageAggregate[]
  /** Members by tokens, most first; absent for one member's own usage. */
  byMember?: UsageAggregate[]
}

export const tokensOf = (row: UsageAggregate): number => row.input_tokens + row.output_tokens

/** The scope's usage in the range, for the charts: two or three grouped reads, run together. */
export async function usageOverview(
  deps: UsageReportDeps,
  scope: UsageScope,
  range: UsageRange,
): Promise<UsageOverview> {
  const read = (by: UsageGroup[]) => deps.usage.aggregate({ ...scope, from: range.fromMs, to: range.toMs, by })
  const [byDayAndModel, byModel, byMember] = await Promise.all([
    read(['day', 'model']),
    read(['model']),
    scope.userId === undefined ? read(['user']) : undefined,
  ])
  const mostFirst = (a: UsageAggregate, b: UsageAggregate) => tokensOf(b) - tokensOf(a)
  byModel.sort(mostFirst)
  const days: string[] = []
  for (let day = Math.floor(range.fromMs / dayMs) * dayMs; day < range.toMs; day += dayMs) {
    days.push(new Date(day).toISOString().slice(0, 10))
  }
  return {
    range,
    currency: deps.currency,
    days,
    models: byModel.map((row) => row.keys.model ?? ''),
    byDayAndModel,
    byModel,
    ...(byMember ? { byMember: byMember.sort(mostFirst) } : {}),
  }
}

const csvColumns = ['key', 'answers', 'input_tokens', 'output_tokens', 'cost'] as const

/**
 * The report as CSV (RFC 4180, CRLF line ends): a header row, then one line per row; an unpriced cost is empty. A key
 * is text people chose (an email, a model's ID), so one a spreadsheet would read as a formula is neutralised.
 */
export function usageCsv(report: UsageModel.usageList): string {
  const field = (row: UsageModel.usageList['data'][number], column: (typeof csvColumns)[number]) =>
    column === 'key' ? csvText(String(row.key)) : csvField(row[column])
  const lines = [csvColumns.join(','), ...report.data.map((row) => csvColumns.map((c) => field(row, c)).join(','))]
  return `${lines.join('\r\n')}\r\n`
}
