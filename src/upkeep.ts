// Deletes, every hour, the rows that can no longer be used: expired sessions; expired OAuth codes and tokens,
// dead grants with everything issued under them, and spent registration tokens. Without it every hourly
// refresh of every connected app would add rows for good. Started by src/index.ts; tests call sweepExpired.
import { deleteExpiredSessions } from './auth/sessions'
import type { Db } from './db/client'
import type { Logger } from './shared/log'
import type { Clock } from './shared/time'
import type { Store } from './store'

export async function sweepExpired(db: Db, store: Store, now: number): Promise<void> {
  deleteExpiredSessions(db, now)
  await store.oauthGrants.deleteExpired(now)
}

/** Sweeps once now, then every `intervalMs`; a failed sweep is logged and tried again at the next. */
export function startUpkeep(
  db: Db,
  store: Store,
  clock: Clock,
  log: Logger,
  intervalMs = 60 * 60_000,
): { stop(): void } {
  const run = async () => {
    try {
      await sweepExpired(db, store, clock.now())
    } catch (error) {
      log.error('deleting expired rows failed', { error: String(error) })
    }
  }
  void run()
  const timer = setInterval(run, intervalMs)
  return { stop: () => clearInterval(timer) }
}
