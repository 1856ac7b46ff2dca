// Webhooks on either database (repository.ts): every single-statement read and write, and the clauses and writes the
// dialects' own units of work share. What stays in repository.sqlite.ts / repository.pg.ts is transactional (SQLite's
// transactions are synchronous, PostgreSQL's awaited) or tuned: the claim, the outcome, turning an endpoint off, and
// the prepared lookup every thread event makes.
import { and, asc, desc, eq, inArray, lt, lte, or, sql } from 'drizzle-orm'
import type { AnyDb, Audited } from '../db/dialect'
import type { AttemptOutcome, EndpointRow, ThreadTargets, WebhookRepository } from './repository'
import type * as tables from './webhooks.table.pg'

type Tables = typeof tables
type Row = Tables['webhookEndpoints']['$inferSelect']

const finished = ['delivered', 'failed', 'cancelled'] as const

function eventsFromColumn(value: string | null): string[] | null {
  return value === null || value === '' ? null : value.split(',')
}

function eventsToColumn(events: string[] | null): string | null {
  return events === null || events.length === 0 ? null : events.join(',')
}

function endpointOf(row: Row): EndpointRow {
  return { ...row, events: eventsFromColumn(row.events) }
}

/** ThreadTargets from the rows of a thread left-joined with its organization's enabled endpoints. */
export function targetsOf(
  rows: {
    organizationId: number
    state: string
    isPrivate: boolean
    endpointId: string | null
    events: string | null
  }[],
): ThreadTargets | null {
  const [first] = rows
  if (!first) return null
  const endpoints = rows.flatMap((row) =>
    row.endpointId === null ? [] : [{ id: row.endpointId, events: eventsFromColumn(row.events) }],
  )
  return { organizationId: first.organizationId, state: first.state, isPrivate: first.isPrivate, endpoints }
}

/** The where-clauses and row values both dialects' transactions write with. */
export function webhookClauses({ webhookEndpoints, webhookDeliveries }: Tables) {
  return {
    ofOrganization: (organizationId: number, endpointId: string) =>
      and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.organizationId, organizationId)),

    enabledChange: (change: { enabled: true } | { enabled: false; reason: string }, now: number) =>
      change.enabled
        ? { enabled: true, disabledReason: null, disabledAt: null, failureStreak: 0, failingSince: null }
        : { enabled: false, disabledReason: change.reason, disabledAt: now },

    /** Pending deliveries whose time has come and sending ones whose lease expired (their worker died). */
    due: (now: number) =>
      and(
        eq(webhookEndpoints.enabled, true),
        or(
          and(eq(webhookDeliveries.status, 'pending'), lte(webhookDeliveries.nextAttemptAt, now)),
          and(eq(webhookDeliveries.status, 'sending'), lte(webhookDeliveries.leaseExpiresAt, now)),
        ),
      ),

    /** The delivery as the attempt left it. */
    outcomeOf: (outcome: AttemptOutcome) => ({
      status: outcome.status,
      attempts: sql<number>`${webhookDeliveries.attempts} + 1`,
      nextAttemptAt: outcome.nextAttemptAt,
      leaseId: null,
      leaseExpiresAt: null,
      lastResponseStatus: outcome.responseStatus,
      lastError: outcome.error,
      finishedAt: outcome.status === 'pending' ? null : outcome.at,
    }),

    /** The delivery, while the attempt's worker still holds its lease. */
    leased: (outcome: AttemptOutcome) =>
      and(
        eq(webhookDeliveries.id, outcome.deliveryId),
        eq(webhookDeliveries.status, 'sending'),
        eq(webhookDeliveries.leaseId, outcome.lease),
      ),

    attemptOf: (outcome: AttemptOutcome, attempt: number) => ({
      deliveryId: outcome.deliveryId,
      endpointId: outcome.endpointId,
      attempt,
      at: outcome.at,
      durationMs: outcome.durationMs,
      responseStatus: outcome.responseStatus,
      error: outcome.error,
    }),

    succeeded: (at: number) => ({ failureStreak: 0, failingSince: null, lastSuccessAt: at }),

    failedAgain: (at: number) => ({
      failureStreak: sql<number>`${webhookEndpoints.failureStreak} + 1`,
      failingSince: sql<number>`coalesce(${webhookEndpoints.failingSince}, ${at})`,
    }),

    /** Whether a failure disables the endpoint, from its state after the failure was counted. */
    disables: (
      endpoint: { enabled: boolean; failingSince: number | null } | undefined,
      outcome: AttemptOutcome,
    ): outcome is AttemptOutcome & { disable: NonNullable<AttemptOutcome['disable']> } =>
      !!endpoint?.enabled &&
      outcome.disable !== null &&
      endpoint.failingSince !== null &&
      endpoint.failingSince <= outcome.disable.ifFailingSince,

    cancelled: (now: number) => ({
      status: 'cancelled' as const,
      finishedAt: now,
      leaseId: null,
      leaseExpiresAt: null,
    }),

    unsent: (endpointId: string) =>
      and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, ['pending', 'sending'])),
  }
}

