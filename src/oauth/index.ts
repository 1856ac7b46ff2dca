// The OAuth 2.0 authorization server over HTTP: discovery documents, the authorization endpoint with its
// consent page, the token, revocation and registration endpoints, and the settings operations. HTTP in, HTTP
// out; the behaviour lives in the files named after each (authorization.ts, grants/, revocation.ts,
// registration.ts, management.ts), and every request rule in checks/.

import { Elysia, t } from 'elysia'
import { AuthModel } from '../auth/model'
import { anonymousActor, requestOrigin } from '../shared/audit'
import { readJson } from '../shared/body'
import type { ErrorSurface } from '../shared/error-plugin'
import { readForm } from '../shared/forms'
import { clientIpOf } from '../shared/http'
import { holdsNul } from '../shared/nul'
import { type Limit, type Limiter, type Refused, sharedLimiter } from '../shared/rate-limit'
import type { RateLimitRepository } from '../shared/rate-limit.repository'
import type { Responses } from '../shared/responses'
import { dayMs } from '../shared/time'
import { consentPageHeaders, type PageSession, pageOrigin, seeOther, signInPath, type WebDeps } from '../web/index'
import { field, trustedForms } from '../web/trusted-form'
import {
  type AuthorizationCheckResult,
  approveAuthorization,
  authorizationCodeLifetimeMs,
  checkAuthorizationRequest,
  denyAuthorizationLocation,
  organizationMayUse,
} from './authorization'
import type { OAuthDeps } from './deps'
import {
  InvalidClientMetadata,
  InvalidRedirectUri,
  InvalidRequest,
  noStore,
  OAuthError,
  oauthErrorResponse,
  TemporarilyUnavailable,
} from './errors'
import { exchangeToken } from './grants'
import { refreshReuseGraceMs } from './grants/refresh-token'
import { authorizationServerMetadata, protectedResourceMetadata } from './metadata'
import { OAuthModel } from './model'
import { consentPage, otherOrganization, unacceptableRequest } from './pages'
import { registerClient, registrationTokenLifetimeMs, requireRegistrationAccess } from './registration'
import { revokeToken } from './revocation'
import { oauthSettings } from './settings'
import { accessTokenLifetimeSeconds, refreshTokenLifetimeMs } from './tokens'

export interface OAuthRoutesDeps extends WebDeps, OAuthDeps {
  /** Registrations per address, counted across instances; null where one process counts them (SQLite). */
  rateLimits: RateLimitRepository | null
  responses: Responses
  openRegistration: boolean
  /** Token and revocation requests per client address (RATE_LIMIT_AUTH_PER_MINUTE); absent when turned off. */
  authLimiter?: Limiter
  /** Told of every registration the per-address limit refuses (the operators' metrics). */
  registrationRefused?: Refused
}

/** 30 registrations per client address per hour: far above what real clients need, far below a flood. */
export const registrationRateLimit: Limit = { max: 30, windowMs: 60 * 60_000 }

/**
 * Counts a request against a per-address limit and refuses it in RFC 6749 form. Requests whose address is
 * unknown (handled in-process, never by Bun's server) are not counted, as with the global per-IP limit.
 */
async function limitByAddress(limiter: Limiter | undefined, bucket: string, request: Request): Promise<void> {
  const ip = clientIpOf(request)
  if (!limiter || ip === null) return
  const retryAfter = await limiter.hit(`${bucket}:${ip}`)
  if (retryAfter !== null) {
    throw new TemporarilyUnavailable(`Too many ${bucket} requests from this address; try again later`, retryAfter)
  }
}

/**
 * Discovery, token, revocation and registration may be called from browser-based clients on other origins.
 * Those that send MCP-Protocol-Version make even the discovery GETs preflighted.
 */
const cors = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, MCP-Protocol-Version',
  'access-control-max-age': '86400',
} as const

function preflight(): Response {
  return new Response(null, { status: 204, headers: cors })
}

function json(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers: { ...cors, ...headers } })
}

/** OAuth endpoints answer in RFC 6749 form, not the API's `{ error, message }`. */
function oauthFailure(error: unknown): Response {
  if (!(error instanceof OAuthError)) throw error
  const response = oauthErrorResponse(error)
  for (const [name, value] of Object.entries(cors)) response.headers.set(name, value)
  return response
}

/**
 * A refusal that meets the JSON endpoints before or beside their own checks (U+0000 in the URL or the form) is
 * said in their RFC 6749 form too. The authorization endpoint answers people, with the pages' surface.
 */
export const oauthErrorSurface: ErrorSurface = {
  paths: /^\/oauth\/(?:token(?:\/revoke)?|register)\/?$/,
  render: (failure) => oauthFailure(new OAuthError(failure.code, failure.message, failure.status)),
}

