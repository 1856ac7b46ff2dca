// Deletes, every hour, the rows that can no longer be used: expired sessions; expired OAuth codes and tokens,
// dead grants with everything issued under them, and spent registration tokens. Without it every hourly
// refresh of every connected app would add rows for good. Started by src/index.ts; tests call sweepExpired.
import type { Db } from './db/client'
import { deleteExpiredOAuthRows } from './oauth/tokens'
import type { Logger } from './shared/log'
import type { Clock } from './shared/time'
import { sqliteStore } from './store'

/** The sweeps are independent of each other: they run side by side. */
export async function sweepExpired(db: Db, now: number): Promise<void> {
  const store = sqliteStore(db)
  await Promise.all([store.sessions.deleteExpired(now), deleteExpiredOAuthRows(db, now)])
}

/** Sweeps once now, then every `intervalMs`; a failed sweep is logged and tried again at the next. */
export function startUpkeep(db: Db, clock: Clock, log: Logger, intervalMs = 60 * 60_000): { stop(): void } {
  const run = () => {
    sweepExpired(db, clock.now()).catch((error: unknown) => {
      log.error('deleting expired rows failed', { error: String(error) })
    })
  }
  run()
  const timer = setInterval(run, intervalMs)
  return { stop: () => clearInterval(timer) }
}
