// PostgreSQL twin of oauth.table.ts (clients, registration tokens, grants, codes and tokens): the same columns
// and indexes, with real booleans and bigint epoch-millisecond timestamps. Keep the two in step.
import { bigint, boolean, customType, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { organizations, users } from '../auth/auth.table.pg'
import { clientAuthMethods, clientOrigins } from './clients.repository'

const epochMs = () => bigint({ mode: 'number' })

/** A list of strings kept as JSON text, as on SQLite. */
const stringList = customType<{ data: string[]; driverData: string }>({
  dataType: () => 'text',
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => JSON.parse(value),
})

export const oauthClients = pgTable(
  'oauth_clients',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    clientId: text().notNull().unique(),
    origin: text({ enum: clientOrigins }).notNull(),
    organizationId: integer().references(() => organizations.id, { onDelete: 'cascade' }),
    ownerId: integer().references(() => users.id, { onDelete: 'set null' }),
    name: text().notNull(),
    redirectUris: stringList().notNull(),
    scopes: text().notNull(),
    grantTypes: stringList().notNull(),
    responseTypes: stringList().notNull(),
    tokenEndpointAuthMethod: text({ enum: clientAuthMethods }).notNull(),
    tokenEndpointAuthMethodDeclared: boolean().notNull().default(false),
    secretHash: text(),
    clientUri: text(),
    logoUri: text(),
    tosUri: text(),
    policyUri: text(),
    createdAt: epochMs().notNull(),
    lastUsedAt: epochMs(),
  },
  (t) => [index('oauth_clients_organization_idx').on(t.organizationId)],
)

export const oauthRegistrationTokens = pgTable('oauth_registration_tokens', {
  id: integer().primaryKey().generatedByDefaultAsIdentity(),
  tokenHash: text().notNull().unique(),
  userId: integer()
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  organizationId: integer()
    .notNull()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  createdAt: epochMs().notNull(),
  expiresAt: epochMs().notNull(),
  usedAt: epochMs(),
})

export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    clientId: integer()
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    scopes: text().notNull(),
    resource: text(),
    createdAt: epochMs().notNull(),
    expiresAt: epochMs().notNull(),
    lastUsedAt: epochMs(),
    revokedAt: epochMs(),
  },
  (t) => [index('oauth_grants_user_idx').on(t.userId), index('oauth_grants_client_idx').on(t.clientId)],
)

export const oauthAuthorizationCodes = pgTable(
  'oauth_authorization_codes',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    codeHash: text().notNull().unique(),
    clientId: integer()
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    redirectUri: text().notNull(),
    scopes: text().notNull(),
    codeChallenge: text(),
    resource: text(),
    createdAt: epochMs().notNull(),
    expiresAt: epochMs().notNull(),
    usedAt: epochMs(),
    grantId: integer().references(() => oauthGrants.id, { onDelete: 'cascade' }),
  },
  (t) => [index('oauth_authorization_codes_client_idx').on(t.clientId)],
)

export const oauthAccessTokens = pgTable(
  'oauth_access_tokens',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    tokenHash: text().notNull().unique(),
    grantId: integer()
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    scopes: text().notNull(),
    resource: text(),
    createdAt: epochMs().notNull(),
    expiresAt: epochMs().notNull(),
    revokedAt: epochMs(),
  },
  (t) => [index('oauth_access_tokens_grant_idx').on(t.grantId)],
)

export const oauthRefreshTokens = pgTable(
  'oauth_refresh_tokens',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    tokenHash: text().notNull().unique(),
    grantId: integer()
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    createdAt: epochMs().notNull(),
    expiresAt: epochMs().notNull(),
    usedAt: epochMs(),
  },
  (t) => [index('oauth_refresh_tokens_grant_idx').on(t.grantId)],
)
