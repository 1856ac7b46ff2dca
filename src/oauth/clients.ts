// OAuth clients: lookup (including the built-in Swagger UI client), redirect URI rules, RFC 7591 metadata
// validation and creation. Registration and settings both build clients with `clientToStore`.
import { adminOnlyScopes, scopes as allScopes, isScope, type Scope } from '../auth/model'
import { type AuditEntry, type AuditOrigin, auditEntry, noOrganization, target } from '../shared/audit'
import { generateSecret, hashSecret } from '../shared/security'
import { withoutImpliedScopes } from './checks/scope'
import {
  type Client,
  type ClientAuthMethod,
  type ClientOrigin,
  type ClientRepository,
  clientAuthMethods,
  type NewClient,
} from './clients.repository'
import { InvalidClientMetadata, InvalidRedirectUri, UnauthorizedClient } from './errors'
import type { OAuthModel } from './model'

export const clientIdPrefix = 'thcl_'
export const clientSecretPrefix = 'ths_'

/** Swagger UI's own public client, so "Authorize" on /swagger works with nothing registered by hand. */
export const docsClientId = 'threadhouse-docs'

export function docsRedirectUri(publicUrl: string): string {
  return `${publicUrl}/swagger/assets/oauth2-redirect.html`
}

export const supportedGrantTypes = ['authorization_code', 'refresh_token'] as const
export type GrantType = (typeof supportedGrantTypes)[number]

/** Clients whose name and links Threadhouse vouches for; every self-registered client is shown as unverified. */
export function isVerified(client: Pick<Client, 'origin'>): boolean {
  return client.origin === 'builtin' || client.origin === 'settings'
}

/** Public clients have no secret and must use PKCE. */
export function isPublic(client: Pick<Client, 'authMethod'>): boolean {
  return client.authMethod === 'none'
}

/**
 * How this client may authenticate at the token and revocation endpoints: the method it registered. A confidential
 * client that left the method to the default may use either secret method, since the specification documents
 * `client_id` and `client_secret` as form fields while RFC 7591 makes `client_secret_basic` the default.
 */
export function acceptedAuthMethods(client: Pick<Client, 'authMethod' | 'authMethodDeclared'>): ClientAuthMethod[] {
  if (client.authMethod === 'none' || client.authMethodDeclared) return [client.authMethod]
  return ['client_secret_basic', 'client_secret_post']
}

// The docs client's row exists so that grants and tokens can reference it; its redirect URI always follows
// the current PUBLIC_URL instead of whatever was stored when the row was first written.
async function docsClient(clients: ClientRepository, publicUrl: string, now: number): Promise<Client> {
  const stored = await clients.findOrCreate({
    clientId: docsClientId,
    origin: 'builtin',
    organizationId: null,
    ownerId: null,
    name: 'Threadhouse API documentation (Swagger UI)',
    redirectUris: [],
    scopes: [...allScopes],
    grantTypes: [...supportedGrantTypes],
    responseTypes: ['code'],
    authMethod: 'none',
    authMethodDeclared: false,
    secretHash: null,
    clientUri: null,
    logoUri: null,
    tosUri: null,
    policyUri: null,
    createdAt: now,
  })
  return { ...stored, redirectUris: [docsRedirectUri(publicUrl)], scopes: [...allScopes] }
}

export async function findClient(
  clients: ClientRepository,
  clientId: string,
  publicUrl: string,
  now: number,
): Promise<Client | null> {
  if (clientId === docsClientId) return docsClient(clients, publicUrl, now)
  return clients.findByClientId(clientId)
}

/** RFC 6749 §5.2 `unauthorized_client`: a client may only use the grants it registered for. */
export function requireGrantType(client: Client, grantType: GrantType): void {
  if (!client.grantTypes.includes(grantType)) {
    throw new UnauthorizedClient(`This client is not registered for the ${grantType} grant`)
  }
}

