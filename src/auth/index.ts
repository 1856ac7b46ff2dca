// Bearer authentication for the API: the `scope` macro resolves the caller once per request and
// enforces the route's scope; `identity` serves GET /me.
import { bearer } from '@elysiajs/bearer'
import { Elysia } from 'elysia'
import type { Db } from '../db/client'
import { AppError } from '../shared/errors'
import type { Responses } from '../shared/responses'
import type { Clock } from '../shared/time'
import { AuthModel, type Caller, type Scope } from './model'
import { personalAccessTokenPrefix, resolvePersonalAccessToken } from './service'

export interface AuthDeps {
  db: Db
  clock: Clock
}

/** What a route needs: a scope, or just a valid token (`any`, as for GET /me). */
export type Requirement = Scope | 'any'

function unauthorized(message: string, tokenSent: boolean): AppError {
  const challenge = tokenSent ? 'Bearer realm="threadhouse", error="invalid_token"' : 'Bearer realm="threadhouse"'
  return new AppError(401, 'unauthorized', message, {}, { 'www-authenticate': challenge })
}

export function resolveCaller(deps: AuthDeps, token: string | undefined): Caller {
  if (!token) throw unauthorized('A bearer token is required', false)
  const caller = token.startsWith(personalAccessTokenPrefix)
    ? resolvePersonalAccessToken(deps.db, token, deps.clock.now())
    : null
  if (!caller) throw unauthorized('The bearer token is invalid, expired or revoked', true)
  return caller
}

/** Scopes never imply each other, except that `threads:read:own` is accepted wherever `threads:read` is. */
export function checkScope(caller: Caller, requirement: Requirement): void {
  if (requirement === 'any' || caller.scopes.has(requirement)) return
  if (requirement === 'threads:read' && caller.scopes.has('threads:read:own')) return
  throw new AppError(403, 'insufficient_scope', `This endpoint requires the ${requirement} scope`, {
    required_scope: requirement,
  })
}

export const auth = (deps: AuthDeps) =>
  new Elysia({ name: 'auth' }).use(bearer()).macro({
    scope: (requirement: Requirement) => ({
      detail: { security: [{ bearer: [] }], 'x-required-scope': requirement === 'any' ? null : requirement },
      resolve({ bearer }) {
        const caller = resolveCaller(deps, bearer)
        checkScope(caller, requirement)
        return { caller }
      },
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
