// OAuth clients and registration tokens on SQLite (the ClientRepository contract of clients.repository.ts).
import { and, desc, eq, getTableColumns, gt, isNull, type SQL } from 'drizzle-orm'
import { users } from '../auth/auth.table'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import type { ClientRepository, ManagedClient } from './clients.repository'
import { toClient, valuesOf } from './clients.rows'
import { oauthClients, oauthRegistrationTokens } from './oauth.table'

export function sqliteClientRepository(db: Db): ClientRepository {
  function managedClients(where: SQL | undefined): ManagedClient[] {
    return db
      .select({ client: getTableColumns(oauthClients), sub: users.sub, name: users.name, email: users.email })
      .from(oauthClients)
      .leftJoin(users, eq(users.id, oauthClients.ownerId))
      .where(where)
      .orderBy(desc(oauthClients.createdAt), desc(oauthClients.id))
      .all()
      .map((row) => ({
        ...toClient(row.client),
        owner: row.sub === null || row.email === null ? null : { sub: row.sub, name: row.name, email: row.email },
      }))
  }

  return {
    async findByClientId(clientId) {
      const row = db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId)).get()
      return row ? toClient(row) : null
    },
    async findOrCreate(client) {
      db.insert(oauthClients).values(valuesOf(client)).onConflictDoNothing().run()
      const row = db.select().from(oauthClients).where(eq(oauthClients.clientId, client.clientId)).get()
      if (!row) throw new Error(`the client ${client.clientId} could not be stored`)
      return toClient(row)
    },
    async create(client) {
      return toClient(db.insert(oauthClients).values(valuesOf(client)).returning().get())
    },
    async createRegistrationToken(token) {
      db.insert(oauthRegistrationTokens).values(token).run()
    },
    async registrationTokenUsable(tokenHash, now) {
      const found = db
        .select({ id: oauthRegistrationTokens.id })
        .from(oauthRegistrationTokens)
        .where(
          and(
            eq(oauthRegistrationTokens.tokenHash, tokenHash),
            gt(oauthRegistrationTokens.expiresAt, now),
            isNull(oauthRegistrationTokens.usedAt),
          ),
        )
        .get()
      return found !== undefined
    },
    async registerWithToken(tokenHash, client, now) {
      return db.transaction((tx) => {
        // Consumed together with the insert, so a failed registration does not burn the token.
        const issuer = tx
          .update(oauthRegistrationTokens)
          .set({ usedAt: now })
          .where(
            and(
              eq(oauthRegistrationTokens.tokenHash, tokenHash),
              gt(oauthRegistrationTokens.expiresAt, now),
              isNull(oauthRegistrationTokens.usedAt),
            ),
          )
          .returning({ userId: oauthRegistrationTokens.userId, organizationId: oauthRegistrationTokens.organizationId })
          .get()
        if (!issuer) return null
        const values = valuesOf({ ...client, organizationId: issuer.organizationId, ownerId: issuer.userId })
        return toClient(tx.insert(oauthClients).values(values).returning().get())
      })
    },
    async listInOrganization(organizationId) {
      return managedClients(eq(oauthClients.organizationId, organizationId))
    },
    async listOwned(userId, organizationId) {
      return managedClients(and(eq(oauthClients.ownerId, userId), eq(oauthClients.organizationId, organizationId)))
    },
    async findInOrganization(organizationId, clientId) {
      const [client] = managedClients(
        and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId)),
      )
      return client ?? null
    },
    async replaceSecret(id, secretHash) {
      db.update(oauthClients).set({ secretHash }).where(eq(oauthClients.id, id)).run()
    },
    async deleteInOrganization(organizationId, clientId) {
      const deleted = db
        .delete(oauthClients)
        .where(and(eq(oauthClients.clientId, clientId), eq(oauthClients.organizationId, organizationId)))
        .returning({ id: oauthClients.id })
        .get()
      if (!deleted) return false
      forgetResolvedTokens(db)
      return true
    },
  }
}
