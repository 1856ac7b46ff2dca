// Webhooks on PostgreSQL. Several instances run a delivery worker over one queue: a claim locks the due rows it takes
// with FOR UPDATE SKIP LOCKED (two workers never wait on, nor take, the same rows) and leases them; the outcome is a
// write conditional on the lease, so a worker whose lease expired mid-attempt records nothing.
import { and, asc, desc, eq, inArray, lt, lte, or, sql } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import { threads } from '../threads/threads.table.pg'
import {
  type AttemptOutcome,
  type EndpointRow,
  eventsFromColumn,
  eventsToColumn,
  targetsOf,
  type WebhookRepository,
} from './repository'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from './webhooks.table.pg'

type Row = typeof webhookEndpoints.$inferSelect
type Tx = Parameters<Parameters<PgDb['transaction']>[0]>[0]

function endpointOf(row: Row): EndpointRow {
  return { ...row, events: eventsFromColumn(row.events) }
}

const finished = ['delivered', 'failed', 'cancelled'] as const

export function pgWebhookRepository(db: PgDb): WebhookRepository {
  const ofOrganization = (organizationId: number, endpointId: string) =>
    and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.organizationId, organizationId))

  return {
    async createEndpoint({ id, organizationId, url, secret, events, createdBy, now }) {
      const [row] = await db
        .insert(webhookEndpoints)
        .values({ id, organizationId, url, secret, events: eventsToColumn(events), createdBy, createdAt: now })
        .returning()
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

    async setEnabled(organizationId, endpointId, change, now) {
      return db.transaction(async (tx) => {
        const changed = await tx
          .update(webhookEndpoints)
          .set(
            change.enabled
              ? { enabled: true, disabledReason: null, disabledAt: null, failureStreak: 0, failingSince: null }
              : { enabled: false, disabledReason: change.reason, disabledAt: now },
          )
          .where(ofOrganization(organizationId, endpointId))
          .returning({ id: webhookEndpoints.id })
        if (changed.length === 0) return false
        if (!change.enabled) await cancelPending(tx, endpointId, now)
        return true
      })
    },

    async deleteEndpoint(organizationId, endpointId) {
      const gone = await db
        .delete(webhookEndpoints)
        .where(ofOrganization(organizationId, endpointId))
        .returning({ id: webhookEndpoints.id })
      return gone.length > 0
    },

    // Every thread created and every answer stored asks this, webhooks or not: one round trip, prepared once (it
    // runs after the commit, outside any transaction; see src/db/prepared.ts).
    async threadTargets(threadId) {
      const rows = await prepared(db, 'webhooks:targets', () =>
        db
          .select({
            organizationId: threads.organizationId,
            state: threads.state,
            isPrivate: threads.isPrivate,
            endpointId: webhookEndpoints.id,
            events: webhookEndpoints.events,
          })
          .from(threads)
          .leftJoin(
            webhookEndpoints,
            and(eq(webhookEndpoints.organizationId, threads.organizationId), eq(webhookEndpoints.enabled, true)),
          )
          .where(eq(threads.id, sql.placeholder('threadId')))
          .prepare('webhook_targets'),
      ).execute({ threadId })
      return targetsOf(rows)
    },

    async enqueue(deliveries, now) {
      if (deliveries.length === 0) return
      await db
        .insert(webhookDeliveries)
        .values(deliveries.map((delivery) => ({ ...delivery, nextAttemptAt: now, createdAt: now })))
    },

    async claimDue(now, limit, lease, leaseExpiresAt) {
      return db.transaction(async (tx) => {
        const due = await tx
          .select({
            id: webhookDeliveries.id,
            endpointId: webhookDeliveries.endpointId,
            url: webhookEndpoints.url,
            secret: webhookEndpoints.secret,
            payload: webhookDeliveries.payload,
            attempts: webhookDeliveries.attempts,
            createdAt: webhookDeliveries.createdAt,
          })
          .from(webhookDeliveries)
          .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
          .where(
            and(
              eq(webhookEndpoints.enabled, true),
              or(
                and(eq(webhookDeliveries.status, 'pending'), lte(webhookDeliveries.nextAttemptAt, now)),
                and(eq(webhookDeliveries.status, 'sending'), lte(webhookDeliveries.leaseExpiresAt, now)),
              ),
            ),
          )
          .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
          .limit(limit)
          // Only the deliveries' rows: endpoints stay free for admins' changes and other workers' claims.
          .for('update', { of: webhookDeliveries, skipLocked: true })
        if (due.length === 0) return []
        await tx
          .update(webhookDeliveries)
          .set({ status: 'sending', leaseId: lease, leaseExpiresAt })
          .where(
            inArray(
              webhookDeliveries.id,
              due.map((row) => row.id),
            ),
          )
        return due
      })
    },

    async recordAttempt(outcome) {
      return db.transaction(async (tx) => {
        const [delivery] = await tx
          .update(webhookDeliveries)
          .set({
            status: outcome.status,
            attempts: sql`${webhookDeliveries.attempts} + 1`,
            nextAttemptAt: outcome.nextAttemptAt,
            leaseId: null,
            leaseExpiresAt: null,
            lastResponseStatus: outcome.responseStatus,
            lastError: outcome.error,
            finishedAt: outcome.status === 'pending' ? null : outcome.at,
          })
          .where(
            and(
              eq(webhookDeliveries.id, outcome.deliveryId),
              eq(webhookDeliveries.status, 'sending'),
              eq(webhookDeliveries.leaseId, outcome.lease),
            ),
          )
          .returning({ attempts: webhookDeliveries.attempts })
        if (!delivery) return false
        await tx.insert(webhookAttempts).values({
          deliveryId: outcome.deliveryId,
          endpointId: outcome.endpointId,
          attempt: delivery.attempts,
          at: outcome.at,
          durationMs: outcome.durationMs,
          responseStatus: outcome.responseStatus,
          error: outcome.error,
        })
        await recordStreak(tx, outcome)
        return true
      })
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

    async releaseAbandoned() {
      return 0
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

async function cancelPending(tx: Tx, endpointId: string, now: number): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set({ status: 'cancelled', finishedAt: now, leaseId: null, leaseExpiresAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, ['pending', 'sending'])))
}

async function recordStreak(tx: Tx, outcome: AttemptOutcome): Promise<void> {
  if (outcome.status === 'delivered') {
    await tx
      .update(webhookEndpoints)
      .set({ failureStreak: 0, failingSince: null, lastSuccessAt: outcome.at })
      .where(eq(webhookEndpoints.id, outcome.endpointId))
    return
  }
  const [endpoint] = await tx
    .update(webhookEndpoints)
    .set({
      failureStreak: sql`${webhookEndpoints.failureStreak} + 1`,
      failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${outcome.at})`,
    })
    .where(eq(webhookEndpoints.id, outcome.endpointId))
    .returning({ failingSince: webhookEndpoints.failingSince, enabled: webhookEndpoints.enabled })
  const rule = outcome.disable
  if (!endpoint?.enabled || !rule || endpoint.failingSince === null || endpoint.failingSince > rule.ifFailingSince) {
    return
  }
  await tx
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: rule.reason, disabledAt: outcome.at })
    .where(eq(webhookEndpoints.id, outcome.endpointId))
  await cancelPending(tx, outcome.endpointId, outcome.at)
}
