// The audit log on either database (repository.ts): every read, and the statements an append is made of. Appending
// and pruning read and write inside one transaction, so they differ by database (repository.sqlite.ts,
// repository.pg.ts); both build their statements here.
import { and, asc, desc, eq, gt, gte, inArray, isNull, lt, type SQL, sql } from 'drizzle-orm'
import type { AnyDb } from '../db/dialect'
import type { AuditEntry } from '../shared/audit'
import { defaultAuditRetentionDays, genesisHash } from './audit.table'
import type * as tables from './audit.table.pg'
import { type ChainHead, type StoredEvent, sealEvent } from './chain'
import type { AuditRepository, EventFilter } from './repository'

export type AuditTables = typeof tables

/**
 * Takes the chain's next place: inserts its head at place 1 for a first event, or moves it one place on, answering
 * the new place and the hash of the event before it. The upsert holds the head's row until the transaction ends, so
 * on PostgreSQL a second writer of the same organization waits here and then reads what the first one committed.
 */
export function nextPlace(tx: AnyDb, { auditChains }: AuditTables, organizationId: number) {
  return tx
    .insert(auditChains)
    .values({ organizationId, lastSeq: 1, lastHash: genesisHash })
    .onConflictDoUpdate({ target: auditChains.organizationId, set: { lastSeq: sql`${auditChains.lastSeq} + 1` } })
    .returning({ seq: auditChains.lastSeq, prevHash: auditChains.lastHash })
}

/** The two statements that store a sealed event and make it the chain's last. */
export function storeEvent(tx: AnyDb, { auditEvents, auditChains }: AuditTables, event: StoredEvent) {
  return [
    tx.insert(auditEvents).values(event),
    tx.update(auditChains).set({ lastHash: event.hash }).where(eq(auditChains.organizationId, event.organizationId)),
  ] as const
}

/** The entry sealed at the place `nextPlace` answered. */
export function sealAt(entry: AuditEntry, place: { seq: number; prevHash: string } | undefined): StoredEvent {
  if (!place) throw new Error('the audit chain gave no place')
  return sealEvent(entry, place.seq, place.prevHash)
}

/** Sets a chain's retention period, creating its head (before any event: place 0) when there is none. */
export function retentionStatement(tx: AnyDb, { auditChains }: AuditTables, organizationId: number, days: number) {
  return tx
    .insert(auditChains)
    .values({ organizationId, lastSeq: 0, lastHash: genesisHash, retentionDays: days })
    .onConflictDoUpdate({ target: auditChains.organizationId, set: { retentionDays: days } })
}

function filtered({ auditEvents: e }: AuditTables, organizationId: number, filter: EventFilter): SQL[] {
  const where: SQL[] = [eq(e.organizationId, organizationId)]
  if (filter.actorUserId !== undefined) where.push(eq(e.actorUserId, filter.actorUserId))
  if (filter.actorKind !== undefined) where.push(eq(e.actorKind, filter.actorKind))
  if (filter.actions !== undefined) where.push(inArray(e.action, filter.actions))
  if (filter.target) {
    where.push(eq(e.targetKind, filter.target.kind))
    if (filter.target.id !== undefined) where.push(eq(e.targetId, filter.target.id))
  }
  if (filter.from !== undefined) where.push(gte(e.at, filter.from))
  if (filter.to !== undefined) where.push(lt(e.at, filter.to))
  return where
}

/** Every read, and appending on its own through `append` (the dialect's, in a transaction of its own). */
export function auditReads(db: AnyDb, t: AuditTables): Omit<AuditRepository, 'append' | 'setRetention' | 'prune'> {
  const { auditEvents: e, auditChains: c } = t
  const heads = () =>
    db
      .select({
        organizationId: c.organizationId,
        lastSeq: c.lastSeq,
        lastHash: c.lastHash,
        prunedSeq: c.prunedSeq,
        prunedHash: c.prunedHash,
      })
      .from(c)
  return {
    async list(organizationId, filter, { limit, beforeSeq }) {
      const where = filtered(t, organizationId, filter)
      if (beforeSeq !== undefined) where.push(lt(e.seq, beforeSeq))
      return db
        .select()
        .from(e)
        .where(and(...where))
        .orderBy(desc(e.seq))
        .limit(limit)
    },

    async seqOf(organizationId, eventId) {
      const [row] = await db
        .select({ seq: e.seq })
        .from(e)
        .where(and(eq(e.id, eventId), eq(e.organizationId, organizationId)))
      return row?.seq ?? null
    },

    async head(organizationId): Promise<ChainHead | null> {
      const [row] = await heads().where(eq(c.organizationId, organizationId))
      return row ?? null
    },

    async heads() {
      return heads().orderBy(asc(c.organizationId))
    },

    async readChain(organizationId, afterSeq, limit) {
      return db
        .select()
        .from(e)
        .where(and(eq(e.organizationId, organizationId), gt(e.seq, afterSeq)))
        .orderBy(asc(e.seq))
        .limit(limit)
    },

    async headlessChains() {
      const rows = await db
        .selectDistinct({ organizationId: e.organizationId })
        .from(e)
        .leftJoin(c, eq(c.organizationId, e.organizationId))
        .where(isNull(c.organizationId))
      return rows.map((row) => row.organizationId)
    },

    async retentionOf(organizationId) {
      const [row] = await db.select({ days: c.retentionDays }).from(c).where(eq(c.organizationId, organizationId))
      return row?.days ?? defaultAuditRetentionDays
    },

    async retentionPeriods() {
      return db.select({ organizationId: c.organizationId, days: c.retentionDays }).from(c)
    },
  }
}

/** The last event older than `before` in the chain: retention deletes the chain through it. */
export function lastOlderThan(tx: AnyDb, { auditEvents: e }: AuditTables, organizationId: number, before: number) {
  return tx
    .select({ seq: e.seq, hash: e.hash })
    .from(e)
    .where(and(eq(e.organizationId, organizationId), lt(e.at, before)))
    .orderBy(desc(e.seq))
    .limit(1)
}

/** The statements that delete the chain through `through` and make it the kept part's anchor. */
export function pruneStatements(
  tx: AnyDb,
  { auditEvents: e, auditChains: c }: AuditTables,
  organizationId: number,
  through: { seq: number; hash: string },
) {
  return [
    tx
      .delete(e)
      .where(and(eq(e.organizationId, organizationId), lt(e.seq, through.seq + 1)))
      .returning({ id: e.id }),
    tx.update(c).set({ prunedSeq: through.seq, prunedHash: through.hash }).where(eq(c.organizationId, organizationId)),
  ] as const
}
