// The audit log: append-only events, one hash chain per organization (docs/audit.md). No foreign keys on purpose:
// an event outlives whatever it names (a deleted thread, a removed member's sessions), and nothing may cascade it
// away. Keep in step with audit.table.pg.ts.
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** The hash a chain's first event names as its predecessor. */
export const genesisHash = '0'.repeat(64)

/** The audit events' retention period unless an organization chose another (docs/audit.md, Retention). */
export const defaultAuditRetentionDays = 400

export const auditEvents = sqliteTable(
  'audit_events',
  {
    /** UUIDv7, the API's ID and its paging cursor. */
    id: text().primaryKey(),
    /** The chain the event belongs to: its organization, or 0 for none (shared/audit.ts, noOrganization). */
    organizationId: integer().notNull(),
    /** Its place in the chain, from 1 without gaps: the order of the log (newest first is seq descending). */
    seq: integer().notNull(),
    at: integer().notNull(),
    action: text().notNull(),
    outcome: text().notNull(),
    actorKind: text().notNull(),
    actorId: text(),
    actorUserId: integer(),
    address: text(),
    userAgent: text(),
    targetKind: text(),
    targetId: text(),
    /** The detail object as canonical JSON (keys sorted), exactly the text the hash covers. */
    detail: text().notNull(),
    /** The hash of the event before it in the chain (genesisHash for the first). */
    prevHash: text().notNull(),
    /** SHA-256 (hex) of the event's canonical encoding (audit/chain.ts), which includes prevHash. */
    hash: text().notNull(),
  },
  (t) => [
    uniqueIndex('audit_events_chain_idx').on(t.organizationId, t.seq),
    index('audit_events_actor_idx').on(t.organizationId, t.actorUserId, t.seq),
    index('audit_events_target_idx').on(t.organizationId, t.targetKind, t.targetId, t.seq),
    index('audit_events_action_idx').on(t.organizationId, t.action, t.seq),
    index('audit_events_time_idx').on(t.organizationId, t.at),
  ],
)

/**
 * Each chain's head: the last event's place and hash, which every append reads and moves while holding the row (so
 * concurrent writers on PostgreSQL take turns and never fork the chain), and where its kept part starts after
 * retention deleted the oldest events: the last deleted event's place and hash.
 */
export const auditChains = sqliteTable('audit_chains', {
  organizationId: integer().primaryKey(),
  lastSeq: integer().notNull(),
  lastHash: text().notNull(),
  prunedSeq: integer().notNull().default(0),
  prunedHash: text().notNull().default(genesisHash),
  retentionDays: integer().notNull().default(defaultAuditRetentionDays),
})
