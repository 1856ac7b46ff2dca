// Deletes, every hour, the rows that can no longer be used: expired sessions; expired OAuth codes and tokens,
// dead grants with everything issued under them, and spent registration tokens. Without it every hourly
// refresh of every connected app would add rows for good. Started by src/index.ts; tests call sweepExpired.
import type { Logger } from './shared/log'
import type { Clock } from './shared/time'
import type { Store } from './store'

/** The sweeps are independent of each other: they run side by side. */
export async function sweepExpired(store: Store, now: number): Promise<void> {
  await Promise.all([store.sessions.deleteExpired(now), store.oauthGrants.deleteExpired(now)])
}

/** Sweeps once now, then every `intervalMs`; a failed sweep is logged and tried again at the next. */
export function startUpkeep(store: Store, clock: Clock, log: Logger, intervalMs = 60 * 60_000): { stop(): void } {
  const run = async () => {
    try {
      await sweepExpired(store, clock.now())
    } catch (error) {
      log.error('deleting expired rows failed', { error: String(error) })
    }
  }
  void run()
  const timer = setInterval(run, intervalMs)
  return { stop: () => clearInterval(timer) }
}
