// The service behind the settings screens: a person's connected apps, the clients members create, registration
// tokens, and an organization admin's view of its OAuth clients. Plain arguments in, JSON-ready objects out.
import type { SessionUser } from '../auth/sessions'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { AppError, conflict, notFound } from '../shared/errors'
import { generateSecret, hashSecret } from '../shared/security'
import { toIso } from '../shared/time'
import {
  clientInformation,
  clientSecretPrefix,
  createClient,
  isPublic,
  isVerified,
  validateClientMetadata,
} from './clients'
import type { ClientRepository, ManagedClient } from './clients.repository'
import { OAuthError } from './errors'
import type { GrantRepository } from './grants.repository'
import type { OAuthModel } from './model'

/** The apps holding live tokens for this person, one entry per app however many times it was approved. */
export async function listConnectedApps(
  grants: GrantRepository,
  userId: number,
  now: number,
): Promise<OAuthModel.connectedApp[]> {
  const apps = new Map<
    string,
    { name: string; verified: boolean; scopes: Set<string>; since: number; used: number | null }
  >()
  for (const grant of await grants.listLiveForUser(userId, now)) {
    const app = apps.get(grant.clientId) ?? {
      name: grant.clientName,
      verified: isVerified({ origin: grant.clientOrigin }),
      scopes: new Set<string>(),
      since: grant.createdAt,
      used: null,
    }
    for (const scope of grant.scopes.split(' ')) app.scopes.add(scope)
    if (grant.lastUsedAt !== null && (app.used === null || grant.lastUsedAt > app.used)) app.used = grant.lastUsedAt
    apps.set(grant.clientId, app)
  }
  return [...apps].map(([clientId, app]) => ({
    client_id: clientId,
    client_name: app.name,
    verified: app.verified,
    scopes: [...app.scopes].sort(),
    connected_at: toIso(app.since),
    last_used_at: app.used === null ? null : toIso(app.used),
  }))
}

/** Revokes every grant this person gave the app, and records it; other people's grants to the same app are untouched. */
export async function revokeConnectedApp(
  grants: GrantRepository,
  user: Pick<SessionUser, 'id' | 'organizationId'>,
  clientId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const revoked = await grants.revokeForUserAndClient(user.id, clientId, now, (count) =>
    auditEntry(origin, now, {
      organizationId: user.organizationId,
      action: 'oauth.app_revoked',
      target: target('oauth_client', clientId),
      detail: { grants: count },
    }),
  )
  if (revoked === 0) throw notFound('Connected app')
}

/** Settings turn the registration rules' OAuth errors into the API's `{ error, message }` form. */
function asAppError<T>(run: () => T): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof OAuthError) throw new AppError(400, error.error, error.description)
    throw error
  }
}

/** A member creates a confidential client for their organization; the secret is in this answer only. */
export async function createConfidentialClient(
  clients: ClientRepository,
  user: SessionUser,
  body: unknown,
  now: number,
  origin: AuditOrigin,
): Promise<OAuthModel.registered> {
  const metadata = asAppError(() => validateClientMetadata(body))
  if (metadata.authMethod === 'none') {
    throw new AppError(
      400,
      'invalid_client_metadata',
      'Public clients cannot be created here; they come only from dynamic registration (POST /oauth/register)',
    )
  }
  const created = await createClient(
    clients,
    { metadata, origin: 'settings', organizationId: user.organizationId, ownerId: user.id },
    now,
    origin,
  )
  return { ...clientInformation(created.client), client_secret: created.secret ?? '', client_secret_expires_at: 0 }
}

/** A client of this organization; clients of other organizations (and unclaimed ones) are simply not found. */
async function organizationClient(
  clients: ClientRepository,
  organizationId: number,
  clientId: string,
): Promise<ManagedClient> {
  const client = await clients.findInOrganization(organizationId, clientId)
  if (!client) throw notFound('OAuth client')
  return client
}

function summaryOf(client: ManagedClient): OAuthModel.clientSummary {
  const { owner } = client
  return {
    client_id: client.clientId,
    client_name: client.name,
    owner: owner ? { id: owner.sub, name: owner.name, email: owner.email } : null,
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: client.authMethod,
    verified: isVerified(client),
    registered_via: client.origin,
    created_at: toIso(client.createdAt),
    last_used_at: client.lastUsedAt === null ? null : toIso(client.lastUsedAt),
  }
}

export async function listOrganizationClients(
  clients: ClientRepository,
  organizationId: number,
): Promise<OAuthModel.clientSummary[]> {
  return (await clients.listInOrganization(organizationId)).map(summaryOf)
}

/** The clients a member created (or issued the registration token for) in their current organization. */
export async function listOwnClients(
  clients: ClientRepository,
  user: Pick<SessionUser, 'id' | 'organizationId'>,
): Promise<OAuthModel.clientSummary[]> {
  return (await clients.listOwned(user.id, user.organizationId)).map(summaryOf)
}

export async function getOrganizationClient(
  clients: ClientRepository,
  organizationId: number,
  clientId: string,
): Promise<OAuthModel.clientDetail> {
  const client = await organizationClient(clients, organizationId, clientId)
  return {
    ...summaryOf(client),
    scope: client.scopes.join(' '),
    grant_types: client.grantTypes,
    response_types: client.responseTypes,
    client_uri: client.clientUri,
    logo_uri: client.logoUri,
    tos_uri: client.tosUri,
    policy_uri: client.policyUri,
  }
}

/**
 * A new secret for a confidential client, recorded (never the secret); the old one stops working at once. Tokens
 * already issued stay valid.
 */
export async function rotateClientSecret(
  clients: ClientRepository,
  organizationId: number,
  clientId: string,
  now: number,
  origin: AuditOrigin,
): Promise<OAuthModel.rotatedSecret> {
  const client = await organizationClient(clients, organizationId, clientId)
  if (isPublic(client)) {
    throw conflict('Public clients have no secret to rotate')
  }
  const secret = generateSecret(clientSecretPrefix)
  await clients.replaceSecret(
    client.id,
    hashSecret(secret),
    auditEntry(origin, now, {
      organizationId,
      action: 'oauth.client_secret_rotated',
      target: target('oauth_client', client.clientId),
      detail: { client_name: client.name },
    }),
  )
  return { client_id: client.clientId, client_secret: secret }
}

/** Deleting a client deletes its codes, grants and tokens with it, so all of them stop at once; it is recorded. */
export async function deleteOrganizationClient(
  clients: ClientRepository,
  organizationId: number,
  clientId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const client = await organizationClient(clients, organizationId, clientId)
  const deleted = await clients.deleteInOrganization(
    organizationId,
    clientId,
    auditEntry(origin, now, {
      organizationId,
      action: 'oauth.client_deleted',
      target: target('oauth_client', clientId),
      detail: { client_name: client.name },
    }),
  )
  if (!deleted) throw notFound('OAuth client')
}
