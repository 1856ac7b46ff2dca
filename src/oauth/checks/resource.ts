// RFC 8707: clients (MCP clients must) may name the resource they want tokens for. Tokens here are good for
// this server's API only, so the only acceptable resources are the ones its metadata advertises.
import { InvalidTarget } from '../errors'
import type { AuthorizationCheck, CodeExchangeCheck } from './types'

export function acceptedResources(publicUrl: string): string[] {
  return [publicUrl, `${publicUrl}/`, `${publicUrl}/api/v1`, `${publicUrl}/api/v1/`]
}

/** Throws InvalidTarget unless every `resource` parameter names this API. */
export function checkResources(params: URLSearchParams, publicUrl: string): void {
  const accepted = acceptedResources(publicUrl)
  for (const resource of params.getAll('resource')) {
    if (!accepted.includes(resource)) {
      throw new InvalidTarget(`Tokens from this server are only valid for ${publicUrl}/api/v1, not "${resource}"`)
    }
  }
}

export const resourceIsThisApi: AuthorizationCheck = (request) => checkResources(request.params, request.publicUrl)

export const exchangeResourceIsThisApi: CodeExchangeCheck = (exchange) =>
  checkResources(exchange.params, exchange.publicUrl)
