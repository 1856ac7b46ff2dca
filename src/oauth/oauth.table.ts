// The OAuth 2.0 authorization server's state: clients, registration tokens, authorization codes, grants and
// the tokens issued under them. Every secret is stored as a SHA-256 hash only. Timestamps are epoch ms.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { organizations, users } from '../auth/auth.table'
import { clientAuthMethods, clientOrigins } from './clients.repository'

export const oauthClients = sqliteTable(
  'oauth_clients',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    clientId: text().notNull().unique(),
    origin: text({ enum: clientOrigins }).notNull(),
    /** Null for an openly registered client until the first organization approves it (and for `builtin`). */
    organizationId: integer().references(() => organizations.id, { onDelete: 'cascade' }),
    /** The member who created it (settings) or issued its registration token; null for open registration. */
    ownerId: integer().references(() => users.id, { onDelete: 'set null' }),
    name: text().notNull(),
    redirectUris: text({ mode: 'json' }).notNull().$type<string[]>(),
    /** Space-separated scopes the client may ask for. */
    scopes: text().notNull(),
    grantTypes: text({ mode: 'json' }).notNull().$type<string[]>(),
    responseTypes: text({ mode: 'json' }).notNull().$type<string[]>(),
    tokenEndpointAuthMethod: text({ enum: clientAuthMethods }).notNull(),
    /**
     * Whether the client named its method. One that did is held to it; one left to the default (client_secret_basic)
     * may also send its secret as form fields, the request shape the specification shows. Clients stored before
     * the rule are treated as undeclared, so none of them stops working.
     */
    tokenEndpointAuthMethodDeclared: integer({ mode: 'boolean' }).notNull().default(false),
    /** SHA-256 of the client secret; null for public clients. */
    secretHash: text(),
    clientUri: text(),
    logoUri: text(),
    tosUri: text(),
    policyUri: text(),
    createdAt: integer().notNull(),
    lastUsedAt: integer(),
  },
  (t) => [index('oauth_clients_organization_idx').on(t.organizationId)],
)

/** Single-use bearer tokens that let a client register into their issuer's organization (RFC 7591 §3). */
export const oauthRegistrationTokens = sqliteTable('oauth_registration_tokens', {
  id: integer().primaryKey({ autoIncrement: true }),
  tokenHash: text().notNull().unique(),
  userId: integer()
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  organizationId: integer()
    .notNull()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  createdAt: integer().notNull(),
  expiresAt: integer().notNull(),
  usedAt: integer(),
})

/**
 * One approval of a client by a user: the family of every token issued from one authorization code.
 * Revoking the grant kills every token in the family at once.
 */
export const oauthGrants = sqliteTable(
  'oauth_grants',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    clientId: integer()
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The scopes the user approved: the most any token of this family may carry. */
    scopes: text().notNull(),
    /**
     * RFC 8707: the one protected resource (`/api/v1` or `/mcp`, a path under PUBLIC_URL) this family's tokens are
     * for, or null for every resource of this server. A refresh may ask for it, never for another.
     */
    resource: text(),
    createdAt: integer().notNull(),
    /** When the family's newest token (usually its refresh token) expires; an app is "connected" until then. */
    expiresAt: integer().notNull(),
    lastUsedAt: integer(),
    revokedAt: integer(),
  },
  (t) => [index('oauth_grants_user_idx').on(t.userId), index('oauth_grants_client_idx').on(t.clientId)],
)

export const oauthAuthorizationCodes = sqliteTable(
  'oauth_authorization_codes',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    codeHash: text().notNull().unique(),
    clientId: integer()
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The redirect URI exactly as the authorization request sent it (port included). */
    redirectUri: text().notNull(),
    scopes: text().notNull(),
    /** PKCE S256 challenge, when the request carried one. */
    codeChallenge: text(),
    /** The resource the authorization request named (a path, as on the grant), or null for none. */
    resource: text(),
    createdAt: integer().notNull(),
    expiresAt: integer().notNull(),
    usedAt: integer(),
    /** The grant its first use created, so that a replay can revoke it. */
    grantId: integer().references(() => oauthGrants.id, { onDelete: 'cascade' }),
  },
  (t) => [index('oauth_authorization_codes_client_idx').on(t.clientId)],
)

export const oauthAccessTokens = sqliteTable(
  'oauth_access_tokens',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tokenHash: text().notNull().unique(),
    grantId: integer()
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    scopes: text().notNull(),
    /** The only resource that accepts this token (a path, as on the grant), or null for all of them. */
    resource: text(),
    createdAt: integer().notNull(),
    expiresAt: integer().notNull(),
    revokedAt: integer(),
  },
  (t) => [index('oauth_access_tokens_grant_idx').on(t.grantId)],
)

export const oauthRefreshTokens = sqliteTable(
  'oauth_refresh_tokens',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tokenHash: text().notNull().unique(),
    grantId: integer()
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    createdAt: integer().notNull(),
    expiresAt: integer().notNull(),
    /** Set when the token is exchanged; presenting it again afterwards revokes the whole grant. */
    usedAt: integer(),
  },
  (t) => [index('oauth_refresh_tokens_grant_idx').on(t.grantId)],
)
