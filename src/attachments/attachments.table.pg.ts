// PostgreSQL twin of attachments.table.ts. Keep the two in step.
import { bigint, boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { threads } from '../threads/threads.table.pg'
import { attachmentKinds } from './repository'

export const attachments = pgTable(
  'attachments',
  {
    id: text().primaryKey(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    kind: text({ enum: attachmentKinds }).notNull(),
    mediaType: text().notNull(),
    filename: text().notNull(),
    sizeBytes: integer().notNull(),
    resized: boolean().notNull().default(false),
    createdAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [index('attachments_thread_idx').on(t.threadId, t.id)],
)
