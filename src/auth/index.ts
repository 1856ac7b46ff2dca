// Bearer authentication for the API: the `scope` macro resolves the caller once per request and
// enforces the route's scope; `identity` serves GET /me.
import { Elysia } from 'elysia'
import { callerChecked } from '../shared/body'
import { AppError } from '../shared/errors'
import { requestIdOf, settleAddressCount } from '../shared/http'
import type { Logger } from '../shared/log'
import { type RateLimiter, rateLimited } from '../shared/rate-limit'
import type { Responses } from '../shared/responses'
import { hashSecret } from '../shared/security'
import type { Clock } from '../shared/time'
import { type AccessTokenLookup, accessTokenPrefix, resolveOAuthAccessToken } from './access-tokens'
import { AuthModel, type Caller, type ResolvedToken, type Scope } from './model'
import { personalAccessTokenPrefix, resolvePersonalAccessToken } from './personal-access-tokens'
import { type ProtectedResource, resourceMetadataUrl } from './resources'
import type { TokenCache } from './token-cache'
import type { AccessTokenRepository } from './tokens.repository'

export interface AuthDeps {
  /** Personal access tokens, resolved by their hash. */
  accessTokens: AccessTokenRepository
  /** OAuth access tokens, resolved by their hash (the authorization server's grants, read through auth's own contract). */
  oauthGrants: AccessTokenLookup
  /** Tokens resolved less than a second ago (token-cache.ts); null where every request reads the database. */
  tokenCache: TokenCache | null
  clock: Clock
  log: Logger
  /** Requests per token; absent when the limit is turned off. */
  tokenLimiter?: RateLimiter
  publicUrl: string
}

/** What a route needs: a scope, or just a valid token (`any`, as for GET /me). */
export type Requirement = Scope | 'any'

// Every 401 names the protected resource metadata (RFC 9728 §5.1), which is how MCP clients find the
// authorization server with nothing configured by hand.
function challenge(publicUrl: string, params: string, resource: ProtectedResource = '/api/v1'): string {
  return `Bearer realm="threadhouse"${params}, resource_metadata="${resourceMetadataUrl(publicUrl, resource)}"`
}

/** The scopes a 401 of /mcp suggests: what its tools need between them. */
const mcpChallengeScopes = 'threads:read threads:write'

function unauthorized(
  publicUrl: string,
  message: string,
  tokenSent: boolean,
  resource: ProtectedResource = '/api/v1',
): AppError {
  // At /mcp, the scopes its tools need (RFC 6750 §3, RFC 9728 §5.1): MCP clients ask for these when told.
  const scope = resource === '/mcp' ? `, scope="${mcpChallengeScopes}"` : ''
  const params = `${tokenSent ? ', error="invalid_token"' : ''}${scope}`
  const headers = { 'www-authenticate': challenge(publicUrl, params, resource) }
  return new AppError(401, 'unauthorized', message, {}, headers)
}

type Lookup = (deps: AuthDeps, hash: string, now: number) => Promise<ResolvedToken | null>

const personalAccessTokenLookup: Lookup = (deps, hash, now) => resolvePersonalAccessToken(deps.accessTokens, hash, now)
const oauthAccessTokenLookup: Lookup = (deps, hash, now) => resolveOAuthAccessToken(deps.oauthGrants, hash, now)

/**
 * Each kind of bearer token is recognised by its prefix and resolved to the same Caller. On SQLite a token resolved
 * less than a second ago is taken from memory (token-cache.ts) at once; only a miss waits for the database. On
 * PostgreSQL every request reads it, so that a revocation on another instance applies at once.
 */
function resolveToken(deps: AuthDeps, token: string): Caller | null | Promise<Caller | null> {
  const lookup = token.startsWith(personalAccessTokenPrefix)
    ? personalAccessTokenLookup
    : token.startsWith(accessTokenPrefix)
      ? oauthAccessTokenLookup
      : null
  if (!lookup) return null
  const now = deps.clock.now()
  const hash = hashSecret(token)
  const cache = deps.tokenCache
  if (cache === null) return lookup(deps, hash, now).then((resolved) => resolved?.caller ?? null)
  const recalled = cache.recall(hash, now)
  if (recalled) return recalled
  const epoch = cache.epoch
  return lookup(deps, hash, now).then((resolved) => {
    if (!resolved) return null
    cache.remember(hash, resolved, now, epoch)
    return resolved.caller
  })
}

