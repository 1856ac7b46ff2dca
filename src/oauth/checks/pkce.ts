// RFC 7636 with S256 only (RFC 9700 §2.1.1): required for public clients; a confidential client that sends a
// challenge is bound to it just the same at the token endpoint.
import { sha256 } from '@oslojs/crypto/sha2'
import { encodeBase64urlNoPadding } from '@oslojs/encoding'
import { isPublic } from '../clients'
import { InvalidGrant, InvalidRequest } from '../errors'
import { type AuthorizationCheck, type CodeExchangeCheck, clientOf } from './types'

/** BASE64URL(SHA256(verifier)): always 43 characters. */
const challengePattern = /^[A-Za-z0-9_-]{43}$/
/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const verifierPattern = /^[A-Za-z0-9._~-]{43,128}$/

export function s256Challenge(verifier: string): string {
  return encodeBase64urlNoPadding(sha256(new TextEncoder().encode(verifier)))
}

export const pkceIsValid: AuthorizationCheck = (request) => {
  const client = clientOf(request)
  const challenge = request.params.get('code_challenge') || null
  const method = request.params.get('code_challenge_method') || null
  if (challenge === null) {
    if (method !== null) throw new InvalidRequest('code_challenge_method was sent without code_challenge')
    if (isPublic(client)) throw new InvalidRequest('Public clients must use PKCE: send code_challenge with S256')
    request.codeChallenge = null
    return
  }
  // Without a method RFC 7636 means "plain", which offers no protection against a stolen code.
  if (method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256 (plain is not supported)')
  if (!challengePattern.test(challenge)) {
    throw new InvalidRequest('code_challenge must be the 43-character BASE64URL(SHA256(code_verifier))')
  }
  request.codeChallenge = challenge
}

export const verifierMatchesChallenge: CodeExchangeCheck = ({ code, params }) => {
  const verifier = params.get('code_verifier')
  if (code.codeChallenge === null) {
    // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a downgrade attempt.
    if (verifier) throw new InvalidGrant('code_verifier was sent but the authorization request had no code_challenge')
    return
  }
  if (!verifier) throw new InvalidGrant('code_verifier is required: the authorization request sent a code_challenge')
  if (!verifierPattern.test(verifier)) throw new InvalidRequest('code_verifier must be 43 to 128 unreserved characters')
  if (s256Challenge(verifier) !== code.codeChallenge)
    throw new InvalidGrant('code_verifier does not match code_challenge')
}
