// The blob store's part in /healthz: a read (never a write) at most once per interval, whatever the health checker's
// pace, shared by the checks that arrive while one is running. The log says when the store stops or starts answering.
import type { Logger } from '../shared/log'
import type { BlobStore } from './blobs'

export function storageHealth(
  blobs: BlobStore,
  log: Logger,
  intervalMs = 10_000,
  now: () => number = () => performance.now(),
): () => Promise<boolean> {
  let last: { healthy: boolean; at: number } | undefined
  let running: Promise<boolean> | undefined

  async function probe(): Promise<boolean> {
    let healthy = true
    try {
      await blobs.ping()
    } catch (error) {
      healthy = false
      if (last?.healthy !== false) log.error('storage does not answer', { ...blobs.description, error: String(error) })
    }
    if (healthy && last?.healthy === false) log.info('storage answers again', { ...blobs.description })
    last = { healthy, at: now() }
    return healthy
  }

  return () => {
    if (last && now() - last.at < intervalMs) return Promise.resolve(last.healthy)
    running ??= probe().finally(() => {
      running = undefined
    })
    return running
  }
}
