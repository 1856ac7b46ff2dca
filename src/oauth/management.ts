// The service behind the settings screens: a person's connected apps, the clients members create, registration
// tokens, and an organization admin's view of its OAuth clients. Plain arguments in, JSON-ready objects out.
import { and, desc, eq, gt, isNull } from 'drizzle-orm'
import { users } from '../auth/auth.table'
import { isOrganizationAdmin } from '../auth/members'
import type { SessionUser } from '../auth/sessions'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { AppError, conflict, forbidden, notFound } from '../shared/errors'
import { generateSecret, hashSecret } from '../shared/security'
import { toIso } from '../shared/time'
import {
  type Client,
  clientInformation,
  clientSecretPrefix,
  createClient,
  isPublic,
  isVerified,
  toClient,
  validateClientMetadata,
} from './clients'
import { OAuthError } from './errors'
import type { OAuthModel } from './model'
import { oauthClients, oauthGrants } from './oauth.table'

/** Organization admins manage clients: owners and admins. */
export function requireOrganizationAdmin(user: SessionUser): void {
  if (!isOrganizationAdmin(user.role)) throw forbidden('Only organization owners and admins can manage OAuth clients')
}

/** The apps holding live tokens for this person, one entry per app however many times it was approved. */
export function listConnectedApps(db: Db, userId: number, now: number): OAuthModel.connectedApp[] {
  const rows = db
    .select({
      clientId: oauthClients.clientId,
      name: oauthClients.name,
      origin: oauthClients.origin,
      scopes: oauthGrants.scopes,
      createdAt: oauthGrants.createdAt,
      lastUsedAt: oauthGrants.lastUsedAt,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt), gt(oauthGrants.expiresAt, now)))
    .orderBy(oauthGrants.createdAt)
    .all()
  const apps = new Map<
    string,
    { name: string; verified: boolean; scopes: Set<string>; since: number; used: number | null }
  >()
  for (const row of rows) {
    const app = apps.get(row.clientId) ?? {
      name: row.name,
      verified: isVerified(row),
      scopes: new Set<string>(),
      since: row.createdAt,
      used: null,
    }
    for (const scope of row.scopes.split(' ')) app.scopes.add(scope)
    if (row.lastUsedAt !== null && (app.used === null || row.lastUsedAt > app.used)) app.used = row.lastUsedAt
    apps.set(row.clientId, app)
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

/** Revokes every grant this person gave the app; other people's grants to the same app are untouched. */
export function revokeConnectedApp(db: Db, userId: number, clientId: string, now: number): void {
  const client = db.select({ id: oauthClients.id }).from(oauthClients).where(eq(oauthClients.clientId, clientId)).get()
  const revoked = client
    ? db
        .update(oauthGrants)
        .set({ revokedAt: now })
        .where(and(eq(oauthGrants.clientId, client.id), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
        .returning({ id: oauthGrants.id })
        .all()
    : []
  if (revoked.length === 0) throw notFound('Connected app')
  forgetResolvedTokens(db)
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
export function createConfidentialClient(db: Db, user: SessionUser, body: unknown, now: number): OAuthModel.registered {
  const metadata = asAppError(() => validateClientMetadata(body))
  if (metadata.authMethod === 'none') {
    throw new AppError(
      400,
      'invalid_client_metadata',
      'Public clients cannot be created here; they come only from dynamic registration (POST /oauth/register)',
    )
  }
  const created = createClient(
    db,
    { metadata, origin: 'settings', organizationId: user.organizationId, ownerId: user.id },
    now,
  )
  return { ...clientInformation(created.client), client_secret: created.secret ?? '', client_secret_expires_at: 0 }
}

/** A client of this organization; clients of other organizations (and unclaimed ones) are simply not found. */
function organizationClient(db: Db, organizationId: number, clientId: string): Client {
  const row = db
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId)))
    .get()
  if (!row) throw notFound('OAuth client')
  return toClient(row)
}

function ownerOf(db: Db, client: Client): OAuthModel.clientSummary['owner'] {
  if (client.ownerId === null) return null
  const owner = db
    .select({ sub: users.sub, name: users.name, email: users.email })
    .from(users)
    .where(eq(users.id, client.ownerId))
    .get()
  return owner ? { id: owner.sub, name: owner.name, email: owner.email } : null
}

function summaryOf(db: Db, client: Client): OAuthModel.clientSummary {
  return {
    client_id: client.clientId,
    client_name: client.name,
    owner: ownerOf(db, client),
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: client.authMethod,
    verified: isVerified(client),
    registered_via: client.origin,
    created_at: toIso(client.createdAt),
    last_used_at: client.lastUsedAt === null ? null : toIso(client.lastUsedAt),
  }
}

export function listOrganizationClients(db: Db, organizationId: number): OAuthModel.clientSummary[] {
  return db
    .select()
    .from(oauthClients)
    .where(eq(oauthClients.organizationId, organizationId))
    .orderBy(desc(oauthClients.createdAt), desc(oauthClients.id))
    .all()
    .map((row) => summaryOf(db, toClient(row)))
}

/** The clients a member created (or issued the registration token for) in their current organization. */
export function listOwnClients(db: Db, user: Pick<SessionUser, 'id' | 'organizationId'>): OAuthModel.clientSummary[] {
  return db
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.ownerId, user.id), eq(oauthClients.organizationId, user.organizationId)))
    .orderBy(desc(oauthClients.createdAt), desc(oauthClients.id))
    .all()
    .map((row) => summaryOf(db, toClient(row)))
}

export function getOrganizationClient(db: Db, organizationId: number, clientId: string): OAuthModel.clientDetail {
  const client = organizationClient(db, organizationId, clientId)
  return {
    ...summaryOf(db, client),
    scope: client.scopes.join(' '),
    grant_types: client.grantTypes,
    response_types: client.responseTypes,
    client_uri: client.clientUri,
    logo_uri: client.logoUri,
    tos_uri: client.tosUri,
    policy_uri: client.policyUri,
  }
}

/** A new secret for a confidential client; the old one stops working at once. Tokens already issued stay valid. */
export function rotateClientSecret(db: Db, organizationId: number, clientId: string): OAuthModel.rotatedSecret {
  const client = organizationClient(db, organizationId, clientId)
  if (isPublic(client)) {
    throw conflict('Public clients have no secret to rotate')
  }
  const secret = generateSecret(clientSecretPrefix)
  db.update(oauthClients)
    .set({ secretHash: hashSecret(secret) })
    .where(eq(oauthClients.id, client.id))
    .run()
  return { client_id: client.clientId, client_secret: secret }
}

/** Deleting a client deletes its codes, grants and tokens with it (foreign keys cascade), so all stop at once. */
export function deleteOrganizationClient(db: Db, organizationId: number, clientId: string): void {
  const client = organizationClient(db, organizationId, clientId)
  db.delete(oauthClients).where(eq(oauthClients.id, client.id)).run()
  forgetResolvedTokens(db)
}
