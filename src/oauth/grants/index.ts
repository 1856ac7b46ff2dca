// The token endpoint (RFC 6749 §3.2): the client authenticates, then the grant it names runs, each in its own
// file beside this one.
import { clientActor } from '../../shared/audit'
import { refuseRepeatedParameters } from '../checks/parameters'
import { authenticateClient, type ClientRequest } from '../client-authentication'
import type { OAuthDeps } from '../deps'
import { InvalidRequest, UnsupportedGrantType } from '../errors'
import type { TokenPayload } from '../tokens'
import { exchangeAuthorizationCode } from './authorization-code'
import { refreshAccessToken } from './refresh-token'

export async function exchangeToken(deps: OAuthDeps, request: ClientRequest): Promise<TokenPayload> {
  refuseRepeatedParameters(request.form)
  const grantType = request.form.get('grant_type')
  if (!grantType) throw new InvalidRequest('grant_type is required')
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    throw new UnsupportedGrantType(`grant_type "${grantType}" is not supported`)
  }
  const client = await authenticateClient(deps, request)
  const origin = { ...request.origin, actor: clientActor(client.clientId) }
  return grantType === 'authorization_code'
    ? exchangeAuthorizationCode(deps, client, request.form, origin)
    : refreshAccessToken(deps, client, request.form, origin)
}
