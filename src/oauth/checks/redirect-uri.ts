// RFC 6749 §3.1.2 and §10.6, RFC 8252 §7.3: the redirect URI must exactly match a registered one (loopback
// URIs may differ in port). Failing here shows an error page and never redirects (RFC 6749 §4.1.2.1), so the
// server cannot be turned into an open redirector.
import { redirectUriMatches, unusableRedirectUriReason } from '../clients'
import { InvalidRequest } from '../errors'
import { type AuthorizationCheck, clientOf } from './types'

/**
 * The redirect URI is sent once and could receive a code at all. Registration refuses the same URIs; checking
 * again here covers clients registered before a rule was added, and keeps a URI that is no URL (a loopback port
 * of 99999) away from the pages and the Location header.
 */
export const redirectUriIsUsable: AuthorizationCheck = (request) => {
  const values = request.params.getAll('redirect_uri')
  if (values.length > 1) throw new InvalidRequest('redirect_uri must be sent once')
  const requested = values[0]
  if (!requested) throw new InvalidRequest('redirect_uri is required')
  const unusable = unusableRedirectUriReason(requested)
  if (unusable) throw new InvalidRequest(`redirect_uri "${requested}" ${unusable}`)
}

export const redirectUriIsRegistered: AuthorizationCheck = (request) => {
  const client = clientOf(request)
  const requested = request.params.get('redirect_uri') ?? ''
  if (!client.redirectUris.some((registered) => redirectUriMatches(registered, requested))) {
    throw new InvalidRequest(`redirect_uri "${requested}" is not registered for this client`)
  }
  request.redirectUri = requested
}
