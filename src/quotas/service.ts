// What the quotas feature does: monthly budgets (an organization's, its default per member and members' overrides),
// set by owners and admins (administration page, `quota:set`), and the check before an answer starts (the
// conversation's QuotaCheck port, threads/conversation.ts). A month is the calendar month in UTC; what it has used is
// usage_totals' row for it (written by the usage feature when each answer ends), so every instance counts the same.

import type { Caller } from '../auth/model'
import { type AuditEntry, type AuditOrigin, auditEntry, target } from '../shared/audit'
import { AppError, invalidRequest } from '../shared/errors'
import type { QuotaCheck } from '../threads/conversation'
import { formatCost, formatTokens } from '../usage/price'
import type { Budget, CallerBudgets, MonthTotals, OrganizationBudgets, QuotaRepository, Spent } from './repository'

export interface QuotasDeps {
  quotas: QuotaRepository
}

/** The share of a budget at which the composer warns. */
export const noticeShare = 0.8

/** The month `ms` falls in, as usage_totals keys it: YYYY-MM in UTC. */
export function periodOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7)
}

/** The first instant of the UTC month after the one `ms` falls in: when every monthly budget starts again. */
export function nextPeriodStart(ms: number): number {
  const date = new Date(ms)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
}

/** Whole seconds from `ms` until the next month starts (Retry-After), at least 1. */
export function secondsUntilReset(ms: number): number {
  return Math.max(1, Math.ceil((nextPeriodStart(ms) - ms) / 1000))
}

/** `1 February 2026`: the day a month starts, in words. */
export function resetDay(ms: number): string {
  return new Date(nextPeriodStart(ms)).toLocaleDateString('en-GB', {
    timeZone: 'UTC',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
  })
}

/** `none` (or nothing) clears a limit; otherwise a whole number of tokens. */
export function parseTokens(text: string): number | null {
  const value = text.trim().replaceAll(',', '').replaceAll('_', '')
  if (value === '' || value.toLowerCase() === 'none') return null
  if (!/^\d{1,15}$/.test(value)) throw invalidRequest(`"${text.trim()}" is not a number of tokens (or none)`)
  return Number(value)
}

/** `none` (or nothing) clears a limit; otherwise an amount with at most six decimals, stored in millionths. */
export function parseCost(text: string): number | null {
  const value = text.trim().replaceAll(',', '')
  if (value === '' || value.toLowerCase() === 'none') return null
  const match = /^(\d{1,9})(?:\.(\d{1,6}))?$/.exec(value)
  if (!match) throw invalidRequest(`"${text.trim()}" is not an amount (such as 25 or 12.50, or none)`)
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(6, '0'))
}

/** One budget of the two a person's answers count against, in one measure, with what this month used of it. */
export interface Limit {
  scope: 'organization' | 'member'
  measure: 'tokens' | 'cost'
  used: number
  limit: number
}

function limitsOf(budgets: CallerBudgets, totals: MonthTotals): Limit[] {
  const of = (scope: Limit['scope'], budget: Budget, spent: Spent): Limit[] => [
    ...(budget.tokens === null
      ? []
      : [{ scope, measure: 'tokens' as const, used: spent.tokens, limit: budget.tokens }]),
    ...(budget.costMicros === null
      ? []
      : [{ scope, measure: 'cost' as const, used: spent.costMicros, limit: budget.costMicros }]),
  ]
  return [
    ...of('organization', budgets.organization, totals.organization),
    ...of('member', budgets.member, totals.member),
  ]
}

/** The person's budgets and what this month used of each, in one read (repository.ts standing). */
export async function limitsFor(deps: QuotasDeps, caller: Caller, now: number): Promise<Limit[]> {
  const { budgets, totals } = await deps.quotas.standing(caller.organizationId, caller.userId, periodOf(now))
  return limitsOf(budgets, totals)
}

const reached = (limit: Limit): boolean => limit.used >= limit.limit
const share = (limit: Limit): number => (limit.limit === 0 ? 1 : limit.used / limit.limit)

function amount(limit: Limit, value: number): string {
  return limit.measure === 'tokens' ? `${formatTokens(value)} tokens` : formatCost(value)
}

function budgetName(limit: Limit): string {
  const measure = limit.measure === 'tokens' ? 'token' : 'cost'
  return limit.scope === 'organization'
    ? `Your organization's monthly ${measure} budget`
    : `Your monthly ${measure} budget`
}

/** The refusal's sentence: which budget, how much of it, and when answers can start again (in words and ISO 8601). */
export function refusalMessage(limit: Limit, now: number): string {
  const reset = new Date(nextPeriodStart(now)).toISOString()
  return (
    `${budgetName(limit)} is used up (${amount(limit, limit.used)} of ${amount(limit, limit.limit)} this month). ` +
    `Answers can start again on ${resetDay(now)} at 00:00 UTC (${reset}).`
  )
}

/** 429 `quota_exceeded`, with Retry-After until the next month (UTC). */
export function quotaExceeded(limit: Limit, now: number): AppError {
  return new AppError(
    429,
    'quota_exceeded',
    refusalMessage(limit, now),
    {},
    { 'retry-after': String(secondsUntilReset(now)) },
  )
}

/** The organization's budget first: when both are used up, raising the member's would not help. */
function firstReached(limits: Limit[]): Limit | undefined {
  return limits.find((limit) => limit.scope === 'organization' && reached(limit)) ?? limits.find(reached)
}

