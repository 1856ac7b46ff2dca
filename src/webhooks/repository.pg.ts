// Webhooks on PostgreSQL. Several instances run a delivery worker over one queue: a claim locks the due rows it takes
// with FOR UPDATE SKIP LOCKED (two workers never wait on, nor take, the same rows) and leases them; the outcome is a
// write conditional on the lease, so a worker whose lease expired mid-attempt records nothing. Only the units of
// work and the prepared target lookup live here; the rest is repository.common.ts.
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { anyDb, type PgAppend, pgAudited } from '../db/dialect'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import { prepared } from '../db/prepared'
import { threads } from '../threads/threads.table.pg'
import type { AttemptOutcome, WebhookRepository } from './repository'
import { targetsOf, webhookClauses, webhookRepository } from './repository.common'
import * as tables from './webhooks.table.pg'

const { webhookAttempts, webhookDeliveries, webhookEndpoints } = tables
const clauses = webhookClauses(tables)

async function cancelPending(tx: Tx, endpointId: string, now: number): Promise<void> {
  await tx.update(webhookDeliveries).set(clauses.cancelled(now)).where(clauses.unsent(endpointId))
}

async function recordStreak(tx: Tx, outcome: AttemptOutcome): Promise<void> {
  const where = eq(webhookEndpoints.id, outcome.endpointId)
  if (outcome.status === 'delivered') {
    await tx.update(webhookEndpoints).set(clauses.succeeded(outcome.at)).where(where)
    return
  }
  const [endpoint] = await tx
    .update(webhookEndpoints)
    .set(clauses.failedAgain(outcome.at))
    .where(where)
    .returning({ failingSince: webhookEndpoints.failingSince, enabled: webhookEndpoints.enabled })
  if (!clauses.disables(endpoint, outcome)) return
  await tx
    .update(webhookEndpoints)
    .set(clauses.enabledChange({ enabled: false, reason: outcome.disable.reason }, outcome.at))
    .where(where)
  await cancelPending(tx, outcome.endpointId, outcome.at)
}

export function pgWebhookRepository(db: PgDb, append: PgAppend): WebhookRepository {
  return {
    ...webhookRepository(anyDb(db), tables, pgAudited(db, append)),

    // The change and the cancelling of the endpoint's queue: one unit.
    async setEnabled(organizationId, endpointId, change, now) {
      return db.transaction(async (tx) => {
        const changed = await tx
          .update(webhookEndpoints)
          .set(clauses.enabledChange(change, now))
          .where(clauses.ofOrganization(organizationId, endpointId))
          .returning({ id: webhookEndpoints.id })
        if (changed.length === 0) return false
        if (!change.enabled) await cancelPending(tx, endpointId, now)
        return true
      })
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

    // Many workers claim at once: lock the rows taken, skip those another is taking, and lease them in one unit.
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
          .where(clauses.due(now))
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

    // The delivery, its log row and the endpoint's streak: one unit.
    async recordAttempt(outcome) {
      return db.transaction(async (tx) => {
        const [delivery] = await tx
          .update(webhookDeliveries)
          .set(clauses.outcomeOf(outcome))
          .where(clauses.leased(outcome))
          .returning({ attempts: webhookDeliveries.attempts })
        if (!delivery) return false
        await tx.insert(webhookAttempts).values(clauses.attemptOf(outcome, delivery.attempts))
        await recordStreak(tx, outcome)
        return true
      })
    },

    // Nothing to release: another instance may be sending them; their leases expire and any instance takes them.
    async releaseAbandoned() {
      return 0
    },
  }
}
