// Webhooks on SQLite: one process holds the database, so a claim is a plain conditional update in a transaction.
import { and, asc, desc, eq, inArray, lt, lte, or, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { threads } from '../threads/threads.table'
import {
  type AttemptOutcome,
  type EndpointRow,
  eventsFromColumn,
  eventsToColumn,
  targetsOf,
  type WebhookRepository,
} from './repository'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from './webhooks.table'

type Row = typeof webhookEndpoints.$inferSelect

function endpointOf(row: Row): EndpointRow {
  return { ...row, events: eventsFromColumn(row.events) }
}

const finished = ['delivered', 'failed', 'cancelled'] as const

export function sqliteWebhookRepository(db: Db): WebhookRepository {
  const ofOrganization = (organizationId: number, endpointId: string) =>
    and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.organizationId, organizationId))

  return {
    async createEndpoint({ id, organizationId, url, secret, events, createdBy, now }) {
      const [row] = db
        .insert(webhookEndpoints)
        .values({ id, organizationId, url, secret, events: eventsToColumn(events), createdBy, createdAt: now })
        .returning()
        .all()
      if (!row) throw new Error('the endpoint was not stored')
      return endpointOf(row)
    },

    async listEndpoints(organizationId) {
      return db
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.organizationId, organizationId))
        .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
        .all()
        .map(endpointOf)
    },

    async findEndpoint(organizationId, endpointId) {
      const row = db.select().from(webhookEndpoints).where(ofOrganization(organizationId, endpointId)).get()
      return row ? endpointOf(row) : null
    },

    async setEnabled(organizationId, endpointId, change, now) {
      return db.transaction((tx) => {
        const changed = tx
          .update(webhookEndpoints)
          .set(
            change.enabled
              ? { enabled: true, disabledReason: null, disabledAt: null, failureStreak: 0, failingSince: null }
              : { enabled: false, disabledReason: change.reason, disabledAt: now },
          )
          .where(ofOrganization(organizationId, endpointId))
          .returning({ id: webhookEndpoints.id })
          .all()
        if (changed.length === 0) return false
        if (!change.enabled) cancelPending(tx, endpointId, now)
        return true
      })
    },

    async deleteEndpoint(organizationId, endpointId) {
      const gone = db
        .delete(webhookEndpoints)
        .where(ofOrganization(organizationId, endpointId))
        .returning({ id: webhookEndpoints.id })
        .all()
      return gone.length > 0
    },

    // Every thread created and every answer stored asks this, webhooks or not: one prepared statement.
    async threadTargets(threadId) {
      const rows = prepared(db, 'webhooks:targets', () =>
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
          .prepare(),
      ).all({ threadId })
      return targetsOf(rows)
    },

    async enqueue(deliveries, now) {
      if (deliveries.length === 0) return
      db.insert(webhookDeliveries)
        .values(deliveries.map((delivery) => ({ ...delivery, nextAttemptAt: now, createdAt: now })))
        .run()
    },

    async claimDue(now, limit, lease, leaseExpiresAt) {
      return db.transaction((tx) => {
        const due = tx
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
          .all()
        if (due.length === 0) return []
        tx.update(webhookDeliveries)
          .set({ status: 'sending', leaseId: lease, leaseExpiresAt })
          .where(
            inArray(
              webhookDeliveries.id,
              due.map((row) => row.id),
            ),
          )
          .run()
        return due
      })
    },

    async recordAttempt(outcome) {
      return db.transaction((tx) => {
        const delivery = tx
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
          .get()
        if (!delivery) return false
        tx.insert(webhookAttempts)
          .values({
            deliveryId: outcome.deliveryId,
            endpointId: outcome.endpointId,
            attempt: delivery.attempts,
            at: outcome.at,
            durationMs: outcome.durationMs,
            responseStatus: outcome.responseStatus,
            error: outcome.error,
          })
          .run()
        recordStreak(tx, outcome)
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
        .all()
    },

    async releaseAbandoned() {
      return db
        .update(webhookDeliveries)
        .set({ status: 'pending', leaseId: null, leaseExpiresAt: null })
        .where(eq(webhookDeliveries.status, 'sending'))
        .returning({ id: webhookDeliveries.id })
        .all().length
    },

    async deleteFinished(before) {
      return db
        .delete(webhookDeliveries)
        .where(and(inArray(webhookDeliveries.status, [...finished]), lt(webhookDeliveries.finishedAt, before)))
        .returning({ id: webhookDeliveries.id })
        .all().length
    },

    async forgetThread(threadId) {
      return db
        .delete(webhookDeliveries)
        .where(eq(webhookDeliveries.threadId, threadId))
        .returning({ id: webhookDeliveries.id })
        .all().length
    },
  }
}

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

function cancelPending(tx: Tx, endpointId: string, now: number): void {
  tx.update(webhookDeliveries)
    .set({ status: 'cancelled', finishedAt: now, leaseId: null, leaseExpiresAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, ['pending', 'sending'])))
    .run()
}

function recordStreak(tx: Tx, outcome: AttemptOutcome): void {
  if (outcome.status === 'delivered') {
    tx.update(webhookEndpoints)
      .set({ failureStreak: 0, failingSince: null, lastSuccessAt: outcome.at })
      .where(eq(webhookEndpoints.id, outcome.endpointId))
      .run()
    return
  }
  const endpoint = tx
    .update(webhookEndpoints)
    .set({
      failureStreak: sql`${webhookEndpoints.failureStreak} + 1`,
      failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${outcome.at})`,
    })
    .where(eq(webhookEndpoints.id, outcome.endpointId))
    .returning({ failingSince: webhookEndpoints.failingSince, enabled: webhookEndpoints.enabled })
    .get()
  const rule = outcome.disable
  if (!endpoint?.enabled || !rule || endpoint.failingSince === null || endpoint.failingSince > rule.ifFailingSince) {
    return
  }
  tx.update(webhookEndpoints)
    .set({ enabled: false, disabledReason: rule.reason, disabledAt: outcome.at })
    .where(eq(webhookEndpoints.id, outcome.endpointId))
    .run()
  cancelPending(tx, outcome.endpointId, outcome.at)
}
