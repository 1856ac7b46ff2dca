// The audit log on PostgreSQL (repository.ts): the neutral reads, and appending and pruning inside the caller's
// transaction. Many instances write at once: the chain's head row is taken by the first statement of an append (an
// upsert, which holds the row until commit), so two acts of one organization take turns there and the second chains
// onto the first's committed hash: the chain never forks. The head is taken last in each act's transaction, after
// the act's own rows, so it is held only for the few statements that remain.
import { eq } from 'drizzle-orm'
import { anyDb, type PgAppend } from '../db/dialect'
import type { PgDb, PgTx } from '../db/postgres'
import type { AuditEntry } from '../shared/audit'
import * as t from './audit.table.pg'
import type { AuditRepository } from './repository'
import {
  auditReads,
  lastOlderThan,
  nextPlace,
  pruneStatements,
  retentionStatement,
  sealAt,
  storeEvent,
} from './repository.common'

/** Appends an entry inside a PostgreSQL transaction: what the store hands every repository whose acts are recorded. */
export const pgAppend: PgAppend = async (tx: PgTx, entry: AuditEntry) => {
  const on = anyDb(tx as unknown as PgDb)
  const [place] = await nextPlace(on, t, entry.organizationId)
  for (const statement of storeEvent(on, t, sealAt(entry, place))) await statement
}

export function pgAuditRepository(db: PgDb): AuditRepository {
  return {
    ...auditReads(anyDb(db), t),

    async append(entry) {
      await db.transaction((tx) => pgAppend(tx, entry))
    },

    async setRetention(organizationId, days, entry) {
      await db.transaction(async (tx) => {
        await retentionStatement(anyDb(tx as unknown as PgDb), t, organizationId, days)
        await pgAppend(tx, entry)
      })
    },

    async prune(organizationId, before, entry) {
      return db.transaction(async (tx) => {
        const on = anyDb(tx as unknown as PgDb)
        // The head first, as an append takes it: appends wait for the prune, never the other way round.
        const [head] = await tx
          .select({ seq: t.auditChains.lastSeq })
          .from(t.auditChains)
          .where(eq(t.auditChains.organizationId, organizationId))
          .for('update')
        if (!head) return 0
        const [through] = await lastOlderThan(on, t, organizationId, before)
        if (!through) return 0
        const [deletion, anchor] = pruneStatements(on, t, organizationId, through)
        const deleted = (await deletion).length
        await anchor
        await pgAppend(tx, entry(deleted, through))
        return deleted
      })
    },
  }
}
