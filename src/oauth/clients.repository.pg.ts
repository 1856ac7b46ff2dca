// OAuth clients and registration tokens on PostgreSQL (clients.repository.ts): the neutral methods of
// clients.repository.common.ts and the two units of work, which differ here because many connections write at once:
// a registration token is consumed by a conditional update inside the transaction that stores the client, so a
// racing registration waits for the row lock, finds the token used and stores nothing, and a failed insert rolls the
// consumption back; a client is deleted in the lock order the token endpoint takes.
import { eq } from 'drizzle-orm'
import * as authTables from '../auth/auth.table.pg'
import { anyDb, type PgAppend, pgAudited } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import type { ClientRepository } from './clients.repository'
import {
  type ClientTables,
  clientInOrganization,
  clientRepository,
  toClient,
  usableToken,
  valuesOf,
} from './clients.repository.common'
import * as oauthTables from './oauth.table.pg'

const t: ClientTables = { ...authTables, ...oauthTables }
const { oauthAuthorizationCodes, oauthClients, oauthGrants, oauthRegistrationTokens } = oauthTables

export function pgClientRepository(db: PgDb, append: PgAppend): ClientRepository {
  return {
    ...clientRepository(anyDb(db), t, { audited: pgAudited(db, append) }),

    registerWithToken(tokenHash, client, now, audit) {
      return db.transaction(async (tx) => {
        // Consumed together with the insert, so a failed registration does not burn the token. A second registration
        // racing on the token waits on this row lock, then re-checks `used_at` and matches nothing.
        const [issuer] = await tx
          .update(oauthRegistrationTokens)
          .set({ usedAt: now })
          .where(usableToken(t, tokenHash, now))
          .returning({
            id: oauthRegistrationTokens.id,
            userId: oauthRegistrationTokens.userId,
            organizationId: oauthRegistrationTokens.organizationId,
          })
        if (!issuer) return null
        const values = valuesOf({ ...client, organizationId: issuer.organizationId, ownerId: issuer.userId })
        const [row] = await tx.insert(oauthClients).values(values).returning()
        if (!row) throw new Error(`the client ${client.clientId} could not be stored`)
        const stored = toClient(row)
        await append(tx, audit(stored, issuer.id))
        return stored
      })
    },

    async deleteInOrganization(organizationId, clientId, audit) {
      const deleted = await db.transaction(async (tx) => {
        const [client] = await tx
          .select({ id: oauthClients.id })
          .from(oauthClients)
          .where(clientInOrganization(t, organizationId, clientId))
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
        if (removed) await append(tx, audit)
        return removed !== undefined
      })
      return deleted
    },
  }
}
