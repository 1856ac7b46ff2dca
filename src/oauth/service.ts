// The authorization server's behaviour as plain functions: authorization requests and consent, the token
// endpoint (code exchange and refresh), revocation, and dynamic client registration.
import { and, eq, gt, isNull } from 'drizzle-orm'
import type { Scope } from '../auth/model'
import type { SessionUser } from '../auth/sessions'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { repeatedNames } from '../shared/forms'
import { generateSecret, hashSecret, secretsEqual } from '../shared/security'
import type { Clock } from '../shared/time'
import { type AuthorizationEndpoint, authorizationChecks, codeExchangeChecks } from './checks'
import { narrowedAudience } from './checks/resource'
import { parseScopeParameter, withoutImpliedScopes } from './checks/scope'
import type { AuthorizationRequest } from './checks/types'
import {
  acceptedAuthMethods,
  type Client,
  clientInformation,
  createClient,
  findClient,
  type GrantType,
  isPublic,
  validateClientMetadata,
} from './clients'
import type { ClientAuthMethod } from './clients.repository'
import {
  AccessDenied,
  type AttemptedClientAuth,
  InvalidClient,
  InvalidGrant,
  InvalidRequest,
  InvalidScope,
  InvalidToken,
  OAuthError,
  UnauthorizedClient,
  UnsupportedGrantType,
} from './errors'
import type { OAuthModel } from './model'
import {
  oauthAccessTokens,
  oauthAuthorizationCodes,
  oauthClients,
  oauthGrants,
  oauthRefreshTokens,
  oauthRegistrationTokens,
} from './oauth.table'
import {
  accessTokenPrefix,
  authorizationCodePrefix,
  issueTokens,
  refreshTokenPrefix,
  registrationTokenPrefix,
  revokeGrant,
  type TokenPayload,
} from './tokens'

export interface OAuthDeps {
  db: Db
  clock: Clock
  publicUrl: string
}

/** Codes are exchanged by software within seconds of the redirect; a minute leaves room for slow networks. */
export const authorizationCodeLifetimeMs = 60_000
export const registrationTokenLifetimeMs = 60 * 60_000
/**
 * How long a rotated refresh token still refreshes. MCP clients refresh concurrently from one stored token (several
 * Claude Code sessions, parallel tool calls after an expiry); without this the losers' reuse revoked the family.
 */
export const refreshReuseGraceMs = 60_000

// ---------------------------------------------------------------------------------------------------------
// Authorization requests and consent

export interface ValidAuthorizationRequest {
  client: Client
  redirectUri: string
  scopes: Scope[]
  codeChallenge: string | null
  /** The one resource the tokens are for (RFC 8707), or null for every resource of this server. */
  resource: string | null
  state: string | undefined
}

export type AuthorizationCheckResult =
  | { kind: 'valid'; request: ValidAuthorizationRequest }
  /** No trustworthy redirect URI (unknown client, unregistered redirect_uri): tell the person, never redirect. */
  | { kind: 'error-page'; error: OAuthError }
  | { kind: 'error-redirect'; location: string; error: OAuthError }

/** Appends response parameters to a redirect URI, keeping its own query exactly as registered. */
export function withResponseParameters(redirectUri: string, values: Record<string, string | undefined>): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(values)) if (value !== undefined) query.append(name, value)
  return `${redirectUri}${redirectUri.includes('?') ? '&' : '?'}${query}`
}

/** An error response to the client (RFC 6749 §4.1.2.1), with `iss` as RFC 9207 requires once advertised. */
export function errorRedirectLocation(
  publicUrl: string,
  target: { redirectUri: string; state: string | undefined },
  error: OAuthError,
): string {
  return withResponseParameters(target.redirectUri, {
    error: error.error,
    error_description: error.description,
    state: target.state,
    iss: publicUrl,
  })
}

