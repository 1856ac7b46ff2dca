// RFC 6749 §3.1.2 and §10.6, RFC 8252 §7.3: the redirect URI must exactly match a registered one (loopback
// URIs may differ in port). Failing here shows an error page and never redirects (RFC 6749 §4.1.2.1), so the
// server cannot be turned into an open redirector.
import { redirectUriMatches } from '../clients'
import { InvalidRequest } from '../errors'
import { type AuthorizationCheck, clientOf } from './types'

export const redirectUriIsRegistered: AuthorizationCheck = (request) => {
  const client = clientOf(request)
  const values = request.params.getAll('redirect_uri')
  if (values.length > 1) throw new InvalidRequest('redirect_uri must be sent once')
  const requested = values[0]
  if (!requested) throw new InvalidRequest('redirect_uri is required')
  if (!client.redirectUris.some((registered) => redirectUriMatches(registered, requested))) {
    throw new InvalidRequest(`redirect_uri "${requested}" is not registered for this client`)
  }
  request.redirectUri = requested
}
