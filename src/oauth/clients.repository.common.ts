// OAuth clients and registration tokens on either database (clients.repository.ts): the mapping between a client's
// row and the contract's Client, and every single-statement read and write. Registering with a token and deleting a
// client are units of work that differ by database (clients.repository.sqlite.ts, clients.repository.pg.ts).
import { and, desc, eq, getTableColumns, gt, isNull, type SQL } from 'drizzle-orm'
import type * as authTables from '../auth/auth.table.pg'
import { isScope } from '../auth/model'
import type { Audits } from '../auth/tokens.repository.common'
import type { AnyDb } from '../db/dialect'
import type { Client, ClientRepository, ManagedClient, NewClient } from './clients.repository'
import type * as oauthTables from './oauth.table.pg'

export type ClientTables = Pick<typeof authTables, 'users'> & typeof oauthTables
type ClientRow = typeof oauthTables.oauthClients.$inferSelect
type ClientValues = typeof oauthTables.oauthClients.$inferInsert

export function toClient(row: ClientRow): Client {
  return {
    id: row.id,
    clientId: row.clientId,
    origin: row.origin,
    organizationId: row.organizationId,
    ownerId: row.ownerId,
    name: row.name,
    redirectUris: row.redirectUris,
    scopes: row.scopes.split(' ').filter(isScope),
    grantTypes: row.grantTypes,
    responseTypes: row.responseTypes,
    authMethod: row.tokenEndpointAuthMethod,
    authMethodDeclared: row.tokenEndpointAuthMethodDeclared,
    secretHash: row.secretHash,
    clientUri: row.clientUri,
    logoUri: row.logoUri,
    tosUri: row.tosUri,
    policyUri: row.policyUri,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
  }
}

export function valuesOf(client: NewClient): ClientValues {
  return {
    clientId: client.clientId,
    origin: client.origin,
    organizationId: client.organizationId,
    ownerId: client.ownerId,
    name: client.name,
    redirectUris: client.redirectUris,
    scopes: client.scopes.join(' '),
    grantTypes: client.grantTypes,
    responseTypes: client.responseTypes,
    tokenEndpointAuthMethod: client.authMethod,
    tokenEndpointAuthMethodDeclared: client.authMethodDeclared,
    secretHash: client.secretHash,
    clientUri: client.clientUri,
    logoUri: client.logoUri,
    tosUri: client.tosUri,
    policyUri: client.policyUri,
    createdAt: client.createdAt,
  }
}

/** Unused and unexpired at `now`: the condition a registration token is consumed under. */
export function usableToken({ oauthRegistrationTokens }: ClientTables, tokenHash: string, now: number) {
  return and(
    eq(oauthRegistrationTokens.tokenHash, tokenHash),
    gt(oauthRegistrationTokens.expiresAt, now),
    isNull(oauthRegistrationTokens.usedAt),
  )
}

/** The client with this client_id, if it belongs to the organization. */
export function clientInOrganization({ oauthClients }: ClientTables, organizationId: number, clientId: string) {
  return and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId))
}

/** Every method but the units of work, which each database runs its own way. */
export function clientRepository(
  db: AnyDb,
  t: ClientTables,
  { audited }: Audits,
): Omit<ClientRepository, 'registerWithToken' | 'deleteInOrganization'> {
  const { oauthClients, oauthRegistrationTokens, users } = t

  async function managedClients(where: SQL | undefined): Promise<ManagedClient[]> {
    const rows = await db
      .select({ client: getTableColumns(oauthClients), sub: users.sub, name: users.name, email: users.email })
      .from(oauthClients)
      .leftJoin(users, eq(users.id, oauthClients.ownerId))
      .where(where)
      .orderBy(desc(oauthClients.createdAt), desc(oauthClients.id))
    return rows.map((row) => ({
      ...toClient(row.client),
      owner: row.sub === null || row.email === null ? null : { sub: row.sub, name: row.name, email: row.email },
    }))
  }

  async function findByClientId(clientId: string): Promise<Client | null> {
    const [row] = await db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId))
    return row ? toClient(row) : null
  }

  return {
    findByClientId,

    async findOrCreate(client) {
      // ON CONFLICT waits for a concurrent insert of the same client_id to commit (on PostgreSQL), so the read that
      // follows (a new snapshot under READ COMMITTED) finds whichever row was stored.
      await db.insert(oauthClients).values(valuesOf(client)).onConflictDoNothing({ target: oauthClients.clientId })
      const found = await findByClientId(client.clientId)
      if (!found) throw new Error(`the client ${client.clientId} could not be stored`)
      return found
    },

    async create(client, audit) {
      const [row] = await audited<ClientRow>(
        (tx) => [tx.insert(oauthClients).values(valuesOf(client)).returning()],
        ([stored]) => (stored ? audit(toClient(stored)) : null),
      )
      if (!row) throw new Error(`the client ${client.clientId} could not be stored`)
      return toClient(row)
    },

    async createRegistrationToken(token, audit) {
      await audited<{ id: number }>(
        (tx) => [tx.insert(oauthRegistrationTokens).values(token).returning({ id: oauthRegistrationTokens.id })],
        ([stored]) => (stored ? audit(stored.id) : null),
      )
    },

    async registrationTokenUsable(tokenHash, now) {
      const [found] = await db
        .select({ id: oauthRegistrationTokens.id })
        .from(oauthRegistrationTokens)
        .where(usableToken(t, tokenHash, now))
      return found !== undefined
    },

    listInOrganization(organizationId) {
      return managedClients(eq(oauthClients.organizationId, organizationId))
    },

    listOwned(userId, organizationId) {
      return managedClients(and(eq(oauthClients.ownerId, userId), eq(oauthClients.organizationId, organizationId)))
    },

    async findInOrganization(organizationId, clientId) {
      const [client] = await managedClients(clientInOrganization(t, organizationId, clientId))
      return client ?? null
    },

    async replaceSecret(id, secretHash, audit) {
      await audited(
        (tx) => [
          tx.update(oauthClients).set({ secretHash }).where(eq(oauthClients.id, id)).returning({ id: oauthClients.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },
  }
}
