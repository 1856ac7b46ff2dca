// The remote MCP servers an organization connects, the tools each one lists, the OAuth state of those that sign in
// with OAuth, and the authorizations under way in an admin's browser. Secrets (header values, tokens, the client's
// registration, PKCE verifiers) are stored sealed (shared/secret-box.ts): the key lives in the environment, never
// beside them. Keep in step with connectors.table.pg.ts.
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { organizations, users } from '../auth/auth.table'

export const mcpServerAuths = ['none', 'headers', 'oauth'] as const
export const mcpServerStatuses = ['pending', 'ok', 'needs_authorization', 'error'] as const

export const mcpServers = sqliteTable(
  'mcp_servers',
  {
    id: text().primaryKey(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Unique in the organization and never changed: thread settings name tools as `server/tool`. */
    name: text().notNull(),
    url: text().notNull(),
    auth: text({ enum: mcpServerAuths }).notNull(),
    /** Sealed JSON `{name: value}` of the static headers (auth `headers`); null otherwise. */
    headersSealed: text(),
    /** The headers' names alone, a JSON list: what pages may show. */
    headerNames: text().notNull().default('[]'),
    /** Its tools that may change something run without asking the thread's owner first. */
    trusted: integer({ mode: 'boolean' }).notNull().default(false),
    enabled: integer({ mode: 'boolean' }).notNull().default(true),
    status: text({ enum: mcpServerStatuses }).notNull().default('pending'),
    lastError: text(),
    toolsRefreshedAt: integer(),
    createdBy: integer().references(() => users.id, { onDelete: 'set null' }),
    createdAt: integer().notNull(),
    updatedAt: integer().notNull(),
  },
  // Also serves every read of an organization's servers (its leading column).
  (t) => [uniqueIndex('mcp_servers_org_name_idx').on(t.organizationId, t.name)],
)

export const mcpServerTools = sqliteTable(
  'mcp_server_tools',
  {
    serverId: text()
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    title: text(),
    description: text().notNull().default(''),
    /** JSON Schema of the arguments, as the server listed it (JSON text). */
    inputSchema: text().notNull(),
    outputSchema: text(),
    /** The server's annotations (JSON text): its own claims, shown to admins. */
    annotations: text(),
    /** `annotations.readOnlyHint === true`: called without asking, even on a server not trusted. */
    readOnly: integer({ mode: 'boolean' }).notNull().default(false),
    enabled: integer({ mode: 'boolean' }).notNull(),
    /** Why the tool is never offered (a bad schema, too large, an invalid name); null when it may be. */
    problem: text(),
    firstSeenAt: integer().notNull(),
    updatedAt: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.name] })],
)

export const mcpServerOauth = sqliteTable('mcp_server_oauth', {
  serverId: text()
    .primaryKey()
    .references(() => mcpServers.id, { onDelete: 'cascade' }),
  /** Sealed JSON of the client's registration at the authorization server. */
  clientInformationSealed: text(),
  /** Sealed JSON `{access_token, refresh_token, expires_at, scope}`; swapped compare-and-set (refreshes race). */
  tokensSealed: text(),
  /** Plain JSON: the resource's and the authorization server's metadata, which are public. */
  discoveryState: text(),
  authorizedBy: integer().references(() => users.id, { onDelete: 'set null' }),
  authorizedAt: integer(),
})

/** An authorization an admin started in the browser, until its callback comes back (or ten minutes pass). */
export const mcpOauthFlows = sqliteTable(
  'mcp_oauth_flows',
  {
    /** SHA-256 of the `state` sent to the authorization server: the state itself is never stored. */
    stateHash: text().primaryKey(),
    serverId: text()
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    codeVerifierSealed: text().notNull(),
    /**
     * Plain JSON: the discovery this flow made, and its sealed registration. They become the server's only with the
     * tokens they get at the callback, so an abandoned Authorize leaves a working server as it was. Null in flows
     * begun before these columns (the admin starts again).
     */
    discoveryState: text(),
    clientInformationSealed: text(),
    createdAt: integer().notNull(),
    expiresAt: integer().notNull(),
  },
  (t) => [index('mcp_oauth_flows_expires_idx').on(t.expiresAt)],
)
