// Dynamic client registration (RFC 7591), and the single-use registration tokens members hand out so that a
// client registers straight into their organization.
import { generateSecret, hashSecret } from '../shared/security'
import { clientInformation, clientToStore, validateClientMetadata } from './clients'
import type { ClientRepository } from './clients.repository'
import type { OAuthDeps } from './deps'
import { InvalidToken } from './errors'
import type { OAuthModel } from './model'
import { registrationTokenPrefix } from './tokens'

export const registrationTokenLifetimeMs = 60 * 60_000

export interface RegistrationRequest {
  body: unknown
  authorization: string | null
  openRegistration: boolean
}

export async function createRegistrationToken(
  clients: ClientRepository,
  user: { id: number; organizationId: number },
  now: number,
): Promise<{ token: string; expiresAt: number }> {
  const token = generateSecret(registrationTokenPrefix)
  const expiresAt = now + registrationTokenLifetimeMs
  await clients.createRegistrationToken({
    tokenHash: hashSecret(token),
    userId: user.id,
    organizationId: user.organizationId,
    createdAt: now,
    expiresAt,
  })
  return { token, expiresAt }
}

function bearerOf(authorization: string | null): string | null {
  if (authorization === null) return null
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (!match?.[1])
    throw new InvalidToken('The Authorization header must be "Bearer <registration token>"', 'token sent')
  return match[1]
}

function unusableToken(): InvalidToken {
  return new InvalidToken('The registration token is invalid, expired or already used', 'token sent')
}

/**
 * Whether this caller may register at all: a usable registration token, or open registration. Checked before the
 * body is read, and again by registerClient, which consumes the token.
 */
export async function requireRegistrationAccess(
  deps: OAuthDeps,
  request: Pick<RegistrationRequest, 'authorization' | 'openRegistration'>,
): Promise<void> {
  const token = bearerOf(request.authorization)
  if (token !== null) {
    if (!(await deps.oauthClients.registrationTokenUsable(hashSecret(token), deps.clock.now()))) {
      throw unusableToken()
    }
  } else if (!request.openRegistration) {
    throw new InvalidToken(
      'Open registration is disabled: register with a registration token from a member',
      'no token',
    )
  }
}

/** Registers a client and returns the RFC 7591 §3.2.1 response body (the secret appears here only). */
export async function registerClient(deps: OAuthDeps, request: RegistrationRequest): Promise<OAuthModel.registered> {
  await requireRegistrationAccess(deps, request)
  const now = deps.clock.now()
  const token = bearerOf(request.authorization)
  const metadata = validateClientMetadata(request.body)
  const clients = deps.oauthClients
  const origin = token === null ? 'open_registration' : 'token_registration'
  const { client, secret } = clientToStore({ metadata, origin, organizationId: null, ownerId: null }, now)
  // A token is consumed as the client is stored, and its organization and issuer become the client's.
  const stored =
    token === null ? await clients.create(client) : await clients.registerWithToken(hashSecret(token), client, now)
  if (!stored) throw unusableToken()
  const body = clientInformation(stored)
  if (secret === null) return body
  return { ...body, client_secret: secret, client_secret_expires_at: 0 }
}