/** The authorization endpoint answers people, with pages. */
function htmlResponse(description: string) {
  return { description, content: { 'text/html': { schema: { type: 'string' as const } } } }
}

const authorizeDetail = {
  operationId: 'authorize',
  summary: 'Authorization endpoint (browser)',
  tags: ['OAuth'],
  security: [],
  description:
    'Starts the authorization code flow (RFC 6749 §4.1) with PKCE S256. A signed-out person is sent to ' +
    '`/login?next=…` and back; a signed-in one sees the consent page. Approval redirects (303) to `redirect_uri` ' +
    'with `code`, `state` and `iss` (RFC 9207); the code is single-use and valid for ' +
    `${authorizationCodeLifetimeMs / 1000} seconds. Unknown clients ` +
    'and unregistered redirect URIs get an error page, never a redirect; every other error redirects with ' +
    '`error`, `error_description`, `state` and `iss`. Deny gives `access_denied`. `scope` is required; ' +
    '`offline_access` in it is accepted and ignored (clients registered for refresh_token get refresh tokens).',
  parameters: Object.entries(OAuthModel.authorizeQuery.properties).map(([name, schema]) => ({
    name,
    in: 'query',
    required: (OAuthModel.authorizeQuery.required as string[] | undefined)?.includes(name) ?? false,
    schema,
  })),
  responses: {
    200: htmlResponse('Consent page'),
    303: { description: 'Redirect to the client (code or error), or to /login' },
    400: htmlResponse('Error page: unknown client or unregistered redirect_uri'),
    403: htmlResponse('Refusal page: the client belongs to another organization'),
  },
}

function formBody(schema: object) {
  return { required: true, content: { 'application/x-www-form-urlencoded': { schema } } }
}

function jsonResponse(description: string, schema: object) {
  return { description, content: { 'application/json': { schema } } }
}

const oauthErrorResponse400 = jsonResponse('RFC 6749 §5.2 error', OAuthModel.error)

/** This endpoint's own limit answers in RFC 6749 form; the per-address limit on every request, in the API's. */
const rateLimitedResponse = {
  ...jsonResponse(
    'Rate limited: `temporarily_unavailable` over this endpoint’s own limit, `rate_limited` (`{ error, message }`) ' +
      'over the per-address limit on all requests. Retry after the seconds in `Retry-After`.',
    t.Union([OAuthModel.error, AuthModel.error]),
  ),
  headers: {
    'Retry-After': {
      description: 'Seconds to wait before retrying.',
      schema: { type: 'integer' as const, minimum: 1 },
    },
  },
}