/** What kind of token was refused, by its prefix: never any part of the secret itself. */
function tokenKind(token: string): string {
  if (token.startsWith(personalAccessTokenPrefix)) return 'personal access token'
  if (token.startsWith(accessTokenPrefix)) return 'OAuth access token'
  return 'unrecognised'
}

function unauthenticated(
  publicUrl: string,
  token: string | undefined,
  request: Request,
  resource: ProtectedResource,
): AppError {
  if (!token && new URL(request.url).searchParams.has('access_token')) {
    const message = 'Send the token in the Authorization header: tokens in the query string are not accepted'
    return unauthorized(publicUrl, message, false, resource)
  }
  if (!token) return unauthorized(publicUrl, 'A bearer token is required', false, resource)
  return unauthorized(publicUrl, 'The bearer token is invalid, expired or revoked', true, resource)
}

/**
 * Whether the request's token still resolves to the same caller, with `requirement`: for a stream that outlives its
 * request (the change feed) to look again, so that a revoked token, a removed member or a narrowed grant ends it.
 */
export function stillAdmitted(
  deps: AuthDeps,
  request: Request,
  caller: Caller,
  requirement: Requirement,
): () => Promise<boolean> {
  const token = bearerToken(request)
  return async () => {
    const again = token ? await resolveToken(deps, token) : null
    return (
      again !== null &&
      again.userId === caller.userId &&
      again.organizationId === caller.organizationId &&
      again.sees === caller.sees &&
      hasScope(again, requirement)
    )
  }
}

/** Whether the caller's token meets a requirement, by checkScope's rule, for callers that refuse in their own form. */
export function hasScope(caller: Caller, requirement: Requirement): boolean {
  if (requirement === 'any' || caller.scopes.has(requirement)) return true
  return requirement === 'threads:read' && caller.scopes.has('threads:read:own')
}

/**
 * Scopes never imply each other, except that `threads:read:own` is accepted wherever `threads:read` is. The 403
 * names the missing scope in the body and, per RFC 6750 §3.1, in WWW-Authenticate, where MCP clients look to
 * ask the person for more (step-up authorization).
 */
export function checkScope(caller: Caller, requirement: Requirement, publicUrl: string): void {
  if (hasScope(caller, requirement)) return
  throw new AppError(
    403,
    'insufficient_scope',
    `This endpoint requires the ${requirement} scope`,
    { required_scope: requirement },
    { 'www-authenticate': challenge(publicUrl, `, error="insufficient_scope", scope="${requirement}"`) },
  )
}

/**
 * The token, from the Authorization header only, with the scheme in any case (RFC 7235 §2.1). Never from the
 * query string: URLs end up in logs, histories and Referer headers, which is why RFC 9700 and the MCP
 * authorization specification forbid it; browsers reach streams with their session cookie instead.
 */
function bearerToken(request: Request): string | undefined {
  const header = request.headers.get('authorization')
  return header ? /^bearer +(\S+)\s*$/i.exec(header)?.[1] : undefined
}

// The caller of each request, from the scope check (before the body and validation) to the route (after it).
const callers = new WeakMap<Request, Caller>()

/**
 * The caller of a request to one of the protected resources (the API, the MCP server), from its bearer token, with
 * the request counted against the token's rate limit (or its address's, when the token is refused). Throws the 401
 * (pointing at that resource's metadata) or 429. A token issued for the other resource (RFC 8707) is refused like
 * an invalid one: it was not meant for this one. Scopes are left to the caller, which may refuse in its own form.
 * Synchronous when the token cache knows the token, which is most requests; a promise when it waits for a lookup.
 */