const loopbackRedirect = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?([/?][^#]*)?$/

function loopbackParts(uri: string): { host: string; rest: string } | null {
  const match = loopbackRedirect.exec(uri)
  // The pattern lets through ports up to 99999; a URL that does not parse is no address a browser can reach.
  if (!match?.[1] || !URL.canParse(uri)) return null
  const rest = match[2] ?? '/'
  return { host: match[1], rest: rest.startsWith('?') ? `/${rest}` : rest }
}

export function isLoopbackRedirect(uri: string): boolean {
  return loopbackParts(uri) !== null
}

/**
 * Exact string comparison, except that for loopback redirect URIs the port may differ (RFC 8252 §7.3):
 * native apps listen on whatever port the operating system gives them.
 */
export function redirectUriMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true
  const a = loopbackParts(registered)
  const b = loopbackParts(requested)
  return a !== null && b !== null && a.host === b.host && a.rest === b.rest
}

export type RedirectUriKind = 'https' | 'loopback' | 'private-use'

// Schemes that must never receive an authorization code, whatever the client: script and content schemes,
// local files, browser internals and web schemes other than http(s). None is a reverse domain name, so the
// private-use rule refuses them too; naming them here keeps that true if the rule is ever relaxed.
const refusedSchemes = new Set([
  'javascript:',
  'x-javascript:',
  'livescript:',
  'vbscript:',
  'data:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'view-source:',
  'jar:',
  'chrome:',
  'resource:',
  'intent:',
  'ws:',
  'wss:',
  'ftp:',
  'mailto:',
])

/**
 * RFC 8252 §7.1: a private-use scheme is a domain name its developer controls, reversed (`com.example.app:`), so
 * two apps cannot claim the same one by accident and no browser or system scheme qualifies.
 */
const reverseDomainScheme = /^[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+:$/

/**
 * The few assistants' own schemes that predate that advice, kept so that these MCP clients still connect with
 * nothing set up by hand: Cursor registers `cursor://anysphere.cursor-mcp/oauth/callback`, and VS Code's builds
 * their `vscode://` forms. Each names one vendor's installed app, as a reverse domain would.
 */
const knownAppSchemes = new Set(['cursor:', 'vscode:', 'vscode-insiders:'])

/**
 * RFC 3986 URIs are visible ASCII: anything else (spaces, Unicode, controls) must be percent-encoded, and could
 * not go back to the client in a Location header as it is.
 */
const visibleAscii = /^[\x21-\x7e]+$/

/** Why a URI may never be a redirect target, whatever the client and however it was registered; null if it may. */
export function unusableRedirectUriReason(uri: string): string | null {
  if (!visibleAscii.test(uri)) return 'must be ASCII without spaces; percent-encode other characters'
  if (!URL.canParse(uri)) return 'is not a valid absolute URI'
  const { protocol } = new URL(uri)
  if (protocol === 'https:' || protocol === 'http:') return null
  if (refusedSchemes.has(protocol)) return `uses the ${protocol} scheme, which may never receive an authorization code`
  if (!reverseDomainScheme.test(protocol) && !knownAppSchemes.has(protocol)) {
    return 'uses a private-use scheme that is not a reverse domain name such as com.example.app (RFC 8252 §7.1)'
  }
  return null
}

/** What kind of redirect URI this is, or InvalidRedirectUri with the rule it breaks. */
export function classifyRedirectUri(uri: string): RedirectUriKind {
  const unusable = unusableRedirectUriReason(uri)
  if (unusable) throw new InvalidRedirectUri(`"${uri}" ${unusable}`)
  if (uri.includes('#')) throw new InvalidRedirectUri(`"${uri}" must not contain a fragment`)
  const url = new URL(uri)
  if (url.username || url.password) throw new InvalidRedirectUri(`"${uri}" must not contain credentials`)
  if (url.protocol === 'https:') return 'https'
  if (url.protocol === 'http:') {
    if (loopbackParts(uri)) return 'loopback'
    throw new InvalidRedirectUri(
      `"${uri}" uses http: only http://localhost, http://127.0.0.1 and http://[::1] are allowed; use https`,
    )
  }
  return 'private-use'
}

/** Client metadata as registered (RFC 7591 §2), after validation and defaults. */
export interface ClientMetadata {
  name: string
  redirectUris: string[]
  scopes: Scope[]
  authMethod: ClientAuthMethod
  /** Whether the client named `token_endpoint_auth_method` rather than taking the default. */
  authMethodDeclared: boolean
  grantTypes: GrantType[]
  responseTypes: 'code'[]
  clientUri: string | null
  logoUri: string | null
  tosUri: string | null
  policyUri: string | null
}

function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw new InvalidClientMetadata(`${name} must be a string`)
  return value
}

function stringArrayField(body: Record<string, unknown>, name: string): string[] | undefined {
  const value = body[name]
  if (value === undefined || value === null) return undefined
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new InvalidClientMetadata(`${name} must be an array of strings`)
  }
  return value
}

