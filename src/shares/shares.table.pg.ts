// PostgreSQL twin of shares.table.ts. Keep the two in step.
import { bigint, boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { organizations, users } from '../auth/auth.table.pg'
import { threads } from '../threads/threads.table.pg'

export const shares = pgTable(
  'shares',
  {
    id: text().primaryKey(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    createdBy: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text().notNull().unique(),
    includeFiles: boolean().notNull(),
    threadName: text(),
    snapshot: text().notNull(),
    createdAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [
    index('shares_thread_idx').on(t.threadId, t.createdAt),
    index('shares_created_by_idx').on(t.createdBy, t.createdAt),
    index('shares_organization_idx').on(t.organizationId, t.createdAt),
  ],
)
