// Bearer authentication for the API: the `scope` macro resolves the caller once per request and
// enforces the route's scope; `identity` serves GET /me.
import { bearer } from '@elysiajs/bearer'
import { Elysia } from 'elysia'
import type { Db } from '../db/client'
import { resourceMetadataUrl } from '../oauth/metadata'
import { accessTokenPrefix, resolveOAuthAccessToken } from '../oauth/tokens'
import { AppError } from '../shared/errors'
import { settleAddressCount } from '../shared/http'
import { type RateLimiter, rateLimited } from '../shared/rate-limit'
import type { Responses } from '../shared/responses'
import { hashSecret } from '../shared/security'
import type { Clock } from '../shared/time'
import { AuthModel, type Caller, type Scope } from './model'
import { personalAccessTokenPrefix, resolvePersonalAccessToken } from './service'
import { recallToken, rememberToken } from './token-cache'

export interface AuthDeps {
  db: Db
  clock: Clock
  /** Requests per token; absent when the limit is turned off. */
  tokenLimiter?: RateLimiter
  publicUrl: string
}

/** What a route needs: a scope, or just a valid token (`any`, as for GET /me). */
export type Requirement = Scope | 'any'

// Every 401 names the protected resource metadata (RFC 9728 §5.1), which is how MCP clients find the
// authorization server with nothing configured by hand.
function challenge(publicUrl: string, params: string): string {
  return `Bearer realm="threadhouse"${params}, resource_metadata="${resourceMetadataUrl(publicUrl)}"`
}

function unauthorized(publicUrl: string, message: string, tokenSent: boolean): AppError {
  const params = tokenSent ? ', error="invalid_token"' : ''
  return new AppError(401, 'unauthorized', message, {}, { 'www-authenticate': challenge(publicUrl, params) })
}

/**
 * Each kind of bearer token is recognised by its prefix and resolved to the same Caller. A token resolved less
 * than a second ago is taken from memory (token-cache.ts).
 */
function resolveToken({ db, clock }: AuthDeps, token: string): Caller | null {
  const resolve = token.startsWith(personalAccessTokenPrefix)
    ? resolvePersonalAccessToken
    : token.startsWith(accessTokenPrefix)
      ? resolveOAuthAccessToken
      : null
  if (!resolve) return null
  const now = clock.now()
  const hash = hashSecret(token)
  const recalled = recallToken(db, hash, now)
  if (recalled) return recalled
  const resolved = resolve(db, hash, now)
  if (!resolved) return null
  rememberToken(db, hash, resolved, now)
  return resolved.caller
}

function unauthenticated(publicUrl: string, token: string | undefined): AppError {
  if (!token) return unauthorized(publicUrl, 'A bearer token is required', false)
  return unauthorized(publicUrl, 'The bearer token is invalid, expired or revoked', true)
}

/**
 * Scopes never imply each other, except that `threads:read:own` is accepted wherever `threads:read` is. The 403
 * names the missing scope in the body and, per RFC 6750 §3.1, in WWW-Authenticate, where MCP clients look to
 * ask the person for more (step-up authorization).
 */
export function checkScope(caller: Caller, requirement: Requirement, publicUrl: string): void {
  if (requirement === 'any' || caller.scopes.has(requirement)) return
  if (requirement === 'threads:read' && caller.scopes.has('threads:read:own')) return
  throw new AppError(
    403,
    'insufficient_scope',
    `This endpoint requires the ${requirement} scope`,
    { required_scope: requirement },
    { 'www-authenticate': challenge(publicUrl, `, error="insufficient_scope", scope="${requirement}"`) },
  )
}

/** The bearer plugin knows the scheme only as `Bearer`; HTTP schemes are case-insensitive (RFC 7235 §2.1). */
function anyCaseBearer(request: Request): string | undefined {
  const header = request.headers.get('authorization')
  return header ? /^bearer +(\S+)\s*$/i.exec(header)?.[1] : undefined
}

// The caller of each request, from the scope check (before validation) to the route (after it).
const callers = new WeakMap<Request, Caller>()

// Elysia guesses from a hook's source text whether it may return a promise, and reads the bearer plugin's
// `return authorization.slice(…)` as one: every route would then be compiled async and await the token.
// The hook is synchronous; its container's `isAsync` is where Elysia records the answer.
const syncBearer = bearer()
for (const hook of syncBearer.event.transform ?? []) Object.assign(hook, { isAsync: false })

export const auth = (deps: AuthDeps) =>
  new Elysia({ name: 'auth' }).use(syncBearer).macro({
    scope: (requirement: Requirement) => ({
      // Both schemes, as at the document's root: an operation's own list replaces the root's, and Swagger UI
      // sends only the credentials of the schemes an operation lists.
      detail: {
        security: [{ bearer: [] }, { oauth2: requirement === 'any' ? [] : [requirement] }],
        'x-required-scope': requirement === 'any' ? null : requirement,
      },
      // Elysia validates params, query and body between `transform` and `resolve`. Authenticating in
      // `transform` means a request without a valid token, or without the scope, gets its 401 or 403 and
      // learns nothing about what the route would accept.
      transform({ bearer, request }) {
        const token = bearer ?? anyCaseBearer(request)
        const caller = token ? resolveToken(deps, token) : null
        // With the per-token limit off, a valid token counts against its address as before.
        const retryAfter = settleAddressCount(request, caller !== null && deps.tokenLimiter !== undefined)
        if (retryAfter !== null) throw rateLimited(retryAfter)
        if (!caller) throw unauthenticated(deps.publicUrl, token)
        deps.tokenLimiter?.take(caller.credential)
        checkScope(caller, requirement, deps.publicUrl)
        callers.set(request, caller)
      },
      resolve: ({ request }) => ({ caller: callers.get(request) as Caller }),
    }),
  })

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
        summary: 'The authenticated user and organization',
        tags: ['Identity'],
        description: 'No scope required.',
      },
    },
  )
