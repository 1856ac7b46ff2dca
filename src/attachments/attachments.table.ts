// Files uploaded to a thread. The bytes live in the blob store (UPLOADS_DIR or a bucket), keyed by the attachment's
// ID (see keys.ts, repository.ts); a row exists only once its files are in place, and files without a row are never
// read.
import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { threads } from '../threads/threads.table'
import { attachmentKinds } from './repository'

export const attachments = sqliteTable(
  'attachments',
  {
    id: text().primaryKey(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    kind: text({ enum: attachmentKinds }).notNull(),
    /** Decided from the bytes, never from what the client declared. */
    mediaType: text().notNull(),
    /** The sanitised display name; never used to name anything on disk. */
    filename: text().notNull(),
    sizeBytes: integer().notNull(),
    /** True when a model-ready copy, scaled down, is stored beside the original. */
    resized: integer({ mode: 'boolean' }).notNull().default(false),
    createdAt: integer().notNull(),
  },
  (t) => [index('attachments_thread_idx').on(t.threadId, t.id)],
)

/** Where a file's text stands for search: waiting to be read, read, not readable (a damaged PDF), or holding none. */
export const attachmentTextStates = ['pending', 'indexed', 'unreadable', 'empty'] as const

/**
 * A file's text as search uses it, derived from its bytes after the answer to the message that attached it has
 * ended. A `pending` row is the file indexer's queue: the message's insert writes it in the same transaction, so a
 * crash loses no file. The row outlives the message that named it (an edit or a version switch may bring it back)
 * and goes with the file.
 */
export const attachmentTexts = sqliteTable(
  'attachment_texts',
  {
    attachmentId: text()
      .primaryKey()
      .references(() => attachments.id, { onDelete: 'cascade' }),
    state: text({ enum: attachmentTextStates }).notNull(),
    /** The first 100,000 characters, as written: what snippets and phrase checks read. */
    text: text(),
    /** The text's distinct search tokens, space-separated (search-text.ts): what a thread's document takes in. */
    words: text(),
    /** True when the file held more text than is kept. */
    truncated: integer({ mode: 'boolean' }).notNull().default(false),
    indexedAt: integer(),
    /** Times an indexer has taken the file: a file that ends none of them (a crash, a machine too busy) is given up. */
    attempts: integer().notNull().default(0),
    /** Until when the indexer that took the file has it; another instance takes it only after (file-texts.ts). */
    leaseExpiresAt: integer(),
  },
  (t) => [index('attachment_texts_pending_idx').on(t.state).where(sql`${t.state} = 'pending'`)],
)
