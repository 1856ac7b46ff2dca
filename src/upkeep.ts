// Deletes, every hour, the rows that can no longer be used: expired sessions; expired OAuth codes and tokens,
// dead grants with everything issued under them, and spent registration tokens; and ended rate-limit windows on
// PostgreSQL. Without it every hourly refresh of every connected app would add rows for good. Started by
// src/index.ts; tests call sweepExpired. With several instances on one PostgreSQL database each runs it hourly, but
// never two at once: a sweep finding another instance's under way skips its turn (an advisory lock).
import type { Logger } from './shared/log'
import type { Clock } from './shared/time'
import type { Store } from './store'

/** The sweeps are independent of each other: they run side by side. */
export async function sweepExpired(store: Store, now: number): Promise<void> {
  await Promise.all([
    store.sessions.deleteExpired(now),
    store.oauthGrants.deleteExpired(now),
    store.rateLimits?.deleteEnded(now),
  ])
}

/**
 * Sweeps once now, then every `intervalMs`, unless another instance is sweeping at that moment; a failed sweep is
 * logged and tried again at the next.
 */
export function startUpkeep(store: Store, clock: Clock, log: Logger, intervalMs = 60 * 60_000): { stop(): void } {
  const run = async () => {
    try {
      const ran = await store.locks.ifFree('upkeep', () => sweepExpired(store, clock.now()))
      if (!ran) log.debug('another instance is deleting expired rows; this one skips its turn')
    } catch (error) {
      log.error('deleting expired rows failed', { error: String(error) })
    }
  }
  void run()
  const timer = setInterval(run, intervalMs)
  return { stop: () => clearInterval(timer) }
}
