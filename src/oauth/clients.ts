// OAuth clients: lookup (including the built-in Swagger UI client), redirect URI rules, RFC 7591 metadata
// validation and creation. Registration and settings both create clients through `createClient`.
import { eq } from 'drizzle-orm'
import { scopes as allScopes, isScope, type Scope } from '../auth/model'
import type { Db } from '../db/client'
import { generateSecret, hashSecret } from '../shared/security'
import { withoutImpliedScopes } from './checks/scope'
import { type ClientAuthMethod, type ClientOrigin, clientAuthMethods } from './clients.repository'
import { InvalidClientMetadata, InvalidRedirectUri } from './errors'
import type { OAuthModel } from './model'
import { oauthClients } from './oauth.table'

export const clientIdPrefix = 'thcl_'
export const clientSecretPrefix = 'ths_'

/** Swagger UI's own public client, so "Authorize" on /swagger works with nothing registered by hand. */
export const docsClientId = 'threadhouse-docs'

export function docsRedirectUri(publicUrl: string): string {
  return `${publicUrl}/swagger/assets/oauth2-redirect.html`
}

export const supportedGrantTypes = ['authorization_code', 'refresh_token'] as const
export type GrantType = (typeof supportedGrantTypes)[number]

export interface Client {
  id: number
  clientId: string
  origin: ClientOrigin
  organizationId: number | null
  ownerId: number | null
  name: string
  redirectUris: string[]
  scopes: Scope[]
  grantTypes: string[]
  responseTypes: string[]
  authMethod: ClientAuthMethod
  /** Whether `authMethod` was named at registration rather than defaulted. */
  authMethodDeclared: boolean
  secretHash: string | null
  clientUri: string | null
  logoUri: string | null
  tosUri: string | null
  policyUri: string | null
  createdAt: number
  lastUsedAt: number | null
}

type ClientRow = typeof oauthClients.$inferSelect

export function toClient(row: ClientRow): Client {
  return {
    id: row.id,
    clientId: row.clientId,
    origin: row.origin,
    organizationId: row.organizationId,
    ownerId: row.ownerId,
    name: row.name,
    redirectUris: row.redirectUris,
    scopes: row.scopes.split(' ').filter(isScope),
    grantTypes: row.grantTypes,
    responseTypes: row.responseTypes,
    authMethod: row.tokenEndpointAuthMethod,
    authMethodDeclared: row.tokenEndpointAuthMethodDeclared,
    secretHash: row.secretHash,
    clientUri: row.clientUri,
    logoUri: row.logoUri,
    tosUri: row.tosUri,
    policyUri: row.policyUri,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
  }
}

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
function docsClient(db: Db, publicUrl: string, now: number): Client {
  db.insert(oauthClients)
    .values({
      clientId: docsClientId,
      origin: 'builtin',
      name: 'Threadhouse API documentation (Swagger UI)',
      redirectUris: [],
      scopes: allScopes.join(' '),
      grantTypes: [...supportedGrantTypes],
      responseTypes: ['code'],
      tokenEndpointAuthMethod: 'none',
      createdAt: now,
    })
    .onConflictDoNothing()
    .run()
  const row = db.select().from(oauthClients).where(eq(oauthClients.clientId, docsClientId)).get()
  if (!row) throw new Error('the built-in documentation client could not be stored')
  return { ...toClient(row), redirectUris: [docsRedirectUri(publicUrl)], scopes: [...allScopes] }
}

export function findClient(db: Db, clientId: string, publicUrl: string, now: number): Client | null {
  if (clientId === docsClientId) return docsClient(db, publicUrl, now)
  const row = db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId)).get()
  return row ? toClient(row) : null
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

function scopesOf(body: Record<string, unknown>): Scope[] {
  const value = withoutImpliedScopes(stringField(body, 'scope') ?? '')
  if (value === '') return [...allScopes]
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

export interface NewClient {
  metadata: ClientMetadata
  origin: Exclude<ClientOrigin, 'builtin'>
  organizationId: number | null
  ownerId: number | null
}

/** Stores a client; the secret (confidential clients only) is returned this once and kept only as a hash. */
export function createClient(db: Db, input: NewClient, now: number): { client: Client; secret: string | null } {
  const secret = input.metadata.authMethod === 'none' ? null : generateSecret(clientSecretPrefix)
  const { metadata } = input
  const row = db
    .insert(oauthClients)
    .values({
      clientId: generateSecret(clientIdPrefix),
      origin: input.origin,
      organizationId: input.organizationId,
      ownerId: input.ownerId,
      name: metadata.name,
      redirectUris: metadata.redirectUris,
      scopes: metadata.scopes.join(' '),
      grantTypes: metadata.grantTypes,
      responseTypes: metadata.responseTypes,
      tokenEndpointAuthMethod: metadata.authMethod,
      tokenEndpointAuthMethodDeclared: metadata.authMethodDeclared,
      secretHash: secret === null ? null : hashSecret(secret),
      clientUri: metadata.clientUri,
      logoUri: metadata.logoUri,
      tosUri: metadata.tosUri,
      policyUri: metadata.policyUri,
      createdAt: now,
    })
    .returning()
    .get()
  return { client: toClient(row), secret }
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
