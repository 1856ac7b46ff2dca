// RFC 6749 §4.1.3 and §10.5: a code is short-lived and bound to the client and redirect URI it was issued for.
import { InvalidGrant } from '../errors'
import type { CodeExchangeCheck } from './types'

export const codeIsFresh: CodeExchangeCheck = ({ code, now }) => {
  if (code.expiresAt <= now) throw new InvalidGrant('The authorization code has expired')
}

export const codeWasIssuedToClient: CodeExchangeCheck = ({ code, client }) => {
  if (code.clientId !== client.id) throw new InvalidGrant('The authorization code was issued to another client')
}

export const redirectUriMatchesCode: CodeExchangeCheck = ({ code, params }) => {
  if (params.get('redirect_uri') !== code.redirectUri) {
    throw new InvalidGrant('redirect_uri must be identical to the one in the authorization request')
  }
}
