// A deliberately simple in-memory rate limit for client registration: a fixed window per client address.
// One process serves the whole service, so memory is the right place; a restart forgets the counts.
import type { Clock } from '../shared/time'

export interface RateLimitPolicy {
  max: number
  windowMs: number
}

/** 30 registrations per client address per hour: far above what real clients need, far below a flood. */
export const registrationRateLimit: RateLimitPolicy = { max: 30, windowMs: 60 * 60_000 }

/** Beyond this many tracked addresses, expired windows are swept so memory stays bounded. */
const sweepAbove = 10_000

export class FixedWindowRateLimiter {
  private readonly windows = new Map<string, { startedAt: number; count: number }>()

  constructor(
    private readonly policy: RateLimitPolicy,
    private readonly clock: Clock,
  ) {}

  /** Counts one request; returns null when allowed, or the seconds until the window resets. */
  take(key: string): number | null {
    const now = this.clock.now()
    if (this.windows.size > sweepAbove) this.sweep(now)
    const current = this.windows.get(key)
    if (!current || now - current.startedAt >= this.policy.windowMs) {
      this.windows.set(key, { startedAt: now, count: 1 })
      return null
    }
    if (current.count >= this.policy.max) {
      return Math.max(1, Math.ceil((current.startedAt + this.policy.windowMs - now) / 1000))
    }
    current.count += 1
    return null
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.startedAt >= this.policy.windowMs) this.windows.delete(key)
    }
  }
}
