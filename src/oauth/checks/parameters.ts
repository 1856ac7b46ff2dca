// RFC 6749 §3.1: request parameters must not be repeated. `resource` is the exception: RFC 8707 §2 allows
// one per target resource. The same rule holds at the token and revocation endpoints (§3.2).
import { repeatedNames } from '../../shared/forms'
import { InvalidRequest } from '../errors'
import type { AuthorizationCheck } from './types'

const mayRepeat = new Set(['resource'])

export function refuseRepeatedParameters(params: URLSearchParams): void {
  const repeated = repeatedNames(params).filter((name) => !mayRepeat.has(name))
  if (repeated.length > 0) throw new InvalidRequest(`Parameters must not be repeated: ${repeated.join(', ')}`)
}

export const parametersAreSingle: AuthorizationCheck = (request) => refuseRepeatedParameters(request.params)
