// PostgreSQL twin of quotas.table.ts. Keep the two in step.
import { bigint, integer, pgTable } from 'drizzle-orm/pg-core'
import { users } from '../auth/auth.table.pg'

export const memberQuotas = pgTable('member_quotas', {
  userId: integer()
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  tokens: bigint({ mode: 'number' }),
  costMicros: bigint({ mode: 'number' }),
})
