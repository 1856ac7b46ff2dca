// Client authentication at the token and revocation endpoints (RFC 6749 §2.3): which client is calling, proven
// by the method it registered.
import type { AuditOrigin } from '../shared/audit'
import { nulMessage } from '../shared/nul'
import { hashSecret, secretsEqual } from '../shared/security'
import { acceptedAuthMethods, findClient, isPublic } from './clients'
import type { Client, ClientAuthMethod } from './clients.repository'
import type { OAuthDeps } from './deps'
import { type AttemptedClientAuth, InvalidClient, InvalidRequest } from './errors'

export interface ClientRequest {
  form: URLSearchParams
  /** The Authorization header, if any. */
  authorization: string | null
  /** The request's address and user agent for the audit log; its actor becomes the client once authenticated. */
  origin: AuditOrigin
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replaceAll('+', ' '))
}

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id):urlencode(secret))`. */
function parseBasic(header: string): { id: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  if (!match?.[1]) return null
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return null
  try {
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) }
  } catch {
    return null
  }
}

/** What a client that used the wrong method is told to do instead. */
const howToAuthenticate: Record<ClientAuthMethod | 'either', string> = {
  none: 'this is a public client: send client_id alone, without a secret',
  client_secret_basic:
    'this client registered client_secret_basic: send its client_id and secret in an Authorization: Basic header',
  client_secret_post:
    'this client registered client_secret_post: send client_id and client_secret as form fields, not in a header',
  either: 'this is a confidential client: send its client_secret, in a Basic header or the form',
}

/**
 * Identifies and authenticates the client (RFC 6749 §2.3.1) with the method it registered. A confidential client
 * that left the method to the default may use either: the specification's request shapes send `client_id` and
 * `client_secret` as fields, while RFC 7591's default is Basic. A public client sends its `client_id` alone.
 */
export async function authenticateClient(deps: OAuthDeps, { form, authorization }: ClientRequest): Promise<Client> {
  const usesBasic = authorization !== null && /^basic\s/i.test(authorization)
  const basic = usesBasic ? parseBasic(authorization) : null
  const bodyId = form.get('client_id') || undefined
  const bodySecret = form.get('client_secret') || undefined
  const attempted: AttemptedClientAuth = usesBasic ? 'client_secret_basic' : bodySecret ? 'client_secret_post' : 'none'
  if (usesBasic && !basic) throw new InvalidClient('The Basic authorization header is malformed', attempted)
  // The header is the one input no request-level check reads (src/shared/nul.ts): its ID reaches a query.
  if (basic && `${basic.id}${basic.secret}`.includes('\u0000')) throw new InvalidRequest(nulMessage)
  if (basic && bodySecret) {
    throw new InvalidRequest('Use one client authentication method: Basic header or client_secret, not both')
  }
  if (basic && bodyId && bodyId !== basic.id) {
    throw new InvalidClient('client_id in the body differs from the one in the Basic header', attempted)
  }
  const clientId = basic?.id ?? bodyId
  if (!clientId) throw new InvalidClient('Client authentication is required: send client_id', attempted)
  const client = await findClient(deps.oauthClients, clientId, deps.publicUrl, deps.clock.now())
  if (!client) throw new InvalidClient('Client authentication failed', attempted)
  const accepted = acceptedAuthMethods(client)
  if (!accepted.includes(attempted)) {
    const [required] = accepted.length === 1 ? accepted : []
    throw new InvalidClient(
      `Client authentication failed: ${howToAuthenticate[required ?? 'either']}`,
      attempted,
      required,
    )
  }
  if (isPublic(client)) return client
  const secret = basic?.secret ?? bodySecret ?? ''
  if (!client.secretHash || !secretsEqual(hashSecret(secret), client.secretHash)) {
    throw new InvalidClient('Client authentication failed', attempted)
  }
  return client
}
