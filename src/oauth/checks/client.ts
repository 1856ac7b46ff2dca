// RFC 6749 §4.1.1: the client must be registered. Failing here shows an error page: with no known client
// there is no trustworthy place to redirect to.
import { InvalidClient, InvalidRequest } from '../errors'
import type { AuthorizationCheck } from './types'

export const clientIsRegistered: AuthorizationCheck = (request) => {
  const values = request.params.getAll('client_id')
  if (values.length > 1) throw new InvalidRequest('client_id must be sent once')
  const clientId = values[0]
  if (!clientId) throw new InvalidRequest('client_id is required')
  const client = request.registeredClient
  if (!client) throw new InvalidClient(`No client is registered with client_id "${clientId}"`, 'none')
  request.client = client
}
