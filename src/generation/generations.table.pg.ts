// PostgreSQL twin of generations.table.ts, the durable work queue. Keep the two in step. Several instances may share
// this database, so a running answer also carries a lease: who runs it, and until when (see repository.pg.ts).
import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
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
    model: text(),
    runId: text(),
    /** The claim's own ID while `running`: only its holder may store the answer or publish its text (fencing). */
    leaseId: text(),
    /** The instance holding the lease, for logs and the operator. */
    leasedBy: text(),
    /** When the lease ends unless renewed: then another instance takes the answer over. */
    leaseExpiresAt: bigint({ mode: 'number' }),
  },
  (t) => [index('generations_status_idx').on(t.status)],
)

/**
 * The text of running answers as it is generated, so that a stream opened on another instance (or joining late,
 * or catching up after a lost notification) reads what it missed. Rows go when the answer is stored. The table is
 * UNLOGGED (see the migration): its rows matter only while their answer runs, and a crashed database restarts every
 * running answer anyway.
 */
export const answerChunks = pgTable(
  'answer_chunks',
  {
    messageId: text()
      .notNull()
      .references(() => generations.messageId, { onDelete: 'cascade' }),
    leaseId: text().notNull(),
    /** Offsets into the answer's text, in UTF-16 code units as the SSE event IDs are. */
    start: integer().notNull(),
    end: integer().notNull(),
    text: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.leaseId, t.start] })],
)