export function checkAuthorizationRequest(
  deps: OAuthDeps,
  params: URLSearchParams,
  endpoint: AuthorizationEndpoint,
): AuthorizationCheckResult {
  const now = deps.clock.now()
  const request: AuthorizationRequest = {
    params,
    publicUrl: deps.publicUrl,
    findClient: (clientId) => findClient(deps.db, clientId, deps.publicUrl, now),
  }
  const state = params.get('state') || undefined
  try {
    for (const check of authorizationChecks[endpoint]) check(request)
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error
    if (!request.redirectUri) return { kind: 'error-page', error }
    return {
      kind: 'error-redirect',
      error,
      location: errorRedirectLocation(deps.publicUrl, { redirectUri: request.redirectUri, state }, error),
    }
  }
  const { client, redirectUri, scopes, codeChallenge, resource } = request
  if (!client || !redirectUri || !scopes || codeChallenge === undefined || resource === undefined) {
    throw new Error('the authorization checks finished without validating the whole request')
  }
  return { kind: 'valid', request: { client, redirectUri, scopes, codeChallenge, resource, state } }
}

/**
 * Whether this person's organization may use the client. An openly registered client belongs to no organization
 * until the first one approves it; the built-in documentation client serves every organization.
 */
export function organizationMayUse(client: Client, user: SessionUser): 'member' | 'unclaimed' | 'other-organization' {
  if (client.origin === 'builtin') return 'member'
  if (client.organizationId === null) return 'unclaimed'
  return client.organizationId === user.organizationId ? 'member' : 'other-organization'
}

export type ApprovalResult = { kind: 'redirect'; location: string } | { kind: 'other-organization' }

/** Approval: claims an unclaimed client for the approver's organization, then issues a single-use code. */
export function approveAuthorization(
  deps: OAuthDeps,
  request: ValidAuthorizationRequest,
  user: SessionUser,
): ApprovalResult {
  const now = deps.clock.now()
  const code = generateSecret(authorizationCodePrefix)
  const approved = deps.db.transaction((tx) => {
    const { client } = request
    if (client.origin !== 'builtin') {
      // The first approval wins even when two organizations approve at the same moment: only one UPDATE matches.
      tx.update(oauthClients)
        .set({ organizationId: user.organizationId })
        .where(and(eq(oauthClients.id, client.id), isNull(oauthClients.organizationId)))
        .run()
      const owner = tx
        .select({ organizationId: oauthClients.organizationId })
        .from(oauthClients)
        .where(eq(oauthClients.id, client.id))
        .get()
      if (owner?.organizationId !== user.organizationId) return false
    }
    tx.insert(oauthAuthorizationCodes)
      .values({
        codeHash: hashSecret(code),
        clientId: client.id,
        userId: user.id,
        redirectUri: request.redirectUri,
        scopes: request.scopes.join(' '),
        codeChallenge: request.codeChallenge,
        resource: request.resource,
        createdAt: now,
        expiresAt: now + authorizationCodeLifetimeMs,
      })
      .run()
    return true
  })
  if (!approved) return { kind: 'other-organization' }
  return {
    kind: 'redirect',
    location: withResponseParameters(request.redirectUri, { code, state: request.state, iss: deps.publicUrl }),
  }
}

export function denyAuthorizationLocation(deps: OAuthDeps, request: ValidAuthorizationRequest): string {
  return errorRedirectLocation(deps.publicUrl, request, new AccessDenied('The user denied the request'))
}

// ---------------------------------------------------------------------------------------------------------
// Client authentication (token and revocation endpoints, RFC 6749 §2.3)

