// An admin authorizes Threadhouse at a connected server's authorization server, in the browser: Authorize starts
// the SDK's auth() (discovery, dynamic registration, PKCE) and sends the admin to the authorization URL it built;
// the callback takes the flow back by its state (hash lookup, one use, ten minutes, the same admin), exchanges the
// code with the flow's own discovery and registration, stores them with the sealed tokens and fetches the tool list.
import { randomBytes } from 'node:crypto'
import { auth, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { AppError, invalidRequest, notFound } from '../shared/errors'
import type { SecretBox } from '../shared/secret-box'
import { hashSecret } from '../shared/security'
import { storedOAuthProvider } from './oauth-provider'
import type { RefreshOutcome, ToolCaller } from './ports'
import { type McpServerRepository, type McpServerRow, sealedFor } from './repository'
import { secretsMissing } from './service'

/** How long an admin has between Authorize and the callback; the upkeep sweeps older flows. */
export const flowLifetimeMs = 10 * 60_000

export interface AuthorizationDeps {
  servers: McpServerRepository
  box: SecretBox
  /** The guarded fetch (MCP_TIMEOUT_MS, MCP_RESPONSE_MAX_BYTES, the address rule, no redirects followed). */
  fetch: FetchLike
  /** Fetches the tool list once authorized; without one the server waits for Refresh. */
  caller?: ToolCaller | null
  /** PUBLIC_URL's callback address (oauthRedirectUrl). */
  redirectUrl: string
}

/** The refusals of the callback, by code: the pages give each its title. */
export const authorizationRefusals = {
  /** No flow has that state: it expired, was used already, or never was. */
  expired: 'authorization_expired',
  /** The flow was started by another person. */
  foreign: 'authorization_foreign',
  /** The authorization server came back with an error (the person denied consent, or it refused the request). */
  denied: 'authorization_denied',
  /** Discovery, registration or the code exchange failed. */
  failed: 'authorization_failed',
} as const

/** A request to another server that failed, in one short line. */
function reasonOf(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim()
  return text.length > 300 ? `${text.slice(0, 299)}…` : text
}

/** Starts the authorization of an OAuth server: the URL to send the admin's browser to. */
export async function beginAuthorization(
  deps: AuthorizationDeps,
  server: McpServerRow,
  userId: number,
  now: number,
): Promise<URL> {
  if (server.auth !== 'oauth') throw invalidRequest('This server does not sign in with OAuth.')
  if (!deps.box.available) throw secretsMissing('Tokens')
  // 160 random bits; only their hash is stored, so the database alone cannot complete a flow.
  const state = randomBytes(20).toString('base64url')
  let captured: URL | null = null
  const provider = storedOAuthProvider(
    server,
    { servers: deps.servers, box: deps.box, fetch: deps.fetch, now: () => now },
    {
      kind: 'begin',
      redirectUrl: deps.redirectUrl,
      state,
      stateHash: hashSecret(state),
      userId,
      expiresAt: now + flowLifetimeMs,
      capture: (url) => {
        captured = url
      },
    },
  )
  try {
    await auth(provider, { serverUrl: server.url, fetchFn: deps.fetch })
  } catch (error) {
    throw new AppError(
      502,
      authorizationRefusals.failed,
      `The authorization of ${server.name} could not be started: ${reasonOf(error)}`,
    )
  }
  if (captured === null) {
    throw new AppError(502, authorizationRefusals.failed, `${server.name}'s authorization server gave no address.`)
  }
  return captured
}

/** What the authorization server sent the admin back with (RFC 6749 §4.1.2, RFC 9207's `iss`). */
export interface AuthorizationCallback {
  state?: string
  code?: string
  error?: string
  errorDescription?: string
  iss?: string
}

export interface AuthorizedServer {
  server: McpServerRow
  /** Fetching its tool list with the new tokens; null without a ToolCaller. */
  refresh: RefreshOutcome | null
}

/** Completes the admin's authorization: the flow is taken (once), the code exchanged, the tools fetched. */
export async function completeAuthorization(
  deps: AuthorizationDeps,
  callback: AuthorizationCallback,
  admin: { id: number; organizationId: number },
  now: number,
): Promise<AuthorizedServer> {
  if (!callback.state) throw invalidRequest('The authorization server sent no state back.')
  const stateHash = hashSecret(callback.state)
  const flow = await deps.servers.takeFlow(stateHash, now)
  if (!flow) throw flowExpired()
  if (flow.userId !== admin.id) {
    throw new AppError(
      403,
      authorizationRefusals.foreign,
      'Another person started this authorization. Start your own from the server’s page.',
    )
  }
  const server = await deps.servers.get(admin.organizationId, flow.serverId)
  if (server?.auth !== 'oauth') throw notFound('MCP server')
  if (callback.error !== undefined) {
    const description = callback.errorDescription ? `: ${reasonOf(callback.errorDescription)}` : ''
    throw new AppError(
      400,
      authorizationRefusals.denied,
      `${server.name}'s authorization server did not authorize Threadhouse (${reasonOf(callback.error)}${description}).`,
    )
  }
  // A flow begun before flows kept their discovery cannot be completed: the admin starts again.
  if (flow.discoveryState === null || flow.clientInformationSealed === null) throw flowExpired()
  const discovery = flow.discoveryState as OAuthDiscoveryState
  const metadata = discovery.authorizationServerMetadata as
    | { issuer?: string; authorization_response_iss_parameter_supported?: boolean }
    | undefined
  // RFC 9207: a response from another authorization server than the one this flow asked (a mix-up) is not taken.
  if (
    (callback.iss !== undefined && metadata?.issuer !== undefined && callback.iss !== metadata.issuer) ||
    (callback.iss === undefined && metadata?.authorization_response_iss_parameter_supported === true)
  ) {
    throw new AppError(
      400,
      authorizationRefusals.failed,
      `The answer did not come from ${server.name}'s authorization server (its iss does not match).`,
    )
  }
  if (!callback.code) throw invalidRequest('The authorization server sent no code back.')
  const provider = storedOAuthProvider(
    server,
    { servers: deps.servers, box: deps.box, fetch: deps.fetch, now: () => now },
    {
      kind: 'callback',
      redirectUrl: deps.redirectUrl,
      verifier: deps.box.open(flow.codeVerifierSealed, sealedFor.verifier(stateHash)),
      userId: admin.id,
      discovery,
      client: JSON.parse(deps.box.open(flow.clientInformationSealed, sealedFor.flowClient(stateHash))),
    },
  )
  try {
    await auth(provider, { serverUrl: server.url, authorizationCode: callback.code, fetchFn: deps.fetch })
  } catch (error) {
    throw new AppError(
      502,
      authorizationRefusals.failed,
      `The authorization code of ${server.name} could not be exchanged for tokens: ${reasonOf(error)}`,
    )
  }
  await deps.servers.update(server.organizationId, server.id, { status: 'pending', lastError: null, updatedAt: now })
  if (!deps.caller) return { server, refresh: null }
  // A client opened before (and failing for want of tokens) is dropped: the next one sends the new tokens.
  deps.caller.forget(server.id)
  const refresh = await deps.caller
    .refresh(server)
    .catch((error): RefreshOutcome => ({ status: 'error', tools: 0, error: reasonOf(error) }))
  return { server: (await deps.servers.get(admin.organizationId, server.id)) ?? server, refresh }
}

function flowExpired(): AppError {
  return new AppError(
    400,
    authorizationRefusals.expired,
    'This authorization has expired or was already used. Start it again from the server’s page.',
  )
}
