// PostgreSQL twin of generations.table.ts, the durable work queue. Keep the two in step.
import { bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { messages, threads } from '../threads/threads.table.pg'
import { generationStatuses } from './generations.table'

export const generations = pgTable(
  'generations',
  {
    messageId: text()
      .primaryKey()
      .references(() => messages.id, { onDelete: 'cascade' }),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    status: text({ enum: generationStatuses }).notNull(),
    error: text(),
    attempts: integer().notNull().default(0),
    createdAt: bigint({ mode: 'number' }).notNull(),
    finishedAt: bigint({ mode: 'number' }),
  },
  (t) => [index('generations_status_idx').on(t.status)],
)
