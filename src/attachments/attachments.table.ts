// Files uploaded to a thread. The bytes live in the blob store (UPLOADS_DIR or a bucket), keyed by the attachment's
// ID (see keys.ts, repository.ts); a row exists only once its files are in place, and files without a row are never
// read.
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
