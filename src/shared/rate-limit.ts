// Fixed-window rate limits kept in memory: one process serves the whole team, so no shared store is
// needed. Windows are keyed by what is limited (a token, an IP, an email) and forgotten when they end.
// The API, sign-in and the OAuth endpoints all count with this one class; each answers a refusal in its own
// form (JSON error, a page, an RFC 6749 error), so `hit` reports and `take` throws the API's 429.
import { AppError } from './errors'
import type { Clock } from './time'

export interface Limit {
  /** Requests allowed per window. */
  max: number
  windowMs: number
}

/** The API's 429. */
export function rateLimited(retryAfter: number): AppError {
  const headers = { 'retry-after': String(retryAfter) }
  return new AppError(429, 'rate_limited', `Too many requests; retry in ${retryAfter} s`, {}, headers)
}

export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>()
  private sweptAt = 0

  constructor(
    private readonly limit: Limit,
    private readonly clock: Clock,
  ) {}

  /** Counts one request for `key`: null while allowed, else the whole seconds until its window ends. */
  hit(key: string): number | null {
    const now = this.clock.now()
    this.sweep(now)
    let window = this.windows.get(key)
    if (!window || now - window.start >= this.limit.windowMs) {
      window = { start: now, count: 0 }
      this.windows.set(key, window)
    }
    window.count += 1
    return this.retryAfter(window.start, window.count, now)
  }

  /** What `hit` would answer for `key`, without counting a request. */
  peek(key: string): number | null {
    const now = this.clock.now()
    const window = this.windows.get(key)
    if (!window || now - window.start >= this.limit.windowMs) return null
    return this.retryAfter(window.start, window.count + 1, now)
  }

  private retryAfter(start: number, count: number, now: number): number | null {
    if (count <= this.limit.max) return null
    return Math.max(1, Math.ceil((start + this.limit.windowMs - now) / 1000))
  }

  /** Counts one request for `key`; throws the API's 429 with Retry-After when the window is full. */
  take(key: string): void {
    const retryAfter = this.hit(key)
    if (retryAfter !== null) throw rateLimited(retryAfter)
  }

  /** Drops ended windows now and then, so memory stays bounded by the keys seen in one window. */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.limit.windowMs) return
    this.sweptAt = now
    for (const [key, window] of this.windows) {
      if (now - window.start >= this.limit.windowMs) this.windows.delete(key)
    }
  }
}
