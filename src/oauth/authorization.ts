// The authorization endpoint's behaviour (RFC 6749 §4.1.1–§4.1.2): checking an authorization request, whether
// the person's organization may use the client, and the person's decision: approval issues a single-use code,
// denial answers access_denied.
import type { Scope } from '../auth/model'
import { mayHoldScope } from '../auth/personal-access-tokens'
import type { SessionUser } from '../auth/sessions'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { generateSecret, hashSecret } from '../shared/security'
import { type AuthorizationEndpoint, authorizationChecks } from './checks'
import type { AuthorizationRequest } from './checks/types'
import { findClient } from './clients'
import type { Client } from './clients.repository'
import type { OAuthDeps } from './deps'
import { AccessDenied, OAuthError } from './errors'
import { authorizationCodePrefix } from './tokens'

/** Codes are exchanged by software within seconds of the redirect; a minute leaves room for slow networks. */
export const authorizationCodeLifetimeMs = 60_000

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

export async function checkAuthorizationRequest(
  deps: OAuthDeps,
  params: URLSearchParams,
  endpoint: AuthorizationEndpoint,
): Promise<AuthorizationCheckResult> {
  // The checks do no I/O: the client the request names is looked up for them first.
  const clientId = params.get('client_id')
  const request: AuthorizationRequest = {
    params,
    publicUrl: deps.publicUrl,
    registeredClient: clientId ? await findClient(deps.oauthClients, clientId, deps.publicUrl, deps.clock.now()) : null,
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

/**
 * The scopes a person's approval grants of those asked: all but what their role may not hold (a member's consent never
 * carries `audit:read`, as their own tokens cannot). RFC 6749 §3.3 lets the server grant less; the token response's
 * `scope` says what was granted.
 */
export function grantableScopes(asked: readonly Scope[], user: Pick<SessionUser, 'role'>): Scope[] {
  return asked.filter((scope) => mayHoldScope(user.role, scope))
}

/**
 * Approval: claims an unclaimed client for the approver's organization, then issues a single-use code, recording the
 * consent with it.
 */
export async function approveAuthorization(
  deps: OAuthDeps,
  request: ValidAuthorizationRequest,
  user: SessionUser,
  origin: AuditOrigin,
): Promise<ApprovalResult> {
  const now = deps.clock.now()
  const scopes = grantableScopes(request.scopes, user)
  // Nothing asked for is theirs to give: as if they had denied it.
  if (scopes.length === 0) return { kind: 'redirect', location: denyAuthorizationLocation(deps, request) }
  const code = generateSecret(authorizationCodePrefix)
  const { client } = request
  const approved = await deps.oauthGrants.createAuthorizationCode(
    {
      codeHash: hashSecret(code),
      clientId: client.id,
      userId: user.id,
      redirectUri: request.redirectUri,
      scopes: scopes.join(' '),
      codeChallenge: request.codeChallenge,
      resource: request.resource,
      createdAt: now,
      expiresAt: now + authorizationCodeLifetimeMs,
    },
    client.origin === 'builtin' ? null : user.organizationId,
    (claimed) =>
      auditEntry(origin, now, {
        organizationId: user.organizationId,
        action: 'oauth.consent_given',
        target: target('oauth_client', client.clientId),
        detail: {
          client_name: client.name,
          scopes,
          resource: request.resource,
          claimed_for_organization: claimed,
        },
      }),
  )
  if (!approved) return { kind: 'other-organization' }
  return {
    kind: 'redirect',
    location: withResponseParameters(request.redirectUri, { code, state: request.state, iss: deps.publicUrl }),
  }
}

export function denyAuthorizationLocation(
  deps: Pick<OAuthDeps, 'publicUrl'>,
  request: ValidAuthorizationRequest,
): string {
  return errorRedirectLocation(deps.publicUrl, request, new AccessDenied('The user denied the request'))
}
