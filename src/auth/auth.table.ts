// Organizations, their users and the users' personal access tokens. Timestamps are epoch milliseconds.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { roles } from './model'

export const organizations = sqliteTable('organizations', {
  id: integer().primaryKey({ autoIncrement: true }),
  slug: text().notNull().unique(),
  name: text().notNull(),
  createdAt: integer().notNull(),
  /** Threads not updated for this many days are deleted by the upkeep; null (the default) keeps them for good. */
  retentionDays: integer(),
  /** Whether members may share read-only links to threads (src/shares/); an owner or admin can turn it off. */
  sharingEnabled: integer({ mode: 'boolean' }).notNull().default(true),
  /** The configured models' IDs its members may use, as a JSON array; null (the default) allows every one. */
  allowedModels: text(),
  /** The model a thread without one of its own uses; null: the configuration's default (src/models/). */
  defaultModel: text(),
  /** Monthly budgets (src/quotas/): the organization's in all, and each member's unless overridden; null: none. */
  quotaTokens: integer(),
  /** In millionths of the models' currency. */
  quotaCostMicros: integer(),
  memberQuotaTokens: integer(),
  memberQuotaCostMicros: integer(),
})

export const users = sqliteTable(
  'users',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    sub: text().notNull().unique(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id),
    /** Stored lower-cased so sign-in is case-insensitive. */
    email: text().notNull().unique(),
    name: text(),
    role: text({ enum: roles }).notNull(),
    passwordHash: text().notNull(),
    /** Set for a password an admin saw (a one-time password): the person must choose their own before anything else. */
    mustChangePassword: integer({ mode: 'boolean' }).notNull().default(false),
    createdAt: integer().notNull(),
    /**
     * When an admin removed the person from the organization. The row stays so their threads keep an owner;
     * a removed user cannot sign in and none of their sessions or tokens work.
     */
    removedAt: integer(),
  },
  (t) => [index('users_organization_idx').on(t.organizationId)],
)

export const personalAccessTokens = sqliteTable(
  'personal_access_tokens',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    /** SHA-256 of the token; the token itself is shown once and never stored. */
    tokenHash: text().notNull().unique(),
    /** Space-separated scopes. */
    scopes: text().notNull(),
    createdAt: integer().notNull(),
    lastUsedAt: integer(),
    expiresAt: integer(),
    revokedAt: integer(),
  },
  (t) => [index('personal_access_tokens_user_idx').on(t.userId)],
)
