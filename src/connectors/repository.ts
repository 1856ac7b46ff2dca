// The storage contract of the MCP servers organizations connect: the servers, the tools each lists, their OAuth state
// and the authorizations under way. Every method is one statement or one unit, the same on both dialects
// (repository.common.ts). Secrets are handed in and read back sealed (shared/secret-box.ts): this layer never sees
// them in the clear.
import type { AuditEntry } from '../shared/audit'

export type McpServerAuth = 'none' | 'headers' | 'oauth'
export type McpServerStatus = 'pending' | 'ok' | 'needs_authorization' | 'error'

export interface McpServerRow {
  id: string
  organizationId: number
  /** Unique in the organization and never changed: thread settings name tools as `server/tool`. */
  name: string
  url: string
  auth: McpServerAuth
  /** Sealed JSON `{name: value}` of the static headers; null unless `auth` is `headers`. */
  headersSealed: string | null
  /** The static headers' names: what pages may show. */
  headerNames: string[]
  /** Its tools that may change something are called without asking the thread's owner. */
  trusted: boolean
  enabled: boolean
  status: McpServerStatus
  lastError: string | null
  toolsRefreshedAt: number | null
  createdBy: number | null
  createdAt: number
  updatedAt: number
}

export interface NewMcpServer {
  id: string
  organizationId: number
  name: string
  url: string
  auth: McpServerAuth
  headersSealed: string | null
  headerNames: string[]
  trusted: boolean
  createdBy: number | null
  now: number
}

/** What may change of a server (never its name or organization), and when it changed. */
export type McpServerPatch = Partial<
  Pick<McpServerRow, 'url' | 'auth' | 'headersSealed' | 'headerNames' | 'trusted' | 'enabled' | 'status' | 'lastError'>
> & { updatedAt: number }

/** A tool as a server lists it (`tools/list`), with the reason it may never be offered, if any. */
export interface DiscoveredTool {
  name: string
  title: string | null
  description: string
  /** JSON Schema of the arguments, as listed (stored as JSON text). */
  inputSchema: unknown
  outputSchema: unknown | null
  /** The server's annotations, such as `readOnlyHint`; null when it gave none. */
  annotations: Record<string, unknown> | null
  /** Why it is never offered: a bad schema, too large, an invalid name; null when it may be. */
  problem: string | null
}

export interface McpToolRow {
  serverId: string
  name: string
  title: string | null
  description: string
  inputSchema: unknown
  outputSchema: unknown | null
  annotations: Record<string, unknown> | null
  /** `annotations.readOnlyHint === true` (readOnlyOf): called without asking, even on a server not trusted. */
  readOnly: boolean
  enabled: boolean
  problem: string | null
  firstSeenAt: number
  updatedAt: number
}

/** A tool answers may be offered, with its server. */
export interface OfferableTool {
  server: McpServerRow
  tool: McpToolRow & { inputSchema: Record<string, unknown> }
}

export interface McpOAuthRow {
  serverId: string
  /** Sealed JSON of the client's registration at the authorization server. */
  clientInformationSealed: string | null
  /** Sealed JSON `{access_token, refresh_token, expires_at, scope}`. */
  tokensSealed: string | null
  /** The resource's and the authorization server's metadata (public, stored plain). */
  discoveryState: unknown | null
  authorizedBy: number | null
  authorizedAt: number | null
}

export type McpOAuthPatch = Omit<McpOAuthRow, 'serverId'>

/** An authorization an admin started in the browser, found again by its `state`. */
export interface McpOAuthFlow {
  /** SHA-256 of the `state`. */
  stateHash: string
  serverId: string
  userId: number
  codeVerifierSealed: string
  /** The discovery this flow made (public); the server's own is replaced by it only at the callback. */
  discoveryState: unknown | null
  /** Sealed JSON of the registration this flow uses, new or reused. */
  clientInformationSealed: string | null
  createdAt: number
  expiresAt: number
}

/** The server's own claim that a tool changes nothing: the rule that decides whether a call asks first. */
export function readOnlyOf(annotations: Record<string, unknown> | null): boolean {
  return annotations?.readOnlyHint === true
}

export interface McpServerRepository {
  /** Null: the name is taken in the organization. The event `audit` makes of the server is recorded with it. */
  add(row: NewMcpServer, audit: (server: McpServerRow) => AuditEntry): Promise<McpServerRow | null>

  /** The organization's servers, by name. */
  list(organizationId: number): Promise<McpServerRow[]>

  get(organizationId: number, id: string): Promise<McpServerRow | null>

  byName(organizationId: number, name: string): Promise<McpServerRow | null>

  /** Whether the organization's server was there to change. */
  update(organizationId: number, id: string, patch: McpServerPatch): Promise<boolean>

  /**
   * Removes the server with its tools, OAuth state and flows, recording the event `audit` makes of its name and URL;
   * whether it was the organization's.
   */
  remove(
    organizationId: number,
    id: string,
    audit: (server: { name: string; url: string }) => AuditEntry,
  ): Promise<boolean>

  /**
   * The server's tool list as just fetched, in one unit: tools still listed keep `enabled` (and when they were first
   * seen), new ones take `whenNew`, tools no longer listed go; the server's `toolsRefreshedAt` becomes `now`.
   */
  replaceTools(serverId: string, tools: DiscoveredTool[], whenNew: boolean, now: number): Promise<void>

  /** The server's tools, by name. */
  tools(serverId: string): Promise<McpToolRow[]>

  /** Whether the tool was there, on a server of the organization. */
  setToolEnabled(organizationId: number, serverId: string, name: string, enabled: boolean): Promise<boolean>

  /**
   * Enabled tools without a `problem` on enabled servers of the organization, with their server, by server and tool
   * name: what answers may be offered.
   */
  offerable(organizationId: number): Promise<OfferableTool[]>

  oauth(serverId: string): Promise<McpOAuthRow | null>

  /** Writes the fields given (absent ones keep their value), making the row when there is none. */
  saveOAuth(serverId: string, patch: Partial<McpOAuthPatch>): Promise<void>

  /**
   * Compare-and-set of the sealed tokens: `next` is stored only if the stored value is still `expected` (null: none
   * yet), since other instances may refresh the same tokens (rotating refresh tokens). Whether it was stored.
   */
  swapTokens(serverId: string, expected: string | null, next: string | null): Promise<boolean>

  startFlow(flow: McpOAuthFlow): Promise<void>

  /** Deletes the flow and returns it unless it expired by `now`: of racing callbacks, exactly one gets it. */
  takeFlow(stateHash: string, now: number): Promise<McpOAuthFlow | null>

  /** Deletes flows expired by `now` (the upkeep); how many. */
  sweepFlows(now: number): Promise<number>
}

/**
 * The context each sealed field is sealed for (shared/secret-box.ts), naming its row and field: a sealed value copied
 * to another row or field does not open there.
 */
export const sealedFor = {
  headers: (serverId: string) => `mcp_servers:${serverId}:headers`,
  tokens: (serverId: string) => `mcp_server_oauth:${serverId}:tokens`,
  client: (serverId: string) => `mcp_server_oauth:${serverId}:client`,
  verifier: (stateHash: string) => `mcp_oauth_flows:${stateHash}:verifier`,
  flowClient: (stateHash: string) => `mcp_oauth_flows:${stateHash}:client`,
}
