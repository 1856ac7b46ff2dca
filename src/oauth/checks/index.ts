// Which checks run where, in order, so the whole flow can be audited at a glance. Each check is one small
// function in this folder named after the rule it enforces.
//
// Authorization requests: until `redirectUriIsRegistered` has passed, a failure shows an error page; after it,
// failures redirect to the client with `error`, `state` and `iss`. The consent form posts the same request
// back and is checked again in full (plus CSRF and Origin, which the web layer checks first), so a tampered
// form can never approve more than a valid request would have shown.

import { clientIsRegistered } from './client'
import { codeIsFresh, codeWasIssuedToClient, redirectUriMatchesCode } from './code'
import { parametersAreSingle } from './parameters'
import { pkceIsValid, verifierMatchesChallenge } from './pkce'
import { redirectUriIsRegistered, redirectUriIsUsable } from './redirect-uri'
import { exchangeResourceIsAuthorized, resourceIsServedHere } from './resource'
import { responseModeIsQuery, responseTypeIsCode } from './response-type'
import { scopeIsAllowed } from './scope'
import type { AuthorizationCheck, CodeExchangeCheck } from './types'

const authorizationRequestChecks: readonly AuthorizationCheck[] = [
  clientIsRegistered,
  redirectUriIsUsable,
  redirectUriIsRegistered,
  parametersAreSingle,
  responseTypeIsCode,
  responseModeIsQuery,
  scopeIsAllowed,
  pkceIsValid,
  resourceIsServedHere,
]

export const authorizationChecks = {
  'GET /oauth/authorize': authorizationRequestChecks,
  'POST /oauth/authorize': authorizationRequestChecks,
} as const satisfies Record<string, readonly AuthorizationCheck[]>

export type AuthorizationEndpoint = keyof typeof authorizationChecks

/**
 * POST /oauth/token with grant_type=authorization_code, after client authentication and after the code was found
 * unused (a used code is a replay, which the service answers by revoking what the first use issued).
 */
export const codeExchangeChecks: readonly CodeExchangeCheck[] = [
  codeWasIssuedToClient,
  codeIsFresh,
  redirectUriMatchesCode,
  verifierMatchesChallenge,
  exchangeResourceIsAuthorized,
]
