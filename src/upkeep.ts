// Deletes, every hour, what can no longer be used: expired sessions and idempotency keys; expired OAuth codes and
// tokens, dead grants with everything issued under them, spent registration tokens, the change feed's week-old
// tombstones, MCP servers' expired OAuth authorizations, and on PostgreSQL ended rate-limit windows. Without it every hourly refresh of every connected app
// would add rows for good. It also removes stored files whose rows were never committed (an upload that failed between storing its files and inserting its rows, a crash on another
// server sharing the bucket), which would otherwise stay until the next start, and on a long-running server never go.
// And it deletes threads past their organization's retention period (threads/retention.ts), if it has one, and audit
// events past theirs (audit/service.ts, 400 days unless an organization chose another), which is separate.
// Started by src/index.ts; tests call sweepExpired, or start it with their own clock and timer. With several
// instances on one PostgreSQL database each runs it hourly, but never two at once: a run that finds another
// instance's under way skips its turn (an advisory lock, store.locks).
import { sweepOrphans } from './attachments/sweep'
import { pruneAuditLog } from './audit/service'
import { idempotencyKeyLifetimeMs } from './idempotency/service'
import type { Logger } from './shared/log'
import { type Clock, dayMs } from './shared/time'
import type { BlobStore } from './storage/blobs'
import type { Store } from './store'
import { tombstoneKeepMs } from './threads/feed'
import { sweepRetention } from './threads/retention'

/** How often the upkeep runs. Stored files are left alone for their first hour (`inFlightMs`) in any case. */
export const upkeepIntervalMs = 60 * 60_000

/** The sweeps are independent of each other: they run side by side. */
export async function sweepExpired(store: Store, now: number): Promise<void> {
  await Promise.all([
    store.sessions.deleteExpired(now),
    store.oauthGrants.deleteExpired(now),
    store.rateLimits?.deleteEnded(now),
    // Admins see a month of deliveries; older finished ones (and their attempts) go.
    store.webhooks.deleteFinished(now - 30 * dayMs),
    // The change feed's record of deletions: a feed resuming from before what is swept is told to reload.
    store.threads.sweepTombstones(now - tombstoneKeepMs),
    store.idempotency.deleteExpired(now - idempotencyKeyLifetimeMs),
    // MCP servers' OAuth authorizations an admin started and never finished (ten minutes).
    store.mcpServers.sweepFlows(now),
  ])
}

/** Calls `run` every `ms` until stopped: setInterval, unless a test brings a timer it fires by hand. */
export type Repeat = (run: () => Promise<void>, ms: number) => { stop(): void }

const everyInterval: Repeat = (run, ms) => {
  const timer = setInterval(run, ms)
  return { stop: () => clearInterval(timer) }
}

export interface UpkeepDeps {
  store: Store
  blobs: BlobStore
  clock: Clock
  log: Logger
  repeat?: Repeat
}

/**
 * Sweeps once now, then every `upkeepIntervalMs`; a failed sweep is logged and tried again at the next. A run
 * that finds the previous one still going (a large bucket takes long to list) waits for it rather than doubling it,
 * and one that finds another instance sweeping skips its turn.
 */
export function startUpkeep({ store, blobs, clock, log, repeat = everyInterval }: UpkeepDeps): { stop(): void } {
  const expired = async (now: number) => {
    try {
      await sweepExpired(store, now)
    } catch (error) {
      log.error('deleting expired rows failed', { error: String(error) })
    }
  }
  const orphans = async (now: number) => {
    try {
      const count = await sweepOrphans(store.attachments, blobs, now)
      if (count > 0) log.info('removed stray upload files left by a crash', { count })
    } catch (error) {
      log.error('stray upload files could not be removed', { ...blobs.description, error: String(error) })
    }
  }
  const retention = async (now: number) => {
    try {
      const deps = { users: store.users, threads: store.threads, blobs, log }
      const count = await sweepRetention(deps, now)
      if (count > 0) log.info('deleted threads past their organization’s retention period', { count })
    } catch (error) {
      log.error('deleting threads past their retention period failed', { error: String(error) })
    }
  }
  const audit = async (now: number) => {
    try {
      const count = await pruneAuditLog(store.audit, now)
      if (count > 0) log.info('deleted audit events past their organization’s audit retention period', { count })
      // Rewriting a chain's head to drop its newest events is one UPDATE that the chain cannot show; these lines,
      // wherever the logs are kept, are the copy of each head outside the database that does (docs/audit.md).
      for (const head of await store.audit.heads()) {
        log.info('audit chain head', {
          organization_id: head.organizationId,
          last_seq: head.lastSeq,
          last_hash: head.lastHash,
        })
      }
    } catch (error) {
      log.error('deleting audit events past their retention period failed', { error: String(error) })
    }
  }
  let running: Promise<void> | null = null
  const run = (): Promise<void> => {
    if (running) return running
    const now = clock.now()
    const sweeps = async () => {
      await Promise.all([expired(now), orphans(now), retention(now), audit(now)])
    }
    running = store.locks
      .ifFree('upkeep', sweeps)
      .then(
        (ran) => {
          if (!ran) log.debug('another instance is running the upkeep; this one skips its turn')
        },
        (error) => log.error('the upkeep could not start', { error: String(error) }),
      )
      .then(() => {
        running = null
      })
    return running
  }
  void run()
  return repeat(run, upkeepIntervalMs)
}
