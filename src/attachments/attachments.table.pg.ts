// PostgreSQL twin of attachments.table.ts. Keep the two in step.
import { sql } from 'drizzle-orm'
import { bigint, boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { threads } from '../threads/threads.table.pg'
import { attachmentTextStates } from './attachments.table'
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

/** A file's text as search uses it, and the file indexer's queue (see attachments.table.ts). */
export const attachmentTexts = pgTable(
  'attachment_texts',
  {
    attachmentId: text()
      .primaryKey()
      .references(() => attachments.id, { onDelete: 'cascade' }),
    state: text({ enum: attachmentTextStates }).notNull(),
    text: text(),
    words: text(),
    truncated: boolean().notNull().default(false),
    indexedAt: bigint({ mode: 'number' }),
    attempts: integer().notNull().default(0),
    leaseExpiresAt: bigint({ mode: 'number' }),
  },
  (t) => [index('attachment_texts_pending_idx').on(t.state).where(sql`${t.state} = 'pending'`)],
)