export const oauthRoutes = (deps: OAuthRoutesDeps) => {
  // Counted by every instance together on PostgreSQL, like the other limits on guessing (app.ts).
  const registrationLimiter = sharedLimiter(
    deps.rateLimits,
    'registration',
    registrationRateLimit,
    deps.clock,
    deps.registrationRefused,
  )

  /** The signed-in answer to a valid authorization request: the consent page, or a refusal. */
  function answer(checked: AuthorizationCheckResult, session: PageSession | null, url: URL): JSX.Element | Response {
    if (checked.kind === 'error-page') throw unacceptableRequest(checked.error)
    if (checked.kind === 'error-redirect') return seeOther(checked.location)
    if (!session) return seeOther(signInPath(url.pathname + url.search))
    if (organizationMayUse(checked.request.client, session.user) === 'other-organization') {
      throw otherOrganization(denyAuthorizationLocation(deps, checked.request), checked.request)
    }
    return consentPage(checked.request, session, url.pathname + url.search)
  }

  return new Elysia({ name: 'oauth' })
    .use(trustedForms(deps))
    .get('/.well-known/oauth-authorization-server', () => json(authorizationServerMetadata(deps.publicUrl), 200), {
      detail: {
        operationId: 'getAuthorizationServerMetadata',
        summary: 'Authorization server metadata (RFC 8414)',
        tags: ['OAuth'],
        security: [],
        responses: { 200: jsonResponse('Metadata', OAuthModel.authorizationServerMetadata) },
      },
    })
    .options('/.well-known/oauth-authorization-server', preflight, { detail: { hide: true } })
    .options('/.well-known/oauth-protected-resource', preflight, { detail: { hide: true } })
    .options('/.well-known/oauth-protected-resource/api/v1', preflight, { detail: { hide: true } })
    .get('/.well-known/oauth-protected-resource', () => json(protectedResourceMetadata(deps.publicUrl, ''), 200), {
      detail: {
        operationId: 'getProtectedResourceMetadata',
        summary: 'Protected resource metadata for the host (RFC 9728)',
        tags: ['OAuth'],
        security: [],
        responses: { 200: jsonResponse('Metadata', OAuthModel.protectedResourceMetadata) },
      },
    })
    .get(
      '/.well-known/oauth-protected-resource/api/v1',
      () => json(protectedResourceMetadata(deps.publicUrl, '/api/v1'), 200),
      {
        detail: {
          operationId: 'getApiResourceMetadata',
          summary: 'Protected resource metadata for the API (RFC 9728)',
          tags: ['OAuth'],
          security: [],
          description:
            'Named by `resource_metadata` in every API 401 `WWW-Authenticate` header; MCP clients probe this ' +
            'path-suffixed form first.',
          responses: { 200: jsonResponse('Metadata', OAuthModel.protectedResourceMetadata) },
        },
      },
    )
    .get(
      '/oauth/authorize',
      async ({ request, session, html, set }) => {
        Object.assign(set.headers, consentPageHeaders)
        const url = new URL(request.url)
        const checked = await checkAuthorizationRequest(deps, url.searchParams, 'GET /oauth/authorize')
        const result = answer(checked, session, url)
        return result instanceof Response ? result : html(result)
      },
      { session: true, detail: authorizeDetail },
    )
    .post(
      '/oauth/authorize',
      async ({ request, session, form, html, set }) => {
        Object.assign(set.headers, consentPageHeaders)
        const url = new URL(request.url)
        if (!session) return seeOther(signInPath(url.pathname + url.search))
        const checked = await checkAuthorizationRequest(deps, url.searchParams, 'POST /oauth/authorize')
        if (
          checked.kind !== 'valid' ||
          organizationMayUse(checked.request.client, session.user) === 'other-organization'
        ) {
          const shown = answer(checked, session, url)
          return shown instanceof Response ? shown : html(shown)
        }
        const decision = field(form, 'decision')
        if (decision === 'deny') return seeOther(denyAuthorizationLocation(deps, checked.request))
        if (decision !== 'approve')
          throw unacceptableRequest(new InvalidRequest('decision must be "approve" or "deny"'))
        const approved = await approveAuthorization(deps, checked.request, session.user, pageOrigin(request, session))
        if (approved.kind === 'redirect') return seeOther(approved.location)
        throw otherOrganization(denyAuthorizationLocation(deps, checked.request), checked.request)
      },
      {
        session: true,
        trustedForm: 'form',
        parse: 'none',
        detail: {
          operationId: 'submitConsent',
          summary: 'Consent decision (browser form)',
          tags: ['OAuth'],
          // The browser's HttpOnly session cookie, which no scheme can fill in (see the Settings operations).
          security: [],
          description:
            'The consent page posts the same query string back with `decision` = `approve` ("Allow") or `deny` ' +
            '("Deny") and the hidden `csrf` field, with the browser\'s own session cookie. The request is validated ' +
            'again in full.',
          requestBody: formBody({
            type: 'object',
            required: ['decision', 'csrf'],
            properties: { decision: { type: 'string', enum: ['approve', 'deny'] }, csrf: { type: 'string' } },
          }),
          responses: {
            303: { description: 'Redirect to the client with `code` (or `error=access_denied`), `state` and `iss`' },
            400: htmlResponse('Error page: unknown client, unregistered redirect_uri, or `decision` missing'),
            403: htmlResponse('CSRF or Origin check failed, or the client belongs to another organization'),
          },
        },
      },
    )
    .options('/oauth/token', preflight, { detail: { hide: true } })
    .post(
      '/oauth/token',
      async ({ request }) => {
        try {
          await limitByAddress(deps.authLimiter, 'token', request)
          const form = await readForm(request)
          if (!form) throw new InvalidRequest('The body must be application/x-www-form-urlencoded')
          const payload = await exchangeToken(deps, {
            form,
            authorization: request.headers.get('authorization'),
            origin: requestOrigin(request, anonymousActor),
          })
          return json(payload, 200, noStore)
        } catch (error) {
          return oauthFailure(error)
        }
      },
      {
        parse: 'none',
        detail: {
          operationId: 'requestToken',
          summary: 'Token endpoint: exchange a code, or refresh',
          tags: ['OAuth'],
          security: [],
          description:
            'Form-encoded. Confidential clients authenticate with their secret by the method they registered: ' +
            '`client_secret_basic` in an Authorization: Basic header, `client_secret_post` as `client_id` + ' +
            '`client_secret` in the body; a client that named no method at registration may use either (never both ' +
            'at once), and the other method is 401 `invalid_client`. ' +
            `Public clients send \`client_id\` and PKCE’s \`code_verifier\`. Access tokens last ${accessTokenLifetimeSeconds} s. ` +
            `Refresh tokens rotate on every use and last ${refreshTokenLifetimeMs / dayMs} days from issue. ` +
            `A rotated refresh token still refreshes for ${refreshReuseGraceMs / 1000} s (clients that refresh ` +
            'concurrently); presented again after that, it revokes every token of that authorization. A narrower ' +
            '`scope` on refresh is allowed, a wider one is `invalid_scope`. Responses carry `Cache-Control: no-store`. Rate limit: ' +
            'RATE_LIMIT_AUTH_PER_MINUTE requests (default 30) per client address per minute, shared with ' +
            'revocation (429 `temporarily_unavailable` with Retry-After).',
          requestBody: formBody(OAuthModel.tokenRequest),
          responses: {
            200: jsonResponse('Tokens', OAuthModel.tokenResponse),
            400: oauthErrorResponse400,
            401: jsonResponse(
              'invalid_client (with WWW-Authenticate: Basic when Basic was used or is the registered method)',
              OAuthModel.error,
            ),
            429: rateLimitedResponse,
          },
        },
      },
    )
    .options('/oauth/token/revoke', preflight, { detail: { hide: true } })
    .post(
      '/oauth/token/revoke',
      async ({ request }) => {
        try {
          await limitByAddress(deps.authLimiter, 'token', request)
          const form = await readForm(request)
          if (!form) throw new InvalidRequest('The body must be application/x-www-form-urlencoded')
          await revokeToken(deps, {
            form,
            authorization: request.headers.get('authorization'),
            origin: requestOrigin(request, anonymousActor),
          })
          return new Response(null, { status: 200, headers: { ...cors, ...noStore } })
        } catch (error) {
          return oauthFailure(error)
        }
      },
      {
        parse: 'none',
        detail: {
          operationId: 'revokeToken',
          summary: 'Revoke a token (RFC 7009)',
          tags: ['OAuth'],
          security: [],
          description:
            'Client authentication as at the token endpoint. Revoking a refresh token revokes every token of ' +
            'its authorization; revoking an access token revokes that token. Always 200 (empty body) once the ' +
            'client is authenticated, whether the token existed, was already revoked or belongs to another ' +
            'client (which keeps it). Counts against the token endpoint’s per-address rate limit.',
          requestBody: formBody(OAuthModel.revocationRequest),
          responses: {
            200: { description: 'Done (empty body)' },
            400: oauthErrorResponse400,
            401: jsonResponse('invalid_client', OAuthModel.error),
            429: rateLimitedResponse,
          },
        },
      },
    )
    .options('/oauth/register', preflight, { detail: { hide: true } })
    .post(
      '/oauth/register',
      async ({ request }) => {
        try {
          await limitByAddress(registrationLimiter, 'registration', request)
          const access = {
            authorization: request.headers.get('authorization'),
            openRegistration: deps.openRegistration,
          }
          // Only a caller who may register has a body read at all; anyone may call this endpoint.
          await requireRegistrationAccess(deps, access)
          // validateClientMetadata answers invalid_client_metadata for anything that is not a JSON object.
          const read = await readJson(request)
          const body = 'value' in read ? read.value : null
          if ('value' in read && read.holdsNul) {
            const where = holdsNul((body as { redirect_uris?: unknown }).redirect_uris)
            const message = 'Client metadata may not contain the NUL character (U+0000)'
            throw where ? new InvalidRedirectUri(message) : new InvalidClientMetadata(message)
          }
          const registered = await registerClient(deps, { body, ...access }, requestOrigin(request, anonymousActor))
          return json(registered, 201, noStore)
        } catch (error) {
          return oauthFailure(error)
        }
      },
      {
        parse: 'none',
        detail: {
          operationId: 'registerClient',
          summary: 'Dynamic client registration (RFC 7591)',
          tags: ['OAuth'],
          security: [{ registrationToken: [] }, {}],
          description:
            'Open registration (no Authorization header; unless the operator set OAUTH_OPEN_REGISTRATION=false): ' +
            'the client belongs to no organization until the first organization whose user approves it. With ' +
            `\`Authorization: Bearer <registration token>\` (single use, ${registrationTokenLifetimeMs / 60_000} minutes) ` +
            'the client belongs to that token’s organization at once; a used, expired or unknown token is 401. ' +
            `Rate limit: ${registrationRateLimit.max} requests per client address per hour (429 with Retry-After).`,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: OAuthModel.registrationRequest } },
          },
          responses: {
            201: jsonResponse('The registered client; `client_secret` appears only here', OAuthModel.registered),
            400: jsonResponse('invalid_redirect_uri or invalid_client_metadata', OAuthModel.error),
            401: jsonResponse('invalid_token: registration token missing, used, expired or unknown', OAuthModel.error),
            429: rateLimitedResponse,
          },
        },
      },
    )
    .use(oauthSettings(deps))
}
