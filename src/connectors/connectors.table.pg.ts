// PostgreSQL twin of connectors.table.ts. Keep the two in step.
import { bigint, boolean, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { organizations, users } from '../auth/auth.table.pg'
import { mcpServerAuths, mcpServerStatuses } from './connectors.table'

export const mcpServers = pgTable(
  'mcp_servers',
  {
    id: text().primaryKey(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    url: text().notNull(),
    auth: text({ enum: mcpServerAuths }).notNull(),
    headersSealed: text(),
    headerNames: text().notNull().default('[]'),
    trusted: boolean().notNull().default(false),
    enabled: boolean().notNull().default(true),
    status: text({ enum: mcpServerStatuses }).notNull().default('pending'),
    lastError: text(),
    toolsRefreshedAt: bigint({ mode: 'number' }),
    createdBy: integer().references(() => users.id, { onDelete: 'set null' }),
    createdAt: bigint({ mode: 'number' }).notNull(),
    updatedAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [uniqueIndex('mcp_servers_org_name_idx').on(t.organizationId, t.name)],
)

export const mcpServerTools = pgTable(
  'mcp_server_tools',
  {
    serverId: text()
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    title: text(),
    description: text().notNull().default(''),
    inputSchema: text().notNull(),
    outputSchema: text(),
    annotations: text(),
    readOnly: boolean().notNull().default(false),
    enabled: boolean().notNull(),
    problem: text(),
    firstSeenAt: bigint({ mode: 'number' }).notNull(),
    updatedAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.name] })],
)

export const mcpServerOauth = pgTable('mcp_server_oauth', {
  serverId: text()
    .primaryKey()
    .references(() => mcpServers.id, { onDelete: 'cascade' }),
  clientInformationSealed: text(),
  tokensSealed: text(),
  discoveryState: text(),
  authorizedBy: integer().references(() => users.id, { onDelete: 'set null' }),
  authorizedAt: bigint({ mode: 'number' }),
})

export const mcpOauthFlows = pgTable(
  'mcp_oauth_flows',
  {
    stateHash: text().primaryKey(),
    serverId: text()
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    codeVerifierSealed: text().notNull(),
    discoveryState: text(),
    clientInformationSealed: text(),
    createdAt: bigint({ mode: 'number' }).notNull(),
    expiresAt: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [index('mcp_oauth_flows_expires_idx').on(t.expiresAt)],
)
