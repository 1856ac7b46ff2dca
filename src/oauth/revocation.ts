// Token revocation (RFC 7009): a client takes back a token it was issued.
import { accessTokenPrefix } from '../auth/access-tokens'
import { clientActor } from '../shared/audit'
import { hashSecret } from '../shared/security'
import { grantRevoked } from './audit'
import { refuseRepeatedParameters } from './checks/parameters'
import { authenticateClient, type ClientRequest } from './client-authentication'
import type { OAuthDeps } from './deps'
import { InvalidRequest } from './errors'
import { refreshTokenPrefix } from './tokens'

/**
 * Revokes an access token (that token only) or a refresh token (its whole grant, access tokens included).
 * Unknown tokens and other clients' tokens are silently left alone: the answer is the same either way.
 */
export async function revokeToken(deps: OAuthDeps, request: ClientRequest): Promise<void> {
  refuseRepeatedParameters(request.form)
  const client = await authenticateClient(deps, request)
  const token = request.form.get('token')
  if (!token) throw new InvalidRequest('token is required')
  const now = deps.clock.now()
  const grants = deps.oauthGrants
  if (token.startsWith(refreshTokenPrefix)) {
    const origin = { ...request.origin, actor: clientActor(client.clientId) }
    const audit = grantRevoked(origin, now, 'client_request', client.clientId)
    await grants.revokeRefreshTokenGrant(hashSecret(token), client.id, now, audit)
  } else if (token.startsWith(accessTokenPrefix)) await grants.revokeAccessToken(hashSecret(token), client.id, now)
}
