// PostgreSQL twin of tool-calls.table.ts. Keep the two in step.
import { bigint, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { threads } from '../threads/threads.table.pg'
import { generations } from './generations.table.pg'
import { toolCallStatuses } from './tool-calls.table'

export const toolRounds = pgTable(
  'tool_rounds',
  {
    chainId: text().notNull(),
    round: integer().notNull(),
    runId: text().notNull(),
    questionId: text()
      .notNull()
      .references(() => generations.messageId, { onDelete: 'cascade' }),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    text: text().notNull(),
    inputTokens: bigint({ mode: 'number' }),
    outputTokens: bigint({ mode: 'number' }),
    cachedInputTokens: bigint({ mode: 'number' }),
    createdAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.round] }),
    index('tool_rounds_thread_idx').on(t.threadId),
    index('tool_rounds_question_idx').on(t.questionId),
  ],
)

export const toolCalls = pgTable(
  'tool_calls',
  {
    id: text().primaryKey(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    chainId: text().notNull(),
    round: integer().notNull(),
    position: integer().notNull(),
    runId: text().notNull(),
    answerId: text(),
    toolUseId: text().notNull(),
    modelName: text().notNull(),
    serverId: text(),
    serverName: text().notNull(),
    toolName: text().notNull(),
    arguments: text().notNull(),
    status: text({ enum: toolCallStatuses }).notNull(),
    result: text(),
    resultChars: integer(),
    error: text(),
    approvalId: text(),
    decidedBy: text(),
    decidedAt: bigint({ mode: 'number' }),
    startedAt: bigint({ mode: 'number' }).notNull(),
    finishedAt: bigint({ mode: 'number' }),
    durationMs: bigint({ mode: 'number' }),
  },
  (t) => [
    index('tool_calls_chain_idx').on(t.chainId, t.round, t.position),
    index('tool_calls_answer_idx').on(t.answerId),
    index('tool_calls_thread_idx').on(t.threadId),
    index('tool_calls_run_idx').on(t.runId),
    uniqueIndex('tool_calls_approval_idx').on(t.approvalId),
  ],
)
