// Share links: read-only snapshots of a thread that anyone holding the link may read without signing in. Keep in step
// with shares.table.pg.ts.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { organizations, users } from '../auth/auth.table'
import { threads } from '../threads/threads.table'

export const shares = sqliteTable(
  'shares',
  {
    id: text().primaryKey(),
    /** The link goes with its thread: a deleted thread's links answer 404 from the same commit on. */
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    /** A copy of the thread's organization, for the administration's list of every live link. */
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    createdBy: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** SHA-256 of the link's token (`ths_…`); the token itself is shown once, in the link, and never stored. */
    tokenHash: text().notNull().unique(),
    /** Whether the page shows the snapshot's images and files (served from the thread's stored attachments). */
    includeFiles: integer({ mode: 'boolean' }).notNull(),
    /** The thread as it was shared: its name and active messages as JSON (src/shares/repository.ts, Snapshot). */
    /** The thread's name when it was shared, for the lists (also in the snapshot, which lists do not read). */
    threadName: text(),
    snapshot: text().notNull(),
    createdAt: integer().notNull(),
  },
  (t) => [
    index('shares_thread_idx').on(t.threadId, t.createdAt),
    index('shares_created_by_idx').on(t.createdBy, t.createdAt),
    index('shares_organization_idx').on(t.organizationId, t.createdAt),
  ],
)
