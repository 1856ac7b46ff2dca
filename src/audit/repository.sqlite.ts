// The audit log on SQLite (repository.ts): the neutral reads, and appending and pruning, which run synchronously
// inside the caller's `db.transaction` (bun:sqlite transactions cannot await). One writer at a time holds the file,
// so the chain's head needs no lock: nothing interleaves between reading its place and moving it.
import type { Db } from '../db/client'
import { anyDb, asTables, type SqliteAppend } from '../db/dialect'
import type { AuditEntry } from '../shared/audit'
import * as tables from './audit.table'
import type { AuditRepository } from './repository'
import {
  type AuditTables,
  auditReads,
  lastOlderThan,
  nextPlace,
  pruneStatements,
  retentionStatement,
  sealAt,
  storeEvent,
} from './repository.common'

const t = asTables<AuditTables>(tables)

interface Sync<T> {
  get(): T | undefined
  all(): T[]
  run(): void
}
const sync = <T>(statement: unknown) => statement as Sync<T>

/** Appends an entry inside a SQLite transaction: what the store hands every repository whose acts are recorded. */
export const sqliteAppend: SqliteAppend = (tx: Db, entry: AuditEntry) => {
  const on = anyDb(tx)
  const event = sealAt(entry, sync<{ seq: number; prevHash: string }>(nextPlace(on, t, entry.organizationId)).get())
  for (const statement of storeEvent(on, t, event)) sync(statement).run()
}

export function sqliteAuditRepository(db: Db): AuditRepository {
  return {
    ...auditReads(anyDb(db), t),

    async append(entry) {
      db.transaction((tx) => sqliteAppend(tx as unknown as Db, entry))
    },

    async setRetention(organizationId, days, entry) {
      db.transaction((tx) => {
        sync(retentionStatement(anyDb(tx as unknown as Db), t, organizationId, days)).run()
        sqliteAppend(tx as unknown as Db, entry)
      })
    },

    async prune(organizationId, before, entry) {
      return db.transaction((tx) => {
        const on = anyDb(tx as unknown as Db)
        const through = sync<{ seq: number; hash: string }>(lastOlderThan(on, t, organizationId, before)).get()
        if (!through) return 0
        const [deletion, anchor] = pruneStatements(on, t, organizationId, through)
        const deleted = sync(deletion).all().length
        sync(anchor).run()
        sqliteAppend(tx as unknown as Db, entry(deleted, through))
        return deleted
      })
    },
  }
}