type Transactional = 'setEnabled' | 'threadTargets' | 'claimDue' | 'recordAttempt' | 'releaseAbandoned'

export function webhookRepository(db: AnyDb, t: Tables, audited: Audited): Omit<WebhookRepository, Transactional> {
  const { webhookEndpoints, webhookDeliveries, webhookAttempts } = t
  const { ofOrganization } = webhookClauses(t)
  return {
    async createEndpoint({ id, organizationId, url, secret, events, createdBy, now }, audit) {
      const [row] = await audited<Row>(
        (tx) => [
          tx
            .insert(webhookEndpoints)
            .values({ id, organizationId, url, secret, events: eventsToColumn(events), createdBy, createdAt: now })
            .returning(),
        ],
        ([stored]) => (stored ? audit(endpointOf(stored)) : null),
      )
      if (!row) throw new Error('the endpoint was not stored')
      return endpointOf(row)
    },

    async listEndpoints(organizationId) {
      const rows = await db
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.organizationId, organizationId))
        .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
      return rows.map(endpointOf)
    },

    async findEndpoint(organizationId, endpointId) {
      const [row] = await db.select().from(webhookEndpoints).where(ofOrganization(organizationId, endpointId))
      return row ? endpointOf(row) : null
    },

    async deleteEndpoint(organizationId, endpointId, audit) {
      const gone = await audited<{ url: string }>(
        (tx) => [
          tx
            .delete(webhookEndpoints)
            .where(ofOrganization(organizationId, endpointId))
            .returning({ url: webhookEndpoints.url }),
        ],
        ([endpoint]) => (endpoint ? audit(endpoint.url) : null),
      )
      return gone.length > 0
    },

    async enqueue(deliveries, now) {
      if (deliveries.length === 0) return
      await db
        .insert(webhookDeliveries)
        .values(deliveries.map((delivery) => ({ ...delivery, nextAttemptAt: now, createdAt: now })))
    },

    async recentAttempts(organizationId, limit, endpointId) {
      return db
        .select({
          deliveryId: webhookAttempts.deliveryId,
          endpointId: webhookAttempts.endpointId,
          eventType: webhookDeliveries.eventType,
          attempt: webhookAttempts.attempt,
          at: webhookAttempts.at,
          durationMs: webhookAttempts.durationMs,
          responseStatus: webhookAttempts.responseStatus,
          error: webhookAttempts.error,
          status: webhookDeliveries.status,
        })
        .from(webhookAttempts)
        .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookAttempts.endpointId))
        .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookAttempts.deliveryId))
        .where(
          and(
            eq(webhookEndpoints.organizationId, organizationId),
            endpointId === undefined ? undefined : eq(webhookAttempts.endpointId, endpointId),
          ),
        )
        .orderBy(desc(webhookAttempts.at), desc(webhookAttempts.id))
        .limit(limit)
    },

    async deleteFinished(before) {
      const gone = await db
        .delete(webhookDeliveries)
        .where(and(inArray(webhookDeliveries.status, [...finished]), lt(webhookDeliveries.finishedAt, before)))
        .returning({ id: webhookDeliveries.id })
      return gone.length
    },

    async forgetThread(threadId) {
      const gone = await db
        .delete(webhookDeliveries)
        .where(eq(webhookDeliveries.threadId, threadId))
        .returning({ id: webhookDeliveries.id })
      return gone.length
    },
  }
}
