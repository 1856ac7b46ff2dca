// The client side of the MCP authorization specification for a connected server that signs in with OAuth: the SDK's
// OAuthClientProvider over the server's stored row. Tokens and the client's registration are sealed (secret box, each
// for its row and field); the resource's and authorization server's metadata are public and stored plain; the PKCE
// verifier waits, sealed, in the authorization's flow row. The SDK's auth() does the protocol (discovery, dynamic
// client registration, PKCE, the code exchange, refresh) through the guarded fetch it is handed.
//
// Three modes, since the same row serves three moments:
// - `background`: the MCP client's own requests (tool lists and calls). Nobody is there to sign in: where the SDK
//   would send a person to the authorization server, the server is marked `needs_authorization` and the request
//   fails. An access token past its expiry is refreshed first, once per server at a time in this process, and
//   stored compare-and-set, since other instances may refresh the same pair (rotating refresh tokens).
// - `begin`: an admin pressed Authorize. Discovery is done again, a registration kept unless it no longer fits, and
//   the authorization URL is captured for the browser. What the flow found (discovery, registration) is kept with its
//   verifier in a new flow row, never on the server's row: a resource's owner may have pointed it at another
//   authorization server, and nothing the server holds is to change before an admin has consented there.
// - `callback`: the authorization server sent the admin back with a code: it is exchanged with the flow's verifier and
//   registration, and the tokens, with the flow's discovery and registration, replace whatever was stored.
//
// Tokens and registrations are bound to the authorization server they came from (their `issuer`, which auth()
// stamps): neither is ever presented to another, so a refresh token never reaches a server its resource moved to.
import {
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  refreshAuthorization,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js'
import {
  InvalidClientError,
  InvalidGrantError,
  UnauthorizedClientError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { SecretBox } from '../shared/secret-box'
import { type McpServerRepository, type McpServerRow, sealedFor } from './repository'

/** Where authorization servers send the admin back: one address for every server (the flow's state tells which). */
export const oauthCallbackPath = '/admin/mcp-servers/oauth/callback'

export function oauthRedirectUrl(publicUrl: string): string {
  return new URL(oauthCallbackPath, publicUrl).href
}

/**
 * What Threadhouse registers as at an authorization server (RFC 7591): a public client using PKCE, sent back to
 * PUBLIC_URL. No `scope`: auth() then asks the scopes the resource's metadata lists, and only those.
 */
export function oauthClientMetadata(redirectUrl: string): OAuthClientMetadata {
  return {
    client_name: 'Threadhouse',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }
}

/** The server must be authorized again by an admin in the browser; it has been marked `needs_authorization`. */
export class NeedsAuthorization extends UnauthorizedError {
  constructor(reason: string) {
    super(reason)
    this.name = 'NeedsAuthorization'
  }
}

/** The tokens as sealed: an absolute expiry rather than the response's relative `expires_in`. */
export interface StoredTokens {
  access_token: string
  token_type: string
  refresh_token?: string
  /** When the access token expires (ms), or null when the server did not say. */
  expires_at: number | null
  scope?: string
  /** The authorization server that issued them (the SDK never presents them to another). */
  issuer?: string
}

/** Why a server whose tokens or registration came from another authorization server than its discovery's waits. */
export const issuerChanged = 'its authorization server changed'

/** Whether a stored value's `issuer` names this authorization server (auth()'s own rule: a trailing `/` aside). */
function boundTo(issuer: unknown, authorizationServerUrl: string | undefined): boolean {
  if (typeof issuer !== 'string' || authorizationServerUrl === undefined) return false
  const normal = (url: string) => (URL.canParse(url) ? new URL(url).href : url).replace(/\/$/, '')
  return normal(issuer) === normal(authorizationServerUrl)
}

/** An access token this close to its expiry is refreshed before it is sent: a request takes time to arrive. */
export const refreshSkewMs = 30_000

export interface OAuthStoreDeps {
  servers: McpServerRepository
  box: SecretBox
  /** The guarded fetch: every request to an authorization server follows the outbound rule. */
  fetch: FetchLike
  now: () => number
  /** Refreshes under way in this process, by server: concurrent requests wait for one refresh. */
  refreshing?: Map<string, Promise<StoredTokens>>
}

export type ProviderMode =
  | { kind: 'background'; redirectUrl?: string }
  | {
      kind: 'begin'
      redirectUrl: string
      /** The `state` sent along; only its hash is stored, with the sealed verifier. */
      state: string
      stateHash: string
      userId: number
      expiresAt: number
      capture: (authorizationUrl: URL) => void
    }
  | {
      kind: 'callback'
      redirectUrl: string
      verifier: string
      userId: number
      /** The flow's discovery and registration: what its code is exchanged with. */
      discovery: OAuthDiscoveryState
      client: OAuthClientInformationMixed
    }

export function storedOAuthProvider(
  server: McpServerRow,
  deps: OAuthStoreDeps,
  mode: ProviderMode,
): OAuthClientProvider {
  const { servers, box } = deps
  const refreshing = deps.refreshing ?? new Map<string, Promise<StoredTokens>>()
  // Background requests never reach a server's registration or authorization endpoint, so the address only has to
  // be one (auth() treats a client without one as a machine-to-machine client).
  const redirectUrl = mode.redirectUrl ?? oauthCallbackPath
  /** The sealed tokens this provider last read or stored: what a compare-and-set expects to replace. */
  let lastSealed: string | null = null
  /** What a browser flow found and uses, kept with the flow until its code is exchanged. */
  const flow: { discovery?: OAuthDiscoveryState; client?: OAuthClientInformationMixed } =
    mode.kind === 'callback' ? { discovery: mode.discovery, client: mode.client } : {}

  const openTokens = (sealed: string) => JSON.parse(box.open(sealed, sealedFor.tokens(server.id))) as StoredTokens
  const sealTokens = (tokens: StoredTokens) => box.seal(JSON.stringify(tokens), sealedFor.tokens(server.id))
  const openClient = (sealed: string) =>
    JSON.parse(box.open(sealed, sealedFor.client(server.id))) as OAuthClientInformationMixed
  const sealClient = (information: OAuthClientInformationMixed) =>
    box.seal(JSON.stringify(information), sealedFor.client(server.id))
  const discoveryOf = (row: { discoveryState: unknown } | null) =>
    (row?.discoveryState ?? undefined) as OAuthDiscoveryState | undefined

  const storedOf = (tokens: OAuthTokens): StoredTokens => ({
    access_token: tokens.access_token,
    token_type: tokens.token_type,
    refresh_token: tokens.refresh_token,
    expires_at: tokens.expires_in === undefined ? null : deps.now() + tokens.expires_in * 1000,
    scope: tokens.scope,
    issuer: tokens.issuer,
  })

  const sent = (stored: StoredTokens): OAuthTokens => ({
    access_token: stored.access_token,
    token_type: stored.token_type,
    refresh_token: stored.refresh_token,
    scope: stored.scope,
    issuer: stored.issuer,
    ...(stored.expires_at === null
      ? {}
      : { expires_in: Math.max(0, Math.floor((stored.expires_at - deps.now()) / 1000)) }),
  })

  /** Marks the server as waiting for an admin, with why; the error to throw. */
  const needsAuthorization = async (reason: string): Promise<NeedsAuthorization> => {
    const lastError = `Authorize it again: ${reason}.`
    await servers.update(server.organizationId, server.id, {
      status: 'needs_authorization',
      lastError,
      updatedAt: deps.now(),
    })
    return new NeedsAuthorization(lastError)
  }

  const expired = (tokens: StoredTokens) =>
    tokens.expires_at !== null && tokens.expires_at - refreshSkewMs <= deps.now()

  /** The stored tokens now, if any, remembered as what a later swap expects. */
  const reread = async (): Promise<StoredTokens | null> => {
    const row = await servers.oauth(server.id)
    lastSealed = row?.tokensSealed ?? null
    return row?.tokensSealed ? openTokens(row.tokensSealed) : null
  }

  /**
   * Refreshes the expired pair sealed as `seen`, or takes the pair stored since (by a refresh here that just ended,
   * or by another instance).
   */
  const refresh = async (seen: string): Promise<StoredTokens> => {
    const row = await servers.oauth(server.id)
    if (!row?.tokensSealed) throw await needsAuthorization('its tokens were removed')
    lastSealed = row.tokensSealed
    const stored = openTokens(row.tokensSealed)
    if (row.tokensSealed !== seen && !expired(stored)) return stored
    const discovery = discoveryOf(row)
    if (!stored.refresh_token) throw await needsAuthorization('its access token expired, with no refresh token')
    if (!discovery?.authorizationServerUrl || row.clientInformationSealed === null) {
      throw await needsAuthorization('its authorization server or registration is not known')
    }
    const clientInformation = openClient(row.clientInformationSealed)
    // The refresh token goes only to the server that issued it, with the registration made there.
    if (
      !boundTo(stored.issuer, discovery.authorizationServerUrl) ||
      !boundTo(clientInformation.issuer, discovery.authorizationServerUrl)
    ) {
      throw await needsAuthorization(issuerChanged)
    }
    let next: OAuthTokens
    try {
      next = await refreshAuthorization(discovery.authorizationServerUrl, {
        metadata: discovery.authorizationServerMetadata,
        clientInformation,
        refreshToken: stored.refresh_token,
        // The same resource indicator (RFC 8707) auth() asked for: the metadata's, as written.
        resource: discovery.resourceMetadata?.resource,
        fetchFn: deps.fetch,
      })
    } catch (error) {
      // Another instance may have rotated the refresh token first: then its pair is the one to use.
      const current = await reread()
      if (current && lastSealed !== row.tokensSealed && !expired(current)) return current
      if (
        error instanceof InvalidGrantError ||
        error instanceof InvalidClientError ||
        error instanceof UnauthorizedClientError
      ) {
        throw await needsAuthorization(`its authorization server refused to refresh the token (${error.message})`)
      }
      throw error
    }
    const fresh = { ...storedOf(next), issuer: stored.issuer }
    const sealed = sealTokens(fresh)
    if (await servers.swapTokens(server.id, row.tokensSealed, sealed)) {
      lastSealed = sealed
      return fresh
    }
    // Another instance stored its refresh first: both pairs are valid, and one is kept, theirs.
    const current = await reread()
    if (current) return current
    throw await needsAuthorization('its tokens were removed')
  }

  /** One refresh per server at a time in this process: concurrent requests share it. */
  const refreshOnce = (seen: string): Promise<StoredTokens> => {
    const running = refreshing.get(server.id)
    if (running) return running
    const started = refresh(seen).finally(() => refreshing.delete(server.id))
    refreshing.set(server.id, started)
    return started
  }

  /**
   * The registration to present: at the callback the flow's; otherwise the stored one, unless it was made at another
   * authorization server than the one discovered, or (Authorize) for another redirect URI (PUBLIC_URL changed since).
   */
  const registration = async (): Promise<OAuthClientInformationMixed | undefined> => {
    if (mode.kind === 'callback') return flow.client
    const row = await servers.oauth(server.id)
    if (!row?.clientInformationSealed) return undefined
    const information = openClient(row.clientInformationSealed)
    if (mode.kind === 'background') {
      if (!boundTo(information.issuer, discoveryOf(row)?.authorizationServerUrl)) {
        throw await needsAuthorization(issuerChanged)
      }
      return information
    }
    // auth() has saved this flow's discovery (with the flow) before it asks for a registration.
    if (!boundTo(information.issuer, flow.discovery?.authorizationServerUrl)) return undefined
    if ('redirect_uris' in information) {
      const uris = information.redirect_uris as string[] | undefined
      if (uris && !uris.includes(redirectUrl)) return undefined
    }
    flow.client = information
    return information
  }

  const clearTokens = async () => {
    // Compare-and-set: a pair another instance stored meanwhile is not the one found wanting.
    if (lastSealed !== null) await servers.swapTokens(server.id, lastSealed, null)
  }

  return {
    get redirectUrl() {
      return redirectUrl
    },

    get clientMetadata() {
      return oauthClientMetadata(redirectUrl)
    },

    state() {
      return mode.kind === 'begin' ? mode.state : crypto.randomUUID()
    },

    async clientInformation() {
      const information = await registration()
      // In the background nobody could finish a new registration's authorization: it is never made there.
      if (!information && mode.kind === 'background') throw await needsAuthorization('it has not been authorized')
      return information
    },

    async saveClientInformation(information) {
      if (mode.kind !== 'background') {
        flow.client = information
        return
      }
      await servers.saveOAuth(server.id, { clientInformationSealed: sealClient(information) })
    },

    async tokens() {
      // The browser flow always ends at the consent page: an admin pressing Authorize means to authorize again.
      if (mode.kind !== 'background') return undefined
      const row = await servers.oauth(server.id)
      if (!row?.tokensSealed) throw await needsAuthorization('it holds no tokens (never authorized, or refused since)')
      lastSealed = row.tokensSealed
      const stored = openTokens(row.tokensSealed)
      // auth() would post a refresh token stamped by nobody to whichever server it discovered: none is handed out.
      if (!boundTo(stored.issuer, discoveryOf(row)?.authorizationServerUrl))
        throw await needsAuthorization(issuerChanged)
      return sent(expired(stored) ? await refreshOnce(row.tokensSealed) : stored)
    },

    async saveTokens(tokens) {
      const sealed = sealTokens(storedOf(tokens))
      if (mode.kind === 'callback') {
        // A new authorization replaces whatever was stored, refreshed or not, with the discovery and registration
        // the code was exchanged with: the server's from now on.
        await servers.saveOAuth(server.id, {
          tokensSealed: sealed,
          discoveryState: flow.discovery ?? null,
          clientInformationSealed: flow.client ? sealClient(flow.client) : null,
          authorizedBy: mode.userId,
          authorizedAt: deps.now(),
        })
        return
      }
      if (mode.kind === 'begin') throw new Error('tokens arrive only at the callback')
      // The SDK refreshed after a 401: stored unless another instance stored a pair first (theirs is kept).
      if (await servers.swapTokens(server.id, lastSealed, sealed)) lastSealed = sealed
    },

    async redirectToAuthorization(authorizationUrl) {
      if (mode.kind === 'begin') {
        mode.capture(authorizationUrl)
        return
      }
      // The SDK gets here after a 401 whose refresh it could not make. A refusal of the refresh token has cleared
      // the tokens already (invalidateCredentials); one still stored failed for a passing reason (the authorization
      // server down), and the next request tries again rather than waiting for an admin.
      const stored = await reread()
      if (stored?.refresh_token) throw new Error('the access token was refused, and refreshing it failed')
      throw await needsAuthorization('its access token was refused')
    },

    async saveCodeVerifier(verifier) {
      // Only the browser flow comes back for it; the background's attempt ends at redirectToAuthorization.
      if (mode.kind !== 'begin') return
      await servers.startFlow({
        stateHash: mode.stateHash,
        serverId: server.id,
        userId: mode.userId,
        codeVerifierSealed: box.seal(verifier, sealedFor.verifier(mode.stateHash)),
        discoveryState: flow.discovery ?? null,
        clientInformationSealed: flow.client
          ? box.seal(JSON.stringify(flow.client), sealedFor.flowClient(mode.stateHash))
          : null,
        createdAt: deps.now(),
        expiresAt: mode.expiresAt,
      })
    },

    codeVerifier() {
      if (mode.kind !== 'callback') throw new Error('the code verifier is read at the callback only')
      return mode.verifier
    },

    async discoveryState() {
      // Pressing Authorize finds the servers again (a resource may have moved to another authorization server); the
      // callback goes on with what its flow found.
      if (mode.kind !== 'background') return flow.discovery
      return discoveryOf(await servers.oauth(server.id))
    },

    async saveDiscoveryState(state) {
      if (mode.kind !== 'background') {
        flow.discovery = state
        return
      }
      await servers.saveOAuth(server.id, { discoveryState: state })
    },

    async invalidateCredentials(scope) {
      // A browser flow's failures are its own: the server's row is left as it is.
      if (mode.kind !== 'background') {
        if (scope === 'all' || scope === 'client') flow.client = undefined
        if (scope === 'all' || scope === 'discovery') flow.discovery = undefined
        return
      }
      if (scope === 'tokens') return clearTokens()
      if (scope === 'discovery') return servers.saveOAuth(server.id, { discoveryState: null })
      if (scope === 'client') return servers.saveOAuth(server.id, { clientInformationSealed: null })
      if (scope === 'all') {
        await servers.saveOAuth(server.id, { clientInformationSealed: null, discoveryState: null })
        await clearTokens()
      }
    },
  }
}
