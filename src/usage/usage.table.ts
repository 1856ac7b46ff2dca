// What answers cost: one row per answer that ran (kept when its thread is deleted: the thread and message IDs stay
// as plain text, with no content), and running totals per month for what quotas read in one indexed lookup.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const usageOutcomes = ['complete', 'stopped', 'failed'] as const

export const answerUsage = sqliteTable(
  'answer_usage',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    organizationId: integer().notNull(),
    /** The thread's owner when the answer ran: the person it counts against. */
    userId: integer().notNull(),
    threadId: text().notNull(),
    /** The user message the answer replied to. */
    questionId: text().notNull(),
    /** The assistant message it stored; null when it stored none (failed or stopped before any text). */
    answerId: text(),
    /** The configured model's ID. */
    model: text().notNull(),
    inputTokens: integer().notNull().default(0),
    outputTokens: integer().notNull().default(0),
    cachedInputTokens: integer().notNull().default(0),
    /** The counts are the server's estimate (the echo responder, or a provider that reported none). */
    estimated: integer({ mode: 'boolean' }).notNull().default(false),
    /** In millionths of `currency`; null when the model has no price (never a guessed cost). */
    costMicros: integer(),
    currency: text(),
    firstTokenMs: integer(),
    totalMs: integer(),
    outcome: text({ enum: usageOutcomes }).notNull(),
    createdAt: integer().notNull(),
  },
  (t) => [
    index('answer_usage_org_created_idx').on(t.organizationId, t.createdAt),
    index('answer_usage_user_created_idx').on(t.userId, t.createdAt),
    index('answer_usage_answer_idx').on(t.answerId),
  ],
)

/**
 * Totals per calendar month (UTC, `period` as YYYY-MM) for an organization (`userId` 0) and for each member,
 * added to in the same unit of work that records an answer's usage.
 */
export const usageTotals = sqliteTable(
  'usage_totals',
  {
    period: text().notNull(),
    organizationId: integer().notNull(),
    userId: integer().notNull(),
    tokens: integer().notNull().default(0),
    costMicros: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.period, t.organizationId, t.userId] })],
)