export function authenticateBearer(
  deps: AuthDeps,
  request: Request,
  resource: ProtectedResource,
): Caller | Promise<Caller> {
  const token = bearerToken(request)
  const resolved = token ? resolveToken(deps, token) : null
  return resolved instanceof Promise
    ? resolved.then((caller) => admit(deps, request, resource, token, caller))
    : admit(deps, request, resource, token, resolved)
}

/** The resolved caller if the token is meant for this resource, counted against its limit; else the refusal. */
function admit(
  deps: AuthDeps,
  request: Request,
  resource: ProtectedResource,
  token: string | undefined,
  resolved: Caller | null,
): Caller {
  const caller = resolved && (resolved.audience === undefined || resolved.audience === resource) ? resolved : null
  // With the per-token limit off, a valid token counts against its address as before.
  const retryAfter = settleAddressCount(request, caller !== null && deps.tokenLimiter !== undefined)
  if (retryAfter !== null) throw rateLimited(retryAfter)
  if (!caller) {
    // A refused token is worth a line (a leaked one revoked, a client misconfigured); a missing one is not.
    if (token) deps.log.warn('token refused', { requestId: requestIdOf(request), kind: tokenKind(token) })
    if (resolved?.audience !== undefined) {
      const message = `This token was issued for ${deps.publicUrl}${resolved.audience}, not ${deps.publicUrl}${resource}`
      throw unauthorized(deps.publicUrl, message, true, resource)
    }
    throw unauthenticated(deps.publicUrl, token, request, resource)
  }
  deps.tokenLimiter?.take(caller.credential)
  return caller
}

export const auth = (deps: AuthDeps) => {
  const allow = (requirement: Requirement, request: Request, caller: Caller): void => {
    checkScope(caller, requirement, deps.publicUrl)
    callers.set(request, caller)
    callerChecked(request)
  }
  /**
   * Resolves the caller and enforces the route's scope, once per request. It runs as the first `parse` hook of a
   * route with a body, before a byte of it is read, and in `transform` for the others: either way before Elysia
   * validates params, query and body, so a request without a valid token, or without the scope, gets its 401 or
   * 403, learns nothing about what the route would accept, and costs no body buffering.
   */
  const authenticate = (requirement: Requirement, request: Request): void | Promise<void> => {
    if (callers.has(request)) return
    const caller = authenticateBearer(deps, request, '/api/v1')
    if (caller instanceof Promise) return caller.then((resolved) => allow(requirement, request, resolved))
    allow(requirement, request, caller)
  }
  return new Elysia({ name: 'auth' }).macro({
    scope: (requirement: Requirement) => ({
      // Both schemes, as at the document's root: an operation's own list replaces the root's, and Swagger UI
      // sends only the credentials of the schemes an operation lists.
      detail: {
        security: [{ bearer: [] }, { oauth2: requirement === 'any' ? [] : [requirement] }],
        'x-required-scope': requirement === 'any' ? null : requirement,
      },
      // Declared async, so that Elysia awaits them whenever a lookup the token cache missed is still running.
      async parse({ request }) {
        await authenticate(requirement, request)
      },
      async transform({ request }) {
        await authenticate(requirement, request)
      },
      resolve: ({ request }) => ({ caller: callers.get(request) as Caller }),
    }),
  })
}

export const identity = (deps: AuthDeps & { responses: Responses }) =>
  new Elysia({ name: 'identity', prefix: '/api/v1' }).use(auth(deps)).get(
    '/me',
    ({ caller }): AuthModel.me => ({
      sub: caller.sub,
      name: caller.name,
      email: caller.email,
      svc_user_id: caller.userId,
      svc_organization_id: caller.organizationId,
      svc_organization_slug: caller.organizationSlug,
      role: caller.role,
    }),
    {
      scope: 'any',
      response: deps.responses({ 200: AuthModel.me, 401: AuthModel.error }),
      detail: {
        operationId: 'getMe',
        summary: 'The authenticated user and organization',
        tags: ['Identity'],
        description: 'No scope required.',
      },
    },
  )
