// The connected MCP servers on either database (repository.ts): every method is one statement, the same on both
// dialects (db/dialect.ts), but for the tool list, whose statements run as one unit (the dialect's `Unit`).
import { and, asc, eq, inArray, isNull, lte, notInArray, sql } from 'drizzle-orm'
import type { AnyDb, Audited, Unit } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import { isObject } from '../shared/objects'
import type * as tables from './connectors.table.pg'
import {
  type DiscoveredTool,
  type McpOAuthPatch,
  type McpOAuthRow,
  type McpServerRepository,
  type McpServerRow,
  type McpToolRow,
  type OfferableTool,
  readOnlyOf,
} from './repository'

export type ConnectorTables = typeof tables
type ServerRow = ConnectorTables['mcpServers']['$inferSelect']
type ToolRow = ConnectorTables['mcpServerTools']['$inferSelect']
type OAuthRow = ConnectorTables['mcpServerOauth']['$inferSelect']

function json(text: string | null): unknown {
  return text === null ? null : JSON.parse(text)
}

function jsonText(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value)
}

function serverOf(row: ServerRow): McpServerRow {
  const names = json(row.headerNames)
  return { ...row, headerNames: Array.isArray(names) ? names.filter((name) => typeof name === 'string') : [] }
}

function toolOf(row: ToolRow): McpToolRow {
  const annotations = json(row.annotations)
  return {
    ...row,
    inputSchema: json(row.inputSchema),
    outputSchema: json(row.outputSchema),
    annotations: isObject(annotations) ? annotations : null,
  }
}

function oauthOf(row: OAuthRow): McpOAuthRow {
  return { ...row, discoveryState: json(row.discoveryState) }
}

/** The value of the row an upsert would have inserted (`excluded.<column>`), on both dialects. */
const excluded = (column: string) => sql.raw(`excluded.${column}`)

