// PostgreSQL twin of auth.table.ts (organizations, users, personal access tokens): the same columns and indexes,
// with real booleans and bigint epoch-millisecond timestamps. Keep the two in step.
import { bigint, boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { roles } from './model'

const epochMs = () => bigint({ mode: 'number' })

export const organizations = pgTable('organizations', {
  id: integer().primaryKey().generatedByDefaultAsIdentity(),
  slug: text().notNull().unique(),
  name: text().notNull(),
  createdAt: epochMs().notNull(),
  retentionDays: integer(),
  sharingEnabled: boolean().notNull().default(true),
  allowedModels: text(),
  defaultModel: text(),
  quotaTokens: bigint({ mode: 'number' }),
  quotaCostMicros: bigint({ mode: 'number' }),
  memberQuotaTokens: bigint({ mode: 'number' }),
  memberQuotaCostMicros: bigint({ mode: 'number' }),
})

export const users = pgTable(
  'users',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    sub: text().notNull().unique(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id),
    email: text().notNull().unique(),
    name: text(),
    role: text({ enum: roles }).notNull(),
    passwordHash: text().notNull(),
    mustChangePassword: boolean().notNull().default(false),
    createdAt: epochMs().notNull(),
    removedAt: epochMs(),
  },
  (t) => [index('users_organization_idx').on(t.organizationId)],
)

export const personalAccessTokens = pgTable(
  'personal_access_tokens',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    tokenHash: text().notNull().unique(),
    scopes: text().notNull(),
    createdAt: epochMs().notNull(),
    lastUsedAt: epochMs(),
    expiresAt: epochMs(),
    revokedAt: epochMs(),
  },
  (t) => [index('personal_access_tokens_user_idx').on(t.userId)],
)
