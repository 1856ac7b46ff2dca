// Dynamic client registration (RFC 7591), and the single-use registration tokens members hand out so that a
// client registers straight into their organization.
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { generateSecret, hashSecret } from '../shared/security'
import { toIso } from '../shared/time'
import { clientInformation, clientRegistered, clientToStore, validateClientMetadata } from './clients'
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

/** Makes a single-use registration token for the person's organization and records it (never the token itself). */
export async function createRegistrationToken(
  clients: ClientRepository,
  user: { id: number; organizationId: number },
  now: number,
  origin: AuditOrigin,
): Promise<{ token: string; expiresAt: number }> {
  const token = generateSecret(registrationTokenPrefix)
  const expiresAt = now + registrationTokenLifetimeMs
  await clients.createRegistrationToken(
    { tokenHash: hashSecret(token), userId: user.id, organizationId: user.organizationId, createdAt: now, expiresAt },
    (tokenId) =>
      auditEntry(origin, now, {
        organizationId: user.organizationId,
        action: 'oauth.registration_token_created',
        target: target('registration_token', tokenId),
        detail: { issued_to: user.id, expires_at: toIso(expiresAt) },
      }),
  )
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

/**
 * Registers a client and returns the RFC 7591 §3.2.1 response body (the secret appears here only). Recorded in the
 * token's organization, by the token; an open registration in no organization's log, by nobody (`from`'s actor).
 */
export async function registerClient(
  deps: OAuthDeps,
  request: RegistrationRequest,
  from: AuditOrigin,
): Promise<OAuthModel.registered> {
  await requireRegistrationAccess(deps, request)
  const now = deps.clock.now()
  const token = bearerOf(request.authorization)
  const metadata = validateClientMetadata(request.body)
  const clients = deps.oauthClients
  const origin = token === null ? 'open_registration' : 'token_registration'
  const { client, secret } = clientToStore({ metadata, origin, organizationId: null, ownerId: null }, now)
  // A token is consumed as the client is stored, and its organization and issuer become the client's.
  const stored =
    token === null
      ? await clients.create(client, (created) => clientRegistered(from, now, created))
      : await clients.registerWithToken(hashSecret(token), client, now, (created, tokenId) =>
          clientRegistered(
            { ...from, actor: { kind: 'registration_token', id: String(tokenId), userId: created.ownerId } },
            now,
            created,
          ),
        )
  if (!stored) throw unusableToken()
  const body = clientInformation(stored)
  if (secret === null) return body
  return { ...body, client_secret: secret, client_secret_expires_at: 0 }
}