function webPageUri(body: Record<string, unknown>, name: string): string | null {
  const value = stringField(body, name)
  if (value === undefined || value === '') return null
  if (!URL.canParse(value) || new URL(value).protocol !== 'https:') {
    throw new InvalidClientMetadata(`${name} must be an https URL`)
  }
  return value
}

function redirectUrisOf(body: Record<string, unknown>, authMethod: ClientAuthMethod): string[] {
  const value = body.redirect_uris
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string')) {
    throw new InvalidRedirectUri('redirect_uris must be a non-empty array of strings')
  }
  for (const uri of value) {
    if (classifyRedirectUri(uri) === 'private-use' && authMethod !== 'none') {
      throw new InvalidRedirectUri(
        `"${uri}" is a private-use URI scheme, which only public clients (token_endpoint_auth_method "none") may use`,
      )
    }
  }
  return [...new Set(value)]
}

/**
 * What a client registered without `scope` may ask for: every scope but the admin-only ones (reading the audit log),
 * which a client must name at registration to ask for them at all.
 */
export const defaultClientScopes: readonly Scope[] = allScopes.filter((scope) => !adminOnlyScopes.includes(scope))

function scopesOf(body: Record<string, unknown>): Scope[] {
  const value = withoutImpliedScopes(stringField(body, 'scope') ?? '')
  if (value === '') return [...defaultClientScopes]
  const requested = value.split(' ')
  const unknown = requested.filter((scope) => !isScope(scope))
  if (unknown.length > 0) {
    throw new InvalidClientMetadata(`Unknown scope ${unknown.join(', ')}; supported: ${allScopes.join(' ')}`)
  }
  return [...new Set(requested)] as Scope[]
}

function authMethodOf(body: Record<string, unknown>): { authMethod: ClientAuthMethod; authMethodDeclared: boolean } {
  const declared = stringField(body, 'token_endpoint_auth_method')
  const value = declared ?? 'client_secret_basic'
  if (!(clientAuthMethods as readonly string[]).includes(value)) {
    throw new InvalidClientMetadata(
      `token_endpoint_auth_method must be one of ${clientAuthMethods.join(', ')}, got "${value}"`,
    )
  }
  return { authMethod: value as ClientAuthMethod, authMethodDeclared: declared !== undefined }
}

function grantTypesOf(body: Record<string, unknown>): GrantType[] {
  // RFC 7591 defaults to authorization_code alone; refresh is part of the documented flow, so both by default.
  const value = stringArrayField(body, 'grant_types') ?? [...supportedGrantTypes]
  const unsupported = value.filter((grant) => !(supportedGrantTypes as readonly string[]).includes(grant))
  if (unsupported.length > 0) {
    throw new InvalidClientMetadata(
      `Unsupported grant_types ${unsupported.join(', ')}; supported: ${supportedGrantTypes.join(', ')}`,
    )
  }
  if (!value.includes('authorization_code')) {
    throw new InvalidClientMetadata('grant_types must include authorization_code')
  }
  return [...new Set(value)] as GrantType[]
}

function responseTypesOf(body: Record<string, unknown>): 'code'[] {
  const value = stringArrayField(body, 'response_types') ?? ['code']
  if (value.length === 0 || value.some((type) => type !== 'code')) {
    throw new InvalidClientMetadata('response_types may only contain "code"')
  }
  return ['code']
}

