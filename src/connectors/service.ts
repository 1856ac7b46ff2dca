// Administering an organization's MCP servers: adding one (name, URL, static headers sealed at once and never shown
// again), listing them with their tools, fetching a server's tool list again, trusting it, turning its tools on and
// off, and removing it. The administration pages and the CLI call these; who may is their business (owners and admins
// of the organization, or the operator). A server that signs in with OAuth is added here waiting for its authorization,
// which needs a browser (authorization.ts): only the administration page adds one.

import { accessTokenPrefix } from '../auth/access-tokens'
import { personalAccessTokenPrefix } from '../auth/personal-access-tokens'
import { sessionTokenPrefix } from '../auth/sessions'
import { clientSecretPrefix } from '../oauth/clients'
import { authorizationCodePrefix, refreshTokenPrefix, registrationTokenPrefix } from '../oauth/tokens'
import { type AuditOrigin, auditEntry, target, urlOrigin } from '../shared/audit'
import { AppError, conflict, invalidRequest, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { checkEndpointUrl } from '../shared/outbound/addresses'
import type { SecretBox } from '../shared/secret-box'
import type { RefreshOutcome, ToolCaller } from './ports'
import { type McpServerRepository, type McpServerRow, type McpToolRow, sealedFor } from './repository'

/** An organization connects at most this many servers: every answer may be offered all their tools. */
export const maxServers = 20

/** Static headers per server, and the bounds of each: API keys, not documents. */
export const maxHeaders = 10
const maxHeaderNameLength = 100
const maxHeaderValueLength = 4096

/** Names tools are known by in thread settings (`server/tool`): never changed once given. */
export const serverNamePattern = /^[a-z0-9][a-z0-9-]{0,31}$/

/** HTTP's token characters (RFC 9110), as config.ts holds extra headers to. */
const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Headers the MCP client sets itself, or HTTP does: a static value there would break the connection or smuggle
 * another request. Lower case.
 */
const reservedHeaders = new Set([
  'accept',
  'connection',
  'content-length',
  'content-type',
  'host',
  'keep-alive',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

/**
 * Prefixes of Threadhouse's own credentials (tokens, session cookies, OAuth secrets): no header of a remote server may
 * carry one, so that nobody pastes a user's token where another system would receive it.
 */
const threadhouseSecretPrefixes = [
  personalAccessTokenPrefix,
  accessTokenPrefix,
  refreshTokenPrefix,
  authorizationCodePrefix,
  registrationTokenPrefix,
  sessionTokenPrefix,
  clientSecretPrefix,
]

/** Whether a header value holds a word (after a scheme, in a cookie pair, in a list) that is a Threadhouse secret. */
function holdsThreadhouseSecret(value: string): boolean {
  return value
    .split(/[\s=;,:"']+/)
    .some((word) => threadhouseSecretPrefixes.some((prefix) => word.toLowerCase().startsWith(prefix)))
}

/** Checks a server's name: lower-case letters, digits and dashes, 1 to 32, not starting with a dash. */
export function checkServerName(text: string): string {
  const name = text.trim()
  if (!serverNamePattern.test(name)) {
    throw invalidRequest(
      'The name must be 1 to 32 lower-case letters, digits or dashes, starting with a letter or digit (such as docs or github-issues).',
    )
  }
  return name
}

/**
 * Reads static headers, one `Name: value` a line (blank lines skipped), as the page's text area and the CLI's
 * repeated --header give them. Each name once (in any case), none the client sets itself, single-line values of
 * bounded length, and never a Threadhouse token.
 */
export function parseHeaderLines(lines: string[]): Record<string, string> {
  const headers: Record<string, string> = {}
  const seen = new Set<string>()
  for (const raw of lines) {
    const line = raw.replace(/\r$/, '')
    if (line.trim() === '') continue
    const colon = line.indexOf(':')
    if (colon < 0) throw invalidRequest('Write each header as "Name: value", one a line.')
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    // The name is safe to repeat: only values are secret.
    if (!headerNamePattern.test(name) || name.length > maxHeaderNameLength) {
      throw invalidRequest(`"${name.slice(0, maxHeaderNameLength)}" is not a valid header name.`)
    }
    const lower = name.toLowerCase()
    if (reservedHeaders.has(lower)) throw invalidRequest(`The ${name} header is set by Threadhouse itself.`)
    if (seen.has(lower)) throw invalidRequest(`The ${name} header is given twice.`)
    seen.add(lower)
    if (value === '') throw invalidRequest(`The ${name} header has no value.`)
    if (/[\r\n\0]/.test(value) || value.length > maxHeaderValueLength) {
      throw invalidRequest(
        `The value of the ${name} header must be one line of at most ${maxHeaderValueLength} characters.`,
      )
    }
    if (holdsThreadhouseSecret(value)) {
      throw invalidRequest(
        `The value of the ${name} header holds a Threadhouse token. Use a credential the remote server issued: Threadhouse never sends its users' tokens to another server.`,
      )
    }
    headers[name] = value
  }
  if (seen.size > maxHeaders) throw invalidRequest(`A server can have at most ${maxHeaders} headers.`)
  return headers
}

export interface ConnectorsDeps {
  servers: McpServerRepository
  /** Seals static headers; without SECRETS_KEY, servers with headers are refused. */
  box: SecretBox
  /** Fetches tool lists (connectors/client.ts); without one, servers stay `pending` until a refresh can. */
  caller?: ToolCaller | null
  allowPrivateNetworks: boolean
}

export interface NewServerInput {
  organizationId: number
  createdBy: number | null
  name: string
  url: string
  /** Static headers (parseHeaderLines); none: the server takes no authentication, or OAuth. */
  headers: Record<string, string>
  /** `oauth`: the server signs in with OAuth, authorized in an admin's browser once added (no headers then). */
  auth?: 'oauth'
  trusted: boolean
}

export interface AddedServer {
  server: McpServerRow
  /** How fetching its tool list went; null when this process cannot fetch one (no ToolCaller). */
  refresh: RefreshOutcome | null
}

/** What a refresh that threw (a bug, not the server's doing) is reported as: the server keeps its stored status. */
function failedRefresh(error: unknown): RefreshOutcome {
  return { status: 'error', tools: 0, error: error instanceof Error ? error.message : String(error) }
}

/**
 * Adds a server with `none` or static-header authentication, its headers sealed for its row, then fetches its tool
 * list (a failure there is reported, not fatal: the server is kept, and its page says why). A server with `oauth`
 * waits for its authorization (`needs_authorization`): its tools are fetched once an admin has authorized it.
 */
export async function addServer(
  deps: ConnectorsDeps,
  input: NewServerInput,
  now: number,
  origin: AuditOrigin,
): Promise<AddedServer> {
  const name = checkServerName(input.name)
  const url = checkEndpointUrl(input.url.trim(), deps.allowPrivateNetworks)
  const headerNames = Object.keys(input.headers)
  const oauth = input.auth === 'oauth'
  if (oauth && headerNames.length > 0) {
    throw invalidRequest('A server that signs in with OAuth takes no headers: its tokens come from its authorization.')
  }
  if (oauth && !deps.box.available) throw secretsMissing('OAuth tokens')
  if (headerNames.length > 0 && !deps.box.available)
    throw secretsMissing('Headers', ', or add the server without headers')
  const existing = await deps.servers.list(input.organizationId)
  if (existing.some((server) => server.name === name)) throw taken(name)
  if (existing.length >= maxServers) {
    throw conflict(`An organization can connect at most ${maxServers} MCP servers.`)
  }
  const id = newId()
  const server = await deps.servers.add(
    {
      id,
      organizationId: input.organizationId,
      name,
      url: url.href,
      auth: oauth ? 'oauth' : headerNames.length > 0 ? 'headers' : 'none',
      headersSealed:
        headerNames.length > 0 ? deps.box.seal(JSON.stringify(input.headers), sealedFor.headers(id)) : null,
      headerNames,
      trusted: input.trusted,
      createdBy: input.createdBy,
      now,
    },
    (added) =>
      auditEntry(origin, now, {
        organizationId: input.organizationId,
        action: 'mcp_server.added',
        target: target('mcp_server', added.id),
        // Header names only, never their values; the URL's origin only.
        detail: {
          name,
          url_origin: urlOrigin(added.url),
          auth: added.auth,
          header_names: headerNames,
          trusted: added.trusted,
        },
      }),
  )
  // Another admin added the same name in between.
  if (!server) throw taken(name)
  if (oauth) {
    await deps.servers.update(input.organizationId, id, { status: 'needs_authorization', updatedAt: now })
    return { server: { ...server, status: 'needs_authorization' }, refresh: null }
  }
  if (!deps.caller) return { server, refresh: null }
  const refresh = await deps.caller.refresh(server).catch(failedRefresh)
  return { server: (await deps.servers.get(input.organizationId, id)) ?? server, refresh }
}

function taken(name: string): AppError {
  return conflict(`Your organization already has a server named ${name}; a name is given once.`)
}

/** A server with its tools, by name. */
export interface ServerWithTools {
  server: McpServerRow
  tools: McpToolRow[]
}

export async function listServers(servers: McpServerRepository, organizationId: number): Promise<ServerWithTools[]> {
  const rows = await servers.list(organizationId)
  return Promise.all(rows.map(async (server) => ({ server, tools: await servers.tools(server.id) })))
}

export async function requireServer(
  servers: McpServerRepository,
  organizationId: number,
  serverId: string,
): Promise<McpServerRow> {
  const server = await servers.get(organizationId, serverId)
  if (!server) throw notFound('MCP server')
  return server
}

export async function serverWithTools(
  servers: McpServerRepository,
  organizationId: number,
  serverId: string,
): Promise<ServerWithTools> {
  const server = await requireServer(servers, organizationId, serverId)
  return { server, tools: await servers.tools(server.id) }
}

/** Removes the server with its tools and secrets, and records it; its pooled connection, if any, is dropped. */
export async function removeServer(
  deps: Pick<ConnectorsDeps, 'servers' | 'caller'>,
  organizationId: number,
  serverId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const removed = await deps.servers.remove(organizationId, serverId, (server) =>
    auditEntry(origin, now, {
      organizationId,
      action: 'mcp_server.removed',
      target: target('mcp_server', serverId),
      detail: { name: server.name, url_origin: urlOrigin(server.url) },
    }),
  )
  if (!removed) throw notFound('MCP server')
  deps.caller?.forget(serverId)
}

/** Trusted: its tools that may change something run without asking the thread's owner. */
export async function setTrusted(
  deps: Pick<ConnectorsDeps, 'servers'>,
  organizationId: number,
  serverId: string,
  { trusted }: { trusted: boolean },
  now: number,
): Promise<void> {
  if (!(await deps.servers.update(organizationId, serverId, { trusted, updatedAt: now }))) {
    throw notFound('MCP server')
  }
}

export async function setToolEnabled(
  deps: Pick<ConnectorsDeps, 'servers'>,
  organizationId: number,
  serverId: string,
  toolName: string,
  { enabled }: { enabled: boolean },
): Promise<void> {
  await requireServer(deps.servers, organizationId, serverId)
  if (!(await deps.servers.setToolEnabled(organizationId, serverId, toolName, enabled))) throw notFound('Tool')
}

/** Fetches the server's tool list again through the ToolCaller, which stores it and the server's status. */
export async function refreshServer(
  deps: ConnectorsDeps,
  organizationId: number,
  serverId: string,
): Promise<RefreshOutcome> {
  const server = await requireServer(deps.servers, organizationId, serverId)
  if (!deps.caller) {
    throw conflict('This Threadhouse server cannot fetch tool lists: its MCP client is not set up.')
  }
  return deps.caller.refresh(server).catch(failedRefresh)
}

/** A refresh's outcome in a person's words. */
export function describeRefresh(outcome: RefreshOutcome | null): string {
  if (outcome === null) return 'its tool list is not fetched yet (press Refresh on its administration page)'
  if (outcome.error !== null) return `its tool list could not be fetched: ${outcome.error}`
  return `it lists ${outcome.tools} ${outcome.tools === 1 ? 'tool' : 'tools'}`
}

/** What cannot be kept without SECRETS_KEY: the one refusal for headers, OAuth tokens and a begun authorization. */
export function secretsMissing(what: string, otherwise = ''): AppError {
  return new AppError(
    400,
    'invalid_request',
    `${what} are stored encrypted, and this server has no SECRETS_KEY to encrypt them with: ask the operator to set it (see docs/configuration.md)${otherwise}.`,
  )
}
