// The shapes every check works on. A check reads the request, throws the RFC error it finds, or records what
// it validated for the checks (and the service) after it. Checks do no I/O: what they need is read beforehand.
import type { Scope } from '../../auth/model'
import type { Client } from '../clients.repository'

/** An authorization request (GET /oauth/authorize, or the consent form posting it back) under validation. */
export interface AuthorizationRequest {
  readonly params: URLSearchParams
  readonly publicUrl: string
  /** The client registered under the request's client_id, looked up before the checks run; null when none is. */
  readonly registeredClient: Client | null
  /** Set by `clientIsRegistered`. */
  client?: Client
  /** Set by `redirectUriIsRegistered`: the URI as requested (with its port), where responses go. */
  redirectUri?: string
  /** Set by `scopeIsAllowed`. */
  scopes?: Scope[]
  /** Set by `pkceIsValid`: the S256 challenge, or null for a confidential client that sent none. */
  codeChallenge?: string | null
  /** Set by `resourceIsServedHere`: the one resource the tokens are for (RFC 8707), or null for all of them. */
  resource?: string | null
}

export type AuthorizationCheck = (request: AuthorizationRequest) => void

/** A stored authorization code being exchanged at the token endpoint. */
export interface StoredCode {
  clientId: number
  redirectUri: string
  codeChallenge: string | null
  /** The resource the authorization request named, or null. */
  resource: string | null
  expiresAt: number
}

export interface CodeExchange {
  readonly code: StoredCode
  readonly client: Client
  readonly params: URLSearchParams
  readonly publicUrl: string
  readonly now: number
}

export type CodeExchangeCheck = (exchange: CodeExchange) => void

/** The client a previous check found; a missing one means the check table is in the wrong order. */
export function clientOf(request: AuthorizationRequest): Client {
  if (!request.client) throw new Error('check order: clientIsRegistered must run first')
  return request.client
}