/** Validates RFC 7591 client metadata; unknown fields are ignored, as §2 requires. */
export function validateClientMetadata(body: unknown): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidClientMetadata('The request body must be a JSON object of client metadata')
  }
  const fields = body as Record<string, unknown>
  const name = stringField(fields, 'client_name')?.trim()
  if (!name) throw new InvalidClientMetadata('client_name is required')
  if (name.length > 100) throw new InvalidClientMetadata('client_name must be at most 100 characters')
  const { authMethod, authMethodDeclared } = authMethodOf(fields)
  return {
    name,
    redirectUris: redirectUrisOf(fields, authMethod),
    scopes: scopesOf(fields),
    authMethod,
    authMethodDeclared,
    grantTypes: grantTypesOf(fields),
    responseTypes: responseTypesOf(fields),
    clientUri: webPageUri(fields, 'client_uri'),
    logoUri: webPageUri(fields, 'logo_uri'),
    tosUri: webPageUri(fields, 'tos_uri'),
    policyUri: webPageUri(fields, 'policy_uri'),
  }
}

/** A client about to be stored: its validated metadata and who it belongs to, by how it came to exist. */
export interface ClientRegistration {
  metadata: ClientMetadata
  origin: Exclude<ClientOrigin, 'builtin'>
  organizationId: number | null
  ownerId: number | null
}

/** A client ready to store, with its secret (confidential clients only), returned this once and stored as a hash. */
export function clientToStore(input: ClientRegistration, now: number): { client: NewClient; secret: string | null } {
  const { metadata } = input
  const secret = metadata.authMethod === 'none' ? null : generateSecret(clientSecretPrefix)
  const client: NewClient = {
    clientId: generateSecret(clientIdPrefix),
    origin: input.origin,
    organizationId: input.organizationId,
    ownerId: input.ownerId,
    name: metadata.name,
    redirectUris: metadata.redirectUris,
    scopes: metadata.scopes,
    grantTypes: metadata.grantTypes,
    responseTypes: metadata.responseTypes,
    authMethod: metadata.authMethod,
    authMethodDeclared: metadata.authMethodDeclared,
    secretHash: secret === null ? null : hashSecret(secret),
    clientUri: metadata.clientUri,
    logoUri: metadata.logoUri,
    tosUri: metadata.tosUri,
    policyUri: metadata.policyUri,
    createdAt: now,
  }
  return { client, secret }
}

/** The event of a client's registration, however it came (settings, a registration token, open registration). */
export function clientRegistered(origin: AuditOrigin, now: number, client: Client): AuditEntry {
  return auditEntry(origin, now, {
    organizationId: client.organizationId ?? noOrganization,
    action: 'oauth.client_registered',
    target: target('oauth_client', client.clientId),
    detail: {
      client_name: client.name,
      registered_via: client.origin,
      token_endpoint_auth_method: client.authMethod,
      scopes: client.scopes,
    },
  })
}

/**
 * Stores a client and records it; the secret (confidential clients only) is returned this once and kept only as a
 * hash.
 */
export async function createClient(
  clients: ClientRepository,
  input: ClientRegistration,
  now: number,
  origin: AuditOrigin,
): Promise<{ client: Client; secret: string | null }> {
  const { client, secret } = clientToStore(input, now)
  return { client: await clients.create(client, (stored) => clientRegistered(origin, now, stored)), secret }
}

/** The RFC 7591 §3.2.1 view of a client: every registered field, without the secret. */
export function clientInformation(client: Client): OAuthModel.registered {
  const information: OAuthModel.registered = {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes as GrantType[],
    response_types: client.responseTypes as 'code'[],
    token_endpoint_auth_method: client.authMethod,
    scope: client.scopes.join(' '),
  }
  if (client.clientUri !== null) information.client_uri = client.clientUri
  if (client.logoUri !== null) information.logo_uri = client.logoUri
  if (client.tosUri !== null) information.tos_uri = client.tosUri
  if (client.policyUri !== null) information.policy_uri = client.policyUri
  return information
}
