// OAuth clients and registration tokens on SQLite (clients.repository.ts): the neutral methods of
// clients.repository.common.ts and the two units of work, which differ here because bun:sqlite transactions cannot
// await and one writer at a time needs no lock order: registering runs synchronously in one `db.transaction`, and a
// client is deleted by one statement whose cascade takes its codes, grants and tokens, after which resolved tokens
// are forgotten.
import * as authTables from '../auth/auth.table'
import { forgetResolvedTokens } from '../auth/token-cache'
import type { Db } from '../db/client'
import { anyDb, asTables, type SqliteAppend, sqliteAudited } from '../db/dialect'
import type { ClientRepository } from './clients.repository'
import {
  type ClientTables,
  clientInOrganization,
  clientRepository,
  toClient,
  usableToken,
  valuesOf,
} from './clients.repository.common'
import * as oauthTables from './oauth.table'

const t = asTables<ClientTables>({ ...authTables, ...oauthTables })
const { oauthClients, oauthRegistrationTokens } = oauthTables

export function sqliteClientRepository(db: Db, append: SqliteAppend): ClientRepository {
  return {
    ...clientRepository(anyDb(db), t, { audited: sqliteAudited(db, append) }),

    async registerWithToken(tokenHash, client, now, audit) {
      return db.transaction((tx) => {
        // Consumed together with the insert, so a failed registration does not burn the token.
        const issuer = tx
          .update(oauthRegistrationTokens)
          .set({ usedAt: now })
          .where(usableToken(t, tokenHash, now))
          .returning({
            id: oauthRegistrationTokens.id,
            userId: oauthRegistrationTokens.userId,
            organizationId: oauthRegistrationTokens.organizationId,
          })
          .get()
        if (!issuer) return null
        const values = valuesOf({ ...client, organizationId: issuer.organizationId, ownerId: issuer.userId })
        const stored = toClient(tx.insert(oauthClients).values(values).returning().get())
        append(tx as unknown as Db, audit(stored, issuer.id))
        return stored
      })
    },

    async deleteInOrganization(organizationId, clientId, audit) {
      const deleted = db.transaction((tx) => {
        const row = tx
          .delete(oauthClients)
          .where(clientInOrganization(t, organizationId, clientId))
          .returning({ id: oauthClients.id })
          .get()
        if (row) append(tx as unknown as Db, audit)
        return row
      })
      if (!deleted) return false
      forgetResolvedTokens(db)
      return true
    },
  }
}
