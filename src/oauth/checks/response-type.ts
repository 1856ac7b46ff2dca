// RFC 6749 §3.1.1 and §4.1.1: only the authorization code flow exists here, answered in the query string.
import { InvalidRequest, UnsupportedResponseType } from '../errors'
import type { AuthorizationCheck } from './types'

export const responseTypeIsCode: AuthorizationCheck = (request) => {
  const responseType = request.params.get('response_type')
  if (!responseType) throw new InvalidRequest('response_type is required')
  if (responseType !== 'code') {
    throw new UnsupportedResponseType(`response_type "${responseType}" is not supported; use "code"`)
  }
}

export const responseModeIsQuery: AuthorizationCheck = (request) => {
  const mode = request.params.get('response_mode')
  if (mode && mode !== 'query') throw new InvalidRequest(`response_mode "${mode}" is not supported; use "query"`)
}
