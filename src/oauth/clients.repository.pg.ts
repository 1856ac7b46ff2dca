// OAuth clients and registration tokens on PostgreSQL (the ClientRepository contract of clients.repository.ts).
// Many connections write at once here: a registration token is consumed by a conditional update inside the
// transaction that stores the client, so a racing registration waits for the row lock, finds the token used and
// stores nothing, and a failed insert rolls the consumption back.
import { and, desc, eq, getTableColumns, gt, isNull, type SQL } from 'drizzle-orm'
import { users } from '../auth/auth.table.pg'
import type { PgDb } from '../db/postgres'
import type { Client, ClientRepository, ManagedClient } from './clients.repository'
import { toClient, valuesOf } from './clients.rows'
import { oauthAuthorizationCodes, oauthClients, oauthGrants, oauthRegistrationTokens } from './oauth.table.pg'

/** Unused and unexpired at `now`: the condition a registration token is consumed under. */
function usableToken(tokenHash: string, now: number): SQL | undefined {
  return and(
    eq(oauthRegistrationTokens.tokenHash, tokenHash),
    gt(oauthRegistrationTokens.expiresAt, now),
    isNull(oauthRegistrationTokens.usedAt),
  )
}

export function pgClientRepository(db: PgDb): ClientRepository {
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
      // ON CONFLICT waits for a concurrent insert of the same client_id to commit, so the read that follows (a new
      // snapshot under READ COMMITTED) finds whichever row was stored.
      await db.insert(oauthClients).values(valuesOf(client)).onConflictDoNothing({ target: oauthClients.clientId })
      const found = await findByClientId(client.clientId)
      if (!found) throw new Error(`the client ${client.clientId} could not be stored`)
      return found
    },

    async create(client) {
      const [row] = await db.insert(oauthClients).values(valuesOf(client)).returning()
      if (!row) throw new Error(`the client ${client.clientId} could not be stored`)
      return toClient(row)
    },

    async createRegistrationToken(token) {
      await db.insert(oauthRegistrationTokens).values(token)
    },

    async registrationTokenUsable(tokenHash, now) {
      const [found] = await db
        .select({ id: oauthRegistrationTokens.id })
        .from(oauthRegistrationTokens)
        .where(usableToken(tokenHash, now))
      return found !== undefined
    },

    registerWithToken(tokenHash, client, now) {
      return db.transaction(async (tx) => {
        // Consumed together with the insert, so a failed registration does not burn the token. A second registration
        // racing on the token waits on this row lock, then re-checks `used_at` and matches nothing.
        const [issuer] = await tx
          .update(oauthRegistrationTokens)
          .set({ usedAt: now })
          .where(usableToken(tokenHash, now))
          .returning({ userId: oauthRegistrationTokens.userId, organizationId: oauthRegistrationTokens.organizationId })
        if (!issuer) return null
        const values = valuesOf({ ...client, organizationId: issuer.organizationId, ownerId: issuer.userId })
        const [row] = await tx.insert(oauthClients).values(values).returning()
        if (!row) throw new Error(`the client ${client.clientId} could not be stored`)
        return toClient(row)
      })
    },

    listInOrganization(organizationId) {
      return managedClients(eq(oauthClients.organizationId, organizationId))
    },

    listOwned(userId, organizationId) {
      return managedClients(and(eq(oauthClients.ownerId, userId), eq(oauthClients.organizationId, organizationId)))
    },

    async findInOrganization(organizationId, clientId) {
      const [client] = await managedClients(
        and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId)),
      )
      return client ?? null
    },

    async replaceSecret(id, secretHash) {
      await db.update(oauthClients).set({ secretHash }).where(eq(oauthClients.id, id))
    },

    async deleteInOrganization(organizationId, clientId) {
      const deleted = await db.transaction(async (tx) => {
        const [client] = await tx
          .select({ id: oauthClients.id })
          .from(oauthClients)
          .where(and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId)))
        if (!client) return false
        // Grants (their tokens cascade) and codes go first, the client's row last: the order in which a refresh
        // rotation (grant, token, client) and a code exchange (code, client) take their locks. Deleting the client
        // alone would lock its row first, then cascade into a grant or code that a rotation or exchange holds while
        // it waits for that row: a deadlock.
        await tx.delete(oauthGrants).where(eq(oauthGrants.clientId, client.id))
        await tx.delete(oauthAuthorizationCodes).where(eq(oauthAuthorizationCodes.clientId, client.id))
        const [removed] = await tx
          .delete(oauthClients)
          .where(eq(oauthClients.id, client.id))
          .returning({ id: oauthClients.id })
        return removed !== undefined
      })
      return deleted
    },
  }
}
