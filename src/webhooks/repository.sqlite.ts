// Webhooks on SQLite: one process holds the database, so a claim is a plain conditional update in a transaction.
// Only the units of work live here (bun:sqlite's transactions are synchronous, so they cannot await the neutral
// statements) and the prepared target lookup; the rest is repository.common.ts.
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { anyDb, asTables, type SqliteAppend, sqliteAudited } from '../db/dialect'
import { prepared } from '../db/prepared'
import { threads } from '../threads/threads.table'
import type { AttemptOutcome, WebhookRepository } from './repository'
import { targetsOf, webhookClauses, webhookRepository } from './repository.common'
import * as tables from './webhooks.table'

const { webhookAttempts, webhookDeliveries, webhookEndpoints } = tables
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

export function sqliteWebhookRepository(db: Db, append: SqliteAppend): WebhookRepository {
  const clauses = webhookClauses(asTables(tables))

  function cancelPending(tx: Tx, endpointId: string, now: number): void {
    tx.update(webhookDeliveries).set(clauses.cancelled(now)).where(clauses.unsent(endpointId)).run()
  }

  function recordStreak(tx: Tx, outcome: AttemptOutcome): void {
    const where = eq(webhookEndpoints.id, outcome.endpointId)
    if (outcome.status === 'delivered') {
      tx.update(webhookEndpoints).set(clauses.succeeded(outcome.at)).where(where).run()
      return
    }
    const endpoint = tx
      .update(webhookEndpoints)
      .set(clauses.failedAgain(outcome.at))
      .where(where)
      .returning({ failingSince: webhookEndpoints.failingSince, enabled: webhookEndpoints.enabled })
      .get()
    if (!clauses.disables(endpoint, outcome)) return
    tx.update(webhookEndpoints)
      .set(clauses.enabledChange({ enabled: false, reason: outcome.disable.reason }, outcome.at))
      .where(where)
      .run()
    cancelPending(tx, outcome.endpointId, outcome.at)
  }

  return {
    ...webhookRepository(anyDb(db), asTables(tables), sqliteAudited(db, append)),

    // The change and the cancelling of the endpoint's queue: one unit.
    async setEnabled(organizationId, endpointId, change, now) {
      return db.transaction((tx) => {
        const changed = tx
          .update(webhookEndpoints)
          .set(clauses.enabledChange(change, now))
          .where(clauses.ofOrganization(organizationId, endpointId))
          .returning({ id: webhookEndpoints.id })
          .all()
        if (changed.length === 0) return false
        if (!change.enabled) cancelPending(tx, endpointId, now)
        return true
      })
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

    // Select and lease in one transaction: the single writer makes it a claim no other caller can share.
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
          .where(clauses.due(now))
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

    // The delivery, its log row and the endpoint's streak: one unit.
    async recordAttempt(outcome) {
      return db.transaction((tx) => {
        const delivery = tx
          .update(webhookDeliveries)
          .set(clauses.outcomeOf(outcome))
          .where(clauses.leased(outcome))
          .returning({ attempts: webhookDeliveries.attempts })
          .get()
        if (!delivery) return false
        tx.insert(webhookAttempts).values(clauses.attemptOf(outcome, delivery.attempts)).run()
        recordStreak(tx, outcome)
        return true
      })
    },

    // Only here: the one process that holds the file is starting, so whatever is `sending` lost its worker.
    async releaseAbandoned() {
      return db
        .update(webhookDeliveries)
        .set({ status: 'pending', leaseId: null, leaseExpiresAt: null })
        .where(eq(webhookDeliveries.status, 'sending'))
        .returning({ id: webhookDeliveries.id })
        .all().length
    },
  }
}
