// PostgreSQL twin of audit.table.ts. Keep the two in step.
import { bigint, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { defaultAuditRetentionDays, genesisHash } from './audit.table'

const epochMs = () => bigint({ mode: 'number' })

export const auditEvents = pgTable(
  'audit_events',
  {
    id: text().primaryKey(),
    organizationId: integer().notNull(),
    seq: integer().notNull(),
    at: epochMs().notNull(),
    action: text().notNull(),
    outcome: text().notNull(),
    actorKind: text().notNull(),
    actorId: text(),
    actorUserId: integer(),
    address: text(),
    userAgent: text(),
    targetKind: text(),
    targetId: text(),
    // Text, not jsonb: the hash covers these bytes, and jsonb would reorder and respace them.
    detail: text().notNull(),
    prevHash: text().notNull(),
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

export const auditChains = pgTable('audit_chains', {
  organizationId: integer().primaryKey(),
  lastSeq: integer().notNull(),
  lastHash: text().notNull(),
  prunedSeq: integer().notNull().default(0),
  prunedHash: text().notNull().default(genesisHash),
  retentionDays: integer().notNull().default(defaultAuditRetentionDays),
})
