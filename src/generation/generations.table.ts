// One row per user message that asked for an answer: the durable work queue. A row that is still
// `queued` or `running` when the process starts is work a crash interrupted, and is run again.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { messages, threads } from '../threads/threads.table'

export const generationStatuses = ['queued', 'running', 'complete', 'error', 'interrupted'] as const

export const generations = sqliteTable(
  'generations',
  {
    messageId: text()
      .primaryKey()
      .references(() => messages.id, { onDelete: 'cascade' }),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    status: text({ enum: generationStatuses }).notNull(),
    /** The message shown to clients when status is `error` or `interrupted`. */
    error: text(),
    attempts: integer().notNull().default(0),
    createdAt: integer().notNull(),
    finishedAt: integer(),
    /** The model this answer was asked of (a regenerate's choice); null: the thread's, else the organization's. */
    model: text(),
    /**
     * The run this answer's tool calls are recorded under: set by the first claim and kept by a takeover or a
     * release (the run goes on where it was), cleared when the answer ends (a regenerate starts a new run).
     */
    runId: text(),
  },
  (t) => [index('generations_status_idx').on(t.status)],
)
