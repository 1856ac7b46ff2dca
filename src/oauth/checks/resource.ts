// RFC 8707: clients (MCP clients must) may name the resource they want tokens for. This server has two protected
// resources, the API (`/api/v1`) and the MCP server (`/mcp`); naming the server itself (PUBLIC_URL) means both.
// A token is then accepted by the resource it was asked for only (its audience); one asked for with no resource,
// or for the whole server, is accepted by both, as tokens were before resources were told apart.
import { type ProtectedResource, protectedResources } from '../../auth/resources'
import { InvalidTarget } from '../errors'
import type { AuthorizationCheck, CodeExchangeCheck } from './types'

/** The resource a `resource` value names: one of the paths, `all` for the server itself, null for anything else. */
function resourceNamed(value: string, publicUrl: string): ProtectedResource | 'all' | null {
  if (value === publicUrl || value === `${publicUrl}/`) return 'all'
  for (const path of protectedResources) {
    if (value === `${publicUrl}${path}` || value === `${publicUrl}${path}/`) return path
  }
  return null
}

/**
 * The audience the `resource` parameters ask for: one resource, or null for all of them (none named, the server
 * named, or both resources named). Throws InvalidTarget for a value that names neither.
 */
export function requestedAudience(params: URLSearchParams, publicUrl: string): ProtectedResource | null {
  const named = new Set<ProtectedResource | 'all'>()
  for (const value of params.getAll('resource')) {
    const resource = resourceNamed(value, publicUrl)
    if (resource === null) {
      throw new InvalidTarget(
        `Tokens from this server are only valid for ${publicUrl}/api/v1 or ${publicUrl}/mcp, not "${value}"`,
      )
    }
    named.add(resource)
  }
  const [only] = named
  return named.size === 1 && only !== undefined && only !== 'all' ? only : null
}

/**
 * The audience of tokens issued under an earlier decision (an authorization code's, a grant's), narrowed by the
 * `resource` parameters of the token request: a request may ask for less than was authorized, never for more or
 * for another resource (RFC 8707 §2.2).
 */
export function narrowedAudience(
  authorized: string | null,
  params: URLSearchParams,
  publicUrl: string,
): ProtectedResource | null {
  const requested = requestedAudience(params, publicUrl)
  if (authorized === null) return requested
  if (requested !== null && requested !== authorized) {
    throw new InvalidTarget(`This authorization is for ${publicUrl}${authorized}, not ${publicUrl}${requested}`)
  }
  return authorized as ProtectedResource
}

export const resourceIsServedHere: AuthorizationCheck = (request) => {
  request.resource = requestedAudience(request.params, request.publicUrl)
}

export const exchangeResourceIsAuthorized: CodeExchangeCheck = (exchange) => {
  narrowedAudience(exchange.code.resource, exchange.params, exchange.publicUrl)
}
