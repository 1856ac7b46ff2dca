// Webhook endpoints (one organization's each), the durable queue of deliveries to them, and every attempt made, so
// that admins see what was sent and what came back. Keep in step with webhooks.table.pg.ts.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { organizations, users } from '../auth/auth.table'

export const deliveryStatuses = ['pending', 'sending', 'delivered', 'failed', 'cancelled'] as const

export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    id: text().primaryKey(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    url: text().notNull(),
    /**
     * The signing secret (`whsec_…`), kept as is: HMAC needs the key itself, so unlike tokens it cannot be hashed.
     * It is shown once, when the endpoint is made.
     */
    secret: text().notNull(),
    /** The event types sent, comma-separated (repository.ts reads them into a list); null sends every type. */
    events: text(),
    enabled: integer({ mode: 'boolean' }).notNull().default(true),
    /** Why it is off: an admin's choice, or failures (see delivery.ts); shown on the admin page. */
    disabledReason: text(),
    disabledAt: integer(),
    createdBy: integer().references(() => users.id, { onDelete: 'set null' }),
    createdAt: integer().notNull(),
    /** Failed attempts since the last success, and when the first of them was made. */
    failureStreak: integer().notNull().default(0),
    failingSince: integer(),
    lastSuccessAt: integer(),
  },
  (t) => [index('webhook_endpoints_org_idx').on(t.organizationId)],
)

export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    /** Also the `webhook-id` header: the same on every attempt, so receivers can drop repeats. */
    id: text().primaryKey(),
    endpointId: text()
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventType: text().notNull(),
    /** The exact JSON body sent, fixed when the event happened. */
    payload: text().notNull(),
    /** The thread the event is about (none for a test event): its deliveries go when it is deleted. */
    threadId: text(),
    status: text({ enum: deliveryStatuses }).notNull().default('pending'),
    attempts: integer().notNull().default(0),
    nextAttemptAt: integer().notNull(),
    /** While `sending`: the claim's ID (only its holder records the outcome) and when another worker may take it. */
    leaseId: text(),
    leaseExpiresAt: integer(),
    lastResponseStatus: integer(),
    lastError: text(),
    createdAt: integer().notNull(),
    finishedAt: integer(),
  },
  (t) => [
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.createdAt),
    index('webhook_deliveries_thread_idx').on(t.threadId),
  ],
)

export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    deliveryId: text()
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    endpointId: text()
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    attempt: integer().notNull(),
    at: integer().notNull(),
    durationMs: integer().notNull(),
    /** The receiver's HTTP status, or null when none came (refused address, timeout, connection error). */
    responseStatus: integer(),
    error: text(),
  },
  (t) => [
    index('webhook_attempts_endpoint_idx').on(t.endpointId, t.at),
    index('webhook_attempts_delivery_idx').on(t.deliveryId),
  ],
)
