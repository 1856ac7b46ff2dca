// Monthly budgets: an organization's own and its default per member live on `organizations` (auth.table.ts); a
// member's override lives here. Null means no limit; a budget may be in tokens, in cost, or both.
import { integer, sqliteTable } from 'drizzle-orm/sqlite-core'
import { users } from '../auth/auth.table'

export const memberQuotas = sqliteTable('member_quotas', {
  userId: integer()
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  tokens: integer(),
  /** In millionths of the organization's currency. */
  costMicros: integer(),
})