/** The conversation's port: refuses (429) a person whose organization's or own budget this month is used up. */
export function quotaCheck(deps: QuotasDeps & { clock: { now(): number } }): QuotaCheck {
  return {
    async require(caller) {
      const now = deps.clock.now()
      const over = firstReached(await limitsFor(deps, caller, now))
      if (over) throw quotaExceeded(over, now)
    },
  }
}

/** What the composer says of the budgets: the refusal when one is used up, else a notice from 80% of one. */
export interface ComposerNotice {
  refused: boolean
  text: string
}

export async function composerNotice(deps: QuotasDeps, caller: Caller, now: number): Promise<ComposerNotice | null> {
  const limits = await limitsFor(deps, caller, now)
  const over = firstReached(limits)
  if (over) return { refused: true, text: refusalMessage(over, now) }
  const nearest = limits
    .filter((limit) => share(limit) >= noticeShare)
    .sort((a, b) => share(b) - share(a))
    .at(0)
  if (!nearest) return null
  const percent = Math.floor(share(nearest) * 100)
  return {
    refused: false,
    text:
      `${budgetName(nearest)} is ${percent}% used (${amount(nearest, nearest.used)} of ` +
      `${amount(nearest, nearest.limit)}). It resets on ${resetDay(now)} (UTC).`,
  }
}

/** One budget a person's answers count against, in words, with how much of it this month has used. */
export interface BudgetStanding {
  name: string
  used: string
  limit: string
  /** Whole percent used, capped at 100. */
  percent: number
}

/** What Settings → Usage says of a person's budgets this month; none when no budget applies to them. */
export async function budgetStandings(
  deps: QuotasDeps,
  caller: Caller,
  now: number,
): Promise<{ budgets: BudgetStanding[]; resets: string }> {
  const budgets = (await limitsFor(deps, caller, now)).map((limit) => ({
    name: budgetName(limit),
    used: amount(limit, limit.used),
    limit: amount(limit, limit.limit),
    percent: Math.min(100, Math.floor(share(limit) * 100)),
  }))
  return { budgets, resets: resetDay(now) }
}

// ---------------------------------------------------------------------------------------------------------
// Setting budgets (the caller checks the role: the administration pages and the operator's CLI)

export function viewBudgets(deps: QuotasDeps, organizationId: number): Promise<OrganizationBudgets> {
  return deps.quotas.budgets(organizationId)
}

/** What a change gives: each measure a new value (null: no limit), or undefined to keep what is stored. */
export interface BudgetChange {
  tokens?: number | null
  costMicros?: number | null
}

function changed(stored: Budget, change: BudgetChange): Budget {
  return {
    tokens: change.tokens === undefined ? stored.tokens : change.tokens,
    costMicros: change.costMicros === undefined ? stored.costMicros : change.costMicros,
  }
}

/** Who changes a budget, when, and from where: for the audit log. */
export interface BudgetAct {
  now: number
  origin: AuditOrigin
}

/** The event of a budget's change: `budget` is its new value, null when a member's own was removed. */
function budgetChanged(
  act: BudgetAct,
  organizationId: number,
  scope: 'organization' | 'member_default' | 'member',
  budget: Budget | null,
  userId?: number,
): AuditEntry {
  return auditEntry(act.origin, act.now, {
    organizationId,
    action: 'settings.quota_changed',
    target: userId === undefined ? target('organization', organizationId) : target('user', userId),
    detail: {
      budget: scope,
      removed: budget === null,
      tokens: budget?.tokens ?? null,
      cost_micros: budget?.costMicros ?? null,
    },
  })
}

export async function setOrganizationBudget(
  deps: QuotasDeps,
  organizationId: number,
  change: BudgetChange,
  act: BudgetAct,
): Promise<Budget> {
  const budget = changed((await deps.quotas.budgets(organizationId)).organization, change)
  await deps.quotas.setOrganizationBudget(
    organizationId,
    budget,
    budgetChanged(act, organizationId, 'organization', budget),
  )
  return budget
}

export async function setMemberDefault(
  deps: QuotasDeps,
  organizationId: number,
  change: BudgetChange,
  act: BudgetAct,
): Promise<Budget> {
  const budget = changed((await deps.quotas.budgets(organizationId)).memberDefault, change)
  await deps.quotas.setMemberDefault(
    organizationId,
    budget,
    budgetChanged(act, organizationId, 'member_default', budget),
  )
  return budget
}

/**
 * A member's own budget, which replaces the default for them (a measure left unlimited in it is unlimited for them).
 * A new override starts from the default: what the change does not name keeps the default's value. `null` removes
 * the override: they follow the default again. The caller has checked the member is of the organization.
 */
export async function setMemberOverride(
  deps: QuotasDeps,
  organizationId: number,
  userId: number,
  change: BudgetChange | null,
  act: BudgetAct,
): Promise<Budget | null> {
  if (change === null) {
    await deps.quotas.setMemberOverride(userId, null, budgetChanged(act, organizationId, 'member', null, userId))
    return null
  }
  const budgets = await deps.quotas.budgets(organizationId)
  const stored = budgets.overrides.find((override) => override.userId === userId) ?? budgets.memberDefault
  const budget = changed(stored, change)
  await deps.quotas.setMemberOverride(userId, budget, budgetChanged(act, organizationId, 'member', budget, userId))
  return budget
}

/** A budget in words: `1,000,000 tokens and 25.00 a month`, or `no limit`. */
export function describeBudget(budget: Budget): string {
  const parts = [
    ...(budget.tokens === null ? [] : [`${formatTokens(budget.tokens)} tokens`]),
    ...(budget.costMicros === null ? [] : [`${formatCost(budget.costMicros)} in cost`]),
  ]
  return parts.length === 0 ? 'no limit' : `${parts.join(' and ')} a month`
}
