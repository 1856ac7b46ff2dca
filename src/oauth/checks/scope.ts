// RFC 6749 §3.3: the scope is required here (the specification lists it as required) and must name known scopes.
// What the client did not register for is left out rather than refused (§3.3 lets the server grant less, and the
// token response's `scope` says what was granted): clients registered without `scope` may not ask for `audit:read`,
// yet many ask for every scope the metadata advertises, and that worked before the audit log added one.
import { isScope, type Scope } from '../../auth/model'
import { InvalidScope } from '../errors'
import { type AuthorizationCheck, clientOf } from './types'

/**
 * OpenID Connect's way of asking for a refresh token. Threadhouse issues one to every client registered for the
 * refresh_token grant, so the value is granted implicitly and dropped: MCP clients add it on their own (Claude
 * Code before SEP-2207, Claude connectors), and refusing it would fail their whole authorization.
 */
const impliedScopes = new Set(['offline_access'])

/** A space-separated scope value without the scopes that are granted implicitly. */
export function withoutImpliedScopes(value: string): string {
  return value
    .split(' ')
    .filter((scope) => scope !== '' && !impliedScopes.has(scope))
    .join(' ')
}

export function parseScopeParameter(value: string): Scope[] {
  const requested = value.split(' ').filter(Boolean)
  const unknown = requested.filter((scope) => !isScope(scope))
  if (unknown.length > 0) throw new InvalidScope(`Unknown scope: ${unknown.join(', ')}`)
  if (requested.length === 0) throw new InvalidScope('At least one scope is required')
  return [...new Set(requested)] as Scope[]
}

export const scopeIsAllowed: AuthorizationCheck = (request) => {
  const client = clientOf(request)
  const value = request.params.get('scope')
  if (!value) throw new InvalidScope('scope is required')
  const requested = parseScopeParameter(withoutImpliedScopes(value))
  const registered = requested.filter((scope) => client.scopes.includes(scope))
  if (registered.length === 0) throw new InvalidScope(`This client is not registered for ${requested.join(', ')}`)
  request.scopes = registered
}
