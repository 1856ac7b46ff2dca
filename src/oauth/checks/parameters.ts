// RFC 6749 §3.1: request parameters must not be repeated. `resource` is the exception: RFC 8707 §2 allows
// one per target resource.
import { repeatedNames } from '../../shared/forms'
import { InvalidRequest } from '../errors'
import type { AuthorizationCheck } from './types'

const mayRepeat = new Set(['resource'])

export const parametersAreSingle: AuthorizationCheck = (request) => {
  const repeated = repeatedNames(request.params).filter((name) => !mayRepeat.has(name))
  if (repeated.length > 0) throw new InvalidRequest(`Parameters must not be repeated: ${repeated.join(', ')}`)
}
