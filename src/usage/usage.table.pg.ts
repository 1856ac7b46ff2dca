// PostgreSQL twin of usage.table.ts. Keep the two in step.
import { bigint, boolean, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { usageOutcomes } from './usage.table'

const epochMs = () => bigint({ mode: 'number' })

export const answerUsage = pgTable(
  'answer_usage',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    organizationId: integer().notNull(),
    userId: integer().notNull(),
    threadId: text().notNull(),
    questionId: text().notNull(),
    answerId: text(),
    model: text().notNull(),
    inputTokens: integer().notNull().default(0),
    outputTokens: integer().notNull().default(0),
    cachedInputTokens: integer().notNull().default(0),
    estimated: boolean().notNull().default(false),
    costMicros: bigint({ mode: 'number' }),
    currency: text(),
    firstTokenMs: integer(),
    totalMs: integer(),
    outcome: text({ enum: usageOutcomes }).notNull(),
    createdAt: epochMs().notNull(),
  },
  (t) => [
    index('answer_usage_org_created_idx').on(t.organizationId, t.createdAt),
    index('answer_usage_user_created_idx').on(t.userId, t.createdAt),
    index('answer_usage_answer_idx').on(t.answerId),
  ],
)

export const usageTotals = pgTable(
  'usage_totals',
  {
    period: text().notNull(),
    organizationId: integer().notNull(),
    userId: integer().notNull(),
    tokens: bigint({ mode: 'number' }).notNull().default(0),
    costMicros: bigint({ mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.period, t.organizationId, t.userId] })],
)
