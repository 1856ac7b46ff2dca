// PostgreSQL twin of webhooks.table.ts. Keep the two in step. Several instances share the queue: a delivery being
// sent carries a lease, and deliveries are claimed with FOR UPDATE SKIP LOCKED (repository.pg.ts).
import { bigint, boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { organizations, users } from '../auth/auth.table.pg'
import { deliveryStatuses } from './webhooks.table'

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text().primaryKey(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    url: text().notNull(),
    secret: text().notNull(),
    events: text(),
    enabled: boolean().notNull().default(true),
    disabledReason: text(),
    disabledAt: bigint({ mode: 'number' }),
    createdBy: integer().references(() => users.id, { onDelete: 'set null' }),
    createdAt: bigint({ mode: 'number' }).notNull(),
    failureStreak: integer().notNull().default(0),
    failingSince: bigint({ mode: 'number' }),
    lastSuccessAt: bigint({ mode: 'number' }),
  },
  (t) => [index('webhook_endpoints_org_idx').on(t.organizationId)],
)

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text().primaryKey(),
    endpointId: text()
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventType: text().notNull(),
    payload: text().notNull(),
    /** The thread the event is about (none for a test event): its deliveries go when it is deleted. */
    threadId: text(),
    status: text({ enum: deliveryStatuses }).notNull().default('pending'),
    attempts: integer().notNull().default(0),
    nextAttemptAt: bigint({ mode: 'number' }).notNull(),
    leaseId: text(),
    leaseExpiresAt: bigint({ mode: 'number' }),
    lastResponseStatus: integer(),
    lastError: text(),
    createdAt: bigint({ mode: 'number' }).notNull(),
    finishedAt: bigint({ mode: 'number' }),
  },
  (t) => [
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.createdAt),
    index('webhook_deliveries_thread_idx').on(t.threadId),
  ],
)

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: integer().primaryKey().generatedByDefaultAsIdentity(),
    deliveryId: text()
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    endpointId: text()
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    attempt: integer().notNull(),
    at: bigint({ mode: 'number' }).notNull(),
    durationMs: integer().notNull(),
    responseStatus: integer(),
    error: text(),
  },
  (t) => [
    index('webhook_attempts_endpoint_idx').on(t.endpointId, t.at),
    index('webhook_attempts_delivery_idx').on(t.deliveryId),
  ],
)