export interface ClientRequest {
  form: URLSearchParams
  /** The Authorization header, if any. */
  authorization: string | null
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replaceAll('+', ' '))
}

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id):urlencode(secret))`. */
function parseBasic(header: string): { id: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  if (!match?.[1]) return null
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return null
  try {
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) }
  } catch {
    return null
  }
}

/** What a client that used the wrong method is told to do instead. */
const howToAuthenticate: Record<ClientAuthMethod | 'either', string> = {
  none: 'this is a public client: send client_id alone, without a secret',
  client_secret_basic:
    'this client registered client_secret_basic: send its client_id and secret in an Authorization: Basic header',
  client_secret_post:
    'this client registered client_secret_post: send client_id and client_secret as form fields, not in a header',
  either: 'this is a confidential client: send its client_secret, in a Basic header or the form',
}

/**
 * Identifies and authenticates the client (RFC 6749 §2.3.1) with the method it registered. A confidential client
 * that left the method to the default may use either: the specification's request shapes send `client_id` and
 * `client_secret` as fields, while RFC 7591's default is Basic. A public client sends its `client_id` alone.
 */
export function authenticateClient(deps: OAuthDeps, { form, authorization }: ClientRequest): Client {
  const usesBasic = authorization !== null && /^basic\s/i.test(authorization)
  const basic = usesBasic ? parseBasic(authorization) : null
  const bodyId = form.get('client_id') || undefined
  const bodySecret = form.get('client_secret') || undefined
  const attempted: AttemptedClientAuth = usesBasic ? 'client_secret_basic' : bodySecret ? 'client_secret_post' : 'none'
  if (usesBasic && !basic) throw new InvalidClient('The Basic authorization header is malformed', attempted)
  if (basic && bodySecret) {
    throw new InvalidRequest('Use one client authentication method: Basic header or client_secret, not both')
  }
  if (basic && bodyId && bodyId !== basic.id) {
    throw new InvalidClient('client_id in the body differs from the one in the Basic header', attempted)
  }
  const clientId = basic?.id ?? bodyId
  if (!clientId) throw new InvalidClient('Client authentication is required: send client_id', attempted)
  const client = findClient(deps.db, clientId, deps.publicUrl, deps.clock.now())
  if (!client) throw new InvalidClient('Client authentication failed', attempted)
  const accepted = acceptedAuthMethods(client)
  if (!accepted.includes(attempted)) {
    const [required] = accepted.length === 1 ? accepted : []
    throw new InvalidClient(
      `Client authentication failed: ${howToAuthenticate[required ?? 'either']}`,
      attempted,
      required,
    )
  }
  if (isPublic(client)) return client
  const secret = basic?.secret ?? bodySecret ?? ''
  if (!client.secretHash || !secretsEqual(hashSecret(secret), client.secretHash)) {
    throw new InvalidClient('Client authentication failed', attempted)
  }
  return client
}

// ---------------------------------------------------------------------------------------------------------
// Token endpoint (RFC 6749 §4.1.3, §6)

function refuseRepeatedParameters(form: URLSearchParams): void {
  const repeated = repeatedNames(form).filter((name) => name !== 'resource')
  if (repeated.length > 0) throw new InvalidRequest(`Parameters must not be repeated: ${repeated.join(', ')}`)
}

function requireGrantType(client: Client, grantType: GrantType): void {
  if (!client.grantTypes.includes(grantType)) {
    throw new UnauthorizedClient(`This client is not registered for the ${grantType} grant`)
  }
}

function markClientUsed(db: Db, client: Client, now: number): void {
  db.update(oauthClients).set({ lastUsedAt: now }).where(eq(oauthClients.id, client.id)).run()
}

function exchangeAuthorizationCode(deps: OAuthDeps, client: Client, form: URLSearchParams): TokenPayload {
  requireGrantType(client, 'authorization_code')
  const code = form.get('code')
  if (!code) throw new InvalidRequest('code is required')
  if (!form.get('redirect_uri')) throw new InvalidRequest('redirect_uri is required')
  const now = deps.clock.now()
  const result = deps.db.transaction((tx) => {
    const stored = tx
      .select()
      .from(oauthAuthorizationCodes)
      .where(eq(oauthAuthorizationCodes.codeHash, hashSecret(code)))
      .get()
    if (!stored) return new InvalidGrant('The authorization code is invalid')
    if (stored.usedAt !== null) {
      // RFC 6749 §4.1.2: a code used twice was stolen or leaked; revoke everything its first use issued.
      if (stored.grantId !== null) revokeGrant(deps.db, stored.grantId, now)
      return new InvalidGrant('The authorization code was already used; the tokens issued for it are revoked')
    }
    try {
      for (const check of codeExchangeChecks)
        check({ code: stored, client, params: form, publicUrl: deps.publicUrl, now })
    } catch (error) {
      if (error instanceof OAuthError) return error
      throw error
    }
    // The checks above accepted the request's `resource`: this is the audience they allow.
    const resource = narrowedAudience(stored.resource, form, deps.publicUrl)
    const grant = tx
      .insert(oauthGrants)
      .values({
        clientId: client.id,
        userId: stored.userId,
        scopes: stored.scopes,
        resource,
        createdAt: now,
        expiresAt: now,
      })
      .returning({ id: oauthGrants.id })
      .get()
    tx.update(oauthAuthorizationCodes)
      .set({ usedAt: now, grantId: grant.id })
      .where(eq(oauthAuthorizationCodes.id, stored.id))
      .run()
    markClientUsed(deps.db, client, now)
    return issueTokens(
      deps.db,
      { grantId: grant.id, scopes: parseScopeParameter(stored.scopes), resource, grantTypes: client.grantTypes },
      now,
    )
  })
  // Errors are returned rather than thrown so that a replay's revocation commits with the transaction.
  if (result instanceof OAuthError) throw result
  return result
}

function refreshAccessToken(deps: OAuthDeps, client: Client, form: URLSearchParams): TokenPayload {
  requireGrantType(client, 'refresh_token')
  const token = form.get('refresh_token')
  if (!token) throw new InvalidRequest('refresh_token is required')
  const now = deps.clock.now()
  const result = deps.db.transaction((tx) => {
    const stored = tx
      .select({
        id: oauthRefreshTokens.id,
        expiresAt: oauthRefreshTokens.expiresAt,
        usedAt: oauthRefreshTokens.usedAt,
        grantId: oauthGrants.id,
        clientId: oauthGrants.clientId,
        scopes: oauthGrants.scopes,
        resource: oauthGrants.resource,
        revokedAt: oauthGrants.revokedAt,
      })
      .from(oauthRefreshTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
      .where(eq(oauthRefreshTokens.tokenHash, hashSecret(token)))
      .get()
    if (!stored || stored.clientId !== client.id) return new InvalidGrant('The refresh token is invalid')
    if (stored.revokedAt !== null) return new InvalidGrant('The refresh token has been revoked')
    if (stored.usedAt !== null && now - stored.usedAt > refreshReuseGraceMs) {
      // Rotation makes reuse a theft signal (RFC 9700 §4.14.2): whoever holds the family, nobody keeps it.
      revokeGrant(deps.db, stored.grantId, now)
      return new InvalidGrant('The refresh token was already used; every token of this authorization is revoked')
    }
    if (stored.expiresAt <= now) return new InvalidGrant('The refresh token has expired')
    let resource: string | null
    try {
      resource = narrowedAudience(stored.resource, form, deps.publicUrl)
    } catch (error) {
      if (error instanceof OAuthError) return error
      throw error
    }
    const granted = parseScopeParameter(stored.scopes)
    let scopes = granted
    const requested = withoutImpliedScopes(form.get('scope') ?? '')
    if (requested) {
      try {
        scopes = parseScopeParameter(requested)
      } catch (error) {
        if (error instanceof OAuthError) return error
        throw error
      }
      const wider = scopes.filter((scope) => !granted.includes(scope))
      if (wider.length > 0) return new InvalidScope(`The original grant does not include ${wider.join(', ')}`)
    }
    // A token reused within the grace window keeps its first use time, so the window never slides.
    tx.update(oauthRefreshTokens)
      .set({ usedAt: now })
      .where(and(eq(oauthRefreshTokens.id, stored.id), isNull(oauthRefreshTokens.usedAt)))
      .run()
    tx.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, stored.grantId)).run()
    markClientUsed(deps.db, client, now)
    return issueTokens(deps.db, { grantId: stored.grantId, scopes, resource, grantTypes: client.grantTypes }, now)
  })
  if (result instanceof OAuthError) throw result
  return result
}

export function exchangeToken(deps: OAuthDeps, request: ClientRequest): TokenPayload {
  refuseRepeatedParameters(request.form)
  const grantType = request.form.get('grant_type')
  if (!grantType) throw new InvalidRequest('grant_type is required')
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    throw new UnsupportedGrantType(`grant_type "${grantType}" is not supported`)
  }
  const client = authenticateClient(deps, request)
  return grantType === 'authorization_code'
    ? exchangeAuthorizationCode(deps, client, request.form)
    : refreshAccessToken(deps, client, request.form)
}

// ---------------------------------------------------------------------------------------------------------
// Revocation (RFC 7009)

/**
 * Revokes an access token (that token only) or a refresh token (its whole grant, access tokens included).
 * Unknown tokens and other clients' tokens are silently left alone: the answer is the same either way.
 */
export function revokeToken(deps: OAuthDeps, request: ClientRequest): void {
  refuseRepeatedParameters(request.form)
  const client = authenticateClient(deps, request)
  const token = request.form.get('token')
  if (!token) throw new InvalidRequest('token is required')
  const now = deps.clock.now()
  const hash = hashSecret(token)
  if (token.startsWith(refreshTokenPrefix)) {
    const found = deps.db
      .select({ grantId: oauthGrants.id, clientId: oauthGrants.clientId })
      .from(oauthRefreshTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
      .where(eq(oauthRefreshTokens.tokenHash, hash))
      .get()
    if (found?.clientId === client.id) revokeGrant(deps.db, found.grantId, now)
    return
  }
  if (token.startsWith(accessTokenPrefix)) {
    const found = deps.db
      .select({ id: oauthAccessTokens.id, clientId: oauthGrants.clientId })
      .from(oauthAccessTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthAccessTokens.grantId))
      .where(eq(oauthAccessTokens.tokenHash, hash))
      .get()
    if (found?.clientId !== client.id) return
    const revoked = deps.db
      .update(oauthAccessTokens)
      .set({ revokedAt: now })
      .where(and(eq(oauthAccessTokens.id, found.id), isNull(oauthAccessTokens.revokedAt)))
      .returning({ id: oauthAccessTokens.id })
      .get()
    if (revoked) forgetResolvedTokens(deps.db)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Dynamic client registration (RFC 7591) and registration tokens

export interface RegistrationRequest {
  body: unknown
  authorization: string | null
  openRegistration: boolean
}

export function createRegistrationToken(
  db: Db,
  user: { id: number; organizationId: number },
  now: number,
): { token: string; expiresAt: number } {
  const token = generateSecret(registrationTokenPrefix)
  const expiresAt = now + registrationTokenLifetimeMs
  db.insert(oauthRegistrationTokens)
    .values({
      tokenHash: hashSecret(token),
      userId: user.id,
      organizationId: user.organizationId,
      createdAt: now,
      expiresAt,
    })
    .run()
  return { token, expiresAt }
}

function bearerOf(authorization: string | null): string | null {
  if (authorization === null) return null
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (!match?.[1])
    throw new InvalidToken('The Authorization header must be "Bearer <registration token>"', 'token sent')
  return match[1]
}

/** Registers a client and returns the RFC 7591 §3.2.1 response body (the secret appears here only). */
/**
 * Whether this caller may register at all: a usable registration token, or open registration. Checked before the
 * body is read, and again by registerClient, which consumes the token.
 */
export function requireRegistrationAccess(
  deps: OAuthDeps,
  request: Pick<RegistrationRequest, 'authorization' | 'openRegistration'>,
): void {
  const now = deps.clock.now()
  const token = bearerOf(request.authorization)
  const usable = and(gt(oauthRegistrationTokens.expiresAt, now), isNull(oauthRegistrationTokens.usedAt))
  if (token !== null) {
    const found = deps.db
      .select({ id: oauthRegistrationTokens.id })
      .from(oauthRegistrationTokens)
      .where(and(eq(oauthRegistrationTokens.tokenHash, hashSecret(token)), usable))
      .get()
    if (!found) throw new InvalidToken('The registration token is invalid, expired or already used', 'token sent')
  } else if (!request.openRegistration) {
    throw new InvalidToken(
      'Open registration is disabled: register with a registration token from a member',
      'no token',
    )
  }
}

export function registerClient(deps: OAuthDeps, request: RegistrationRequest): OAuthModel.registered {
  requireRegistrationAccess(deps, request)
  const now = deps.clock.now()
  const token = bearerOf(request.authorization)
  const usable = and(gt(oauthRegistrationTokens.expiresAt, now), isNull(oauthRegistrationTokens.usedAt))
  const metadata = validateClientMetadata(request.body)
  const created = deps.db.transaction((tx) => {
    let issuer: { userId: number; organizationId: number } | null = null
    if (token !== null) {
      // Consumed together with the insert, so a failed registration does not burn the token.
      issuer =
        tx
          .update(oauthRegistrationTokens)
          .set({ usedAt: now })
          .where(and(eq(oauthRegistrationTokens.tokenHash, hashSecret(token)), usable))
          .returning({ userId: oauthRegistrationTokens.userId, organizationId: oauthRegistrationTokens.organizationId })
          .get() ?? null
      if (!issuer) return null
    }
    return createClient(
      deps.db,
      {
        metadata,
        origin: issuer ? 'token_registration' : 'open_registration',
        organizationId: issuer?.organizationId ?? null,
        ownerId: issuer?.userId ?? null,
      },
      now,
    )
  })
  if (!created) throw new InvalidToken('The registration token is invalid, expired or already used', 'token sent')
  const body = clientInformation(created.client)
  if (created.secret === null) return body
  return { ...body, client_secret: created.secret, client_secret_expires_at: 0 }
}