export function mcpServerRepository(
  db: AnyDb,
  { mcpServers, mcpServerTools, mcpServerOauth, mcpOauthFlows }: ConnectorTables,
  unit: Unit,
  audited: Audited,
): McpServerRepository {
  const ofOrganization = (organizationId: number, id: string) =>
    and(eq(mcpServers.id, id), eq(mcpServers.organizationId, organizationId))
  const changed = async (rows: Promise<unknown[]>) => (await rows).length > 0
  // Read as every answer is prepared, for the tools it may offer: built and prepared once per database.
  const offerable = () =>
    prepared(db as unknown as PgDb, 'connectors:offerable', () =>
      db
        .select({ server: mcpServers, tool: mcpServerTools })
        .from(mcpServerTools)
        .innerJoin(mcpServers, eq(mcpServers.id, mcpServerTools.serverId))
        .where(
          and(
            eq(mcpServers.organizationId, sql.placeholder('organizationId')),
            eq(mcpServers.enabled, true),
            eq(mcpServerTools.enabled, true),
            isNull(mcpServerTools.problem),
          ),
        )
        .orderBy(asc(mcpServers.name), asc(mcpServerTools.name))
        .prepare('mcp_offerable'),
    )

  return {
    async add({ headerNames, now, ...row }, audit) {
      const [added] = await audited<typeof mcpServers.$inferSelect>(
        (tx) => [
          tx
            .insert(mcpServers)
            .values({ ...row, headerNames: JSON.stringify(headerNames), createdAt: now, updatedAt: now })
            .onConflictDoNothing({ target: [mcpServers.organizationId, mcpServers.name] })
            .returning(),
        ],
        ([stored]) => (stored ? audit(serverOf(stored)) : null),
      )
      return added ? serverOf(added) : null
    },

    async list(organizationId) {
      const rows = await db
        .select()
        .from(mcpServers)
        .where(eq(mcpServers.organizationId, organizationId))
        .orderBy(asc(mcpServers.name))
      return rows.map(serverOf)
    },

    async get(organizationId, id) {
      const [row] = await db.select().from(mcpServers).where(ofOrganization(organizationId, id))
      return row ? serverOf(row) : null
    },

    async byName(organizationId, name) {
      const [row] = await db
        .select()
        .from(mcpServers)
        .where(and(eq(mcpServers.organizationId, organizationId), eq(mcpServers.name, name)))
      return row ? serverOf(row) : null
    },

    update(organizationId, id, { headerNames, ...patch }) {
      const set = headerNames === undefined ? patch : { ...patch, headerNames: JSON.stringify(headerNames) }
      return changed(
        db.update(mcpServers).set(set).where(ofOrganization(organizationId, id)).returning({ id: mcpServers.id }),
      )
    },

    // Its tools, OAuth state and flows go by their foreign keys' cascade.
    async remove(organizationId, id, audit) {
      const removed = await audited<{ name: string; url: string }>(
        (tx) => [
          tx
            .delete(mcpServers)
            .where(ofOrganization(organizationId, id))
            .returning({ name: mcpServers.name, url: mcpServers.url }),
        ],
        ([server]) => (server ? audit(server) : null),
      )
      return removed.length > 0
    },

    async replaceTools(serverId, tools, whenNew, now) {
      // A server listing a name twice: its first listing counts (one upsert may not touch a row twice).
      const unique = new Map<string, DiscoveredTool>()
      for (const tool of tools) if (!unique.has(tool.name)) unique.set(tool.name, tool)
      const rows = [...unique.values()].map((tool) => ({
        serverId,
        name: tool.name,
        title: tool.title,
        description: tool.description,
        inputSchema: JSON.stringify(tool.inputSchema ?? null),
        outputSchema: jsonText(tool.outputSchema),
        annotations: jsonText(tool.annotations),
        readOnly: readOnlyOf(tool.annotations),
        enabled: whenNew,
        problem: tool.problem,
        firstSeenAt: now,
        updatedAt: now,
      }))
      const names = rows.map((row) => row.name)
      await unit((tx) => [
        tx
          .delete(mcpServerTools)
          .where(
            names.length === 0
              ? eq(mcpServerTools.serverId, serverId)
              : and(eq(mcpServerTools.serverId, serverId), notInArray(mcpServerTools.name, names)),
          ),
        ...(rows.length === 0
          ? []
          : [
              tx
                .insert(mcpServerTools)
                .values(rows)
                // A tool still listed keeps whether it is on, and when it was first seen.
                .onConflictDoUpdate({
                  target: [mcpServerTools.serverId, mcpServerTools.name],
                  set: {
                    title: excluded('title'),
                    description: excluded('description'),
                    inputSchema: excluded('input_schema'),
                    outputSchema: excluded('output_schema'),
                    annotations: excluded('annotations'),
                    readOnly: excluded('read_only'),
                    problem: excluded('problem'),
                    updatedAt: excluded('updated_at'),
                  },
                }),
            ]),
        tx.update(mcpServers).set({ toolsRefreshedAt: now }).where(eq(mcpServers.id, serverId)),
      ])
    },

    async tools(serverId) {
      const rows = await db
        .select()
        .from(mcpServerTools)
        .where(eq(mcpServerTools.serverId, serverId))
        .orderBy(asc(mcpServerTools.name))
      return rows.map(toolOf)
    },

    setToolEnabled(organizationId, serverId, name, enabled) {
      return changed(
        db
          .update(mcpServerTools)
          .set({ enabled })
          .where(
            and(
              eq(mcpServerTools.serverId, serverId),
              eq(mcpServerTools.name, name),
              inArray(
                mcpServerTools.serverId,
                db.select({ id: mcpServers.id }).from(mcpServers).where(ofOrganization(organizationId, serverId)),
              ),
            ),
          )
          .returning({ name: mcpServerTools.name }),
      )
    },

    async offerable(organizationId) {
      const rows = await offerable().execute({ organizationId })
      return rows.flatMap(({ server, tool }): OfferableTool[] => {
        const row = toolOf(tool)
        // Checked when listed (a tool whose schema is not an object has a `problem`); never offered otherwise.
        return isObject(row.inputSchema)
          ? [{ server: serverOf(server), tool: { ...row, inputSchema: row.inputSchema } }]
          : []
      })
    },

    async oauth(serverId) {
      const [row] = await db.select().from(mcpServerOauth).where(eq(mcpServerOauth.serverId, serverId))
      return row ? oauthOf(row) : null
    },

    async saveOAuth(serverId, { discoveryState, ...patch }: Partial<McpOAuthPatch>) {
      const set = discoveryState === undefined ? patch : { ...patch, discoveryState: jsonText(discoveryState) }
      await db
        .insert(mcpServerOauth)
        .values({ serverId, ...set })
        .onConflictDoUpdate({
          target: mcpServerOauth.serverId,
          // An empty patch rewrites the row with itself.
          set: Object.keys(set).length > 0 ? set : { serverId: sql`${mcpServerOauth.serverId}` },
        })
    },

    swapTokens(serverId, expected, next) {
      if (expected === null) {
        // No tokens yet: the row may not exist either.
        return changed(
          db
            .insert(mcpServerOauth)
            .values({ serverId, tokensSealed: next })
            .onConflictDoUpdate({
              target: mcpServerOauth.serverId,
              set: { tokensSealed: next },
              setWhere: isNull(mcpServerOauth.tokensSealed),
            })
            .returning({ serverId: mcpServerOauth.serverId }),
        )
      }
      return changed(
        db
          .update(mcpServerOauth)
          .set({ tokensSealed: next })
          .where(and(eq(mcpServerOauth.serverId, serverId), eq(mcpServerOauth.tokensSealed, expected)))
          .returning({ serverId: mcpServerOauth.serverId }),
      )
    },

    async startFlow(flow) {
      await db.insert(mcpOauthFlows).values({ ...flow, discoveryState: jsonText(flow.discoveryState) })
    },

    async takeFlow(stateHash, now) {
      const [flow] = await db.delete(mcpOauthFlows).where(eq(mcpOauthFlows.stateHash, stateHash)).returning()
      return flow && flow.expiresAt > now ? { ...flow, discoveryState: json(flow.discoveryState) } : null
    },

    async sweepFlows(now) {
      const swept = await db
        .delete(mcpOauthFlows)
        .where(lte(mcpOauthFlows.expiresAt, now))
        .returning({ stateHash: mcpOauthFlows.stateHash })
      return swept.length
    },
  }
}
