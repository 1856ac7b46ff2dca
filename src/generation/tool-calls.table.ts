// What the tools did in answers: each round of tool calls an answer's model asked for (the text it wrote before
// them and what the request used) and each call, with its arguments, outcome, result and the person's decision when
// it needed one. An answer's record, so it is generation's; the servers are the connectors feature's, which
// generation never imports: `server_id` names one without a foreign key, and `server_name` keeps what it was called.
// Keep in step with tool-calls.table.pg.ts.
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { threads } from '../threads/threads.table'
import { generations } from './generations.table'
import type { ToolCallStatus } from './types'

export const toolCallStatuses = [
  'running',
  'ok',
  'error',
  'timeout',
  'refused',
  'awaiting_approval',
  'allowed',
  'denied',
  'unknown',
] as const satisfies readonly ToolCallStatus[]

/**
 * One reply of the model that asked for tool calls. A chain is the run that started it (its `run_id`); a chain
 * continued after a person's decision keeps its ID and numbers its rounds on, under the new run.
 */
export const toolRounds = sqliteTable(
  'tool_rounds',
  {
    chainId: text().notNull(),
    round: integer().notNull(),
    /** The run (generations.run_id) that recorded it. */
    runId: text().notNull(),
    /** The user message whose answer recorded it. */
    questionId: text()
      .notNull()
      .references(() => generations.messageId, { onDelete: 'cascade' }),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    /** What the reply wrote before its calls. */
    text: text().notNull(),
    /** What the request used, as the provider reported it; null: not reported. */
    inputTokens: integer(),
    outputTokens: integer(),
    cachedInputTokens: integer(),
    createdAt: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.round] }),
    // For the cascades: a deleted thread or question finds its rounds without a scan.
    index('tool_rounds_thread_idx').on(t.threadId),
    index('tool_rounds_question_idx').on(t.questionId),
  ],
)

export const toolCalls = sqliteTable(
  'tool_calls',
  {
    id: text().primaryKey(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    chainId: text().notNull(),
    round: integer().notNull(),
    /** Its place among the round's calls, in the order of the reply. */
    position: integer().notNull(),
    /** The run that asked for it. */
    runId: text().notNull(),
    /** The assistant message it belongs to, set when that run's answer is stored. */
    answerId: text(),
    /** The vendor's ID of the call, cleaned (providers/choice-tool.ts toolUseId). */
    toolUseId: text().notNull(),
    /** The name the model called it by (`<server>__<tool>`, cleaned). */
    modelName: text().notNull(),
    serverId: text(),
    serverName: text().notNull(),
    toolName: text().notNull(),
    /** The arguments as the model wrote them (JSON text, at most 64 KiB). */
    arguments: text().notNull(),
    status: text({ enum: toolCallStatuses }).notNull(),
    /** What the model was told, at most TOOLS_RESULT_MAX_CHARS; `result_chars` is the full result's length. */
    result: text(),
    resultChars: integer(),
    /** A short reason when it did not succeed. */
    error: text(),
    /** The `tool_use_id` of the `user_get_choice` block that asks the thread's owner about it. */
    approvalId: text(),
    /** The user message that allowed or denied it. */
    decidedBy: text(),
    decidedAt: integer(),
    startedAt: integer().notNull(),
    finishedAt: integer(),
    durationMs: integer(),
  },
  (t) => [
    index('tool_calls_chain_idx').on(t.chainId, t.round, t.position),
    index('tool_calls_answer_idx').on(t.answerId),
    index('tool_calls_thread_idx').on(t.threadId),
    // The end of every answer attaches its run's calls to the stored message.
    index('tool_calls_run_idx').on(t.runId),
    uniqueIndex('tool_calls_approval_idx').on(t.approvalId),
  ],
)
