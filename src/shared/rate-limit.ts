// Fixed-window rate limits. Windows are keyed by what is limited (a token, an IP, an email) and forgotten when they
// end. The API, sign-in and the OAuth endpoints all count with a `Limiter`; each answers a refusal in its own form
// (JSON error, a page, an RFC 6749 error), so `hit` reports and `take` throws the API's 429.
//
// Where a limit is counted: the limits that slow down guessing (sign-in, passwords, the token endpoint, registration)
// count in the database on PostgreSQL (`sharedLimiter`), so that several instances behind one load balancer count a
// client's attempts together; on SQLite, whose one process serves the whole team, in memory. The per-address and
// per-token limits on every request always count in memory, per instance: they protect that instance's own capacity,
// and a database write on every API request would cost more than the request (docs/operations.md, Several instances).
import { AppError } from './errors'
import type { RateLimitRepository } from './rate-limit.repository'
import type { Clock } from './time'

export interface Limit {
  /** Requests allowed per window. */
  max: number
  windowMs: number
}

/**
 * A limit as its callers see it, wherever it counts: null while allowed, else the whole seconds until the window
 * ends. Counting in memory answers at once; counting in the database, with a promise.
 */
export interface Limiter {
  hit(key: string): number | null | Promise<number | null>
}

/** Told of every request a limit refuses (the operators' metrics count them, src/metrics/). */
export type Refused = () => void

/** The API's 429. */
export function rateLimited(retryAfter: number): AppError {
  const headers = { 'retry-after': String(retryAfter) }
  return new AppError(429, 'rate_limited', `Too many requests; retry in ${retryAfter} s`, {}, headers)
}

function secondsToWait(limit: Limit, count: number, endsAt: number, now: number): number | null {
  if (count <= limit.max) return null
  return Math.max(1, Math.ceil((endsAt - now) / 1000))
}

/** Counts in this process's memory. */
export class RateLimiter implements Limiter {
  private readonly windows = new Map<string, { start: number; count: number }>()
  private sweptAt = 0

  constructor(
    private readonly limit: Limit,
    private readonly clock: Clock,
    private readonly refused?: Refused,
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
    const retryAfter = this.retryAfter(window.start, window.count, now)
    if (retryAfter !== null) this.refused?.()
    return retryAfter
  }

  /** What `hit` would answer for `key`, without counting a request. */
  peek(key: string): number | null {
    const now = this.clock.now()
    const window = this.windows.get(key)
    if (!window || now - window.start >= this.limit.windowMs) return null
    return this.retryAfter(window.start, window.count + 1, now)
  }

  private retryAfter(start: number, count: number, now: number): number | null {
    return secondsToWait(this.limit, count, start + this.limit.windowMs, now)
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

/** Counts in the database, so that every instance on it counts together. `name` keeps limits' keys apart. */
export class StoredRateLimiter implements Limiter {
  constructor(
    private readonly windows: RateLimitRepository,
    private readonly name: string,
    private readonly limit: Limit,
    private readonly clock: Clock,
    private readonly refused?: Refused,
  ) {}

  async hit(key: string): Promise<number | null> {
    const now = this.clock.now()
    const window = await this.windows.hit(`${this.name}:${key}`, this.limit.windowMs, now)
    const retryAfter = secondsToWait(this.limit, window.count, window.endsAt, now)
    if (retryAfter !== null) this.refused?.()
    return retryAfter
  }
}

/**
 * A limit every instance counts together: in the database when the store keeps windows (PostgreSQL), else in this
 * process's memory (SQLite, where this process is the only one).
 */
export function sharedLimiter(
  windows: RateLimitRepository | null,
  name: string,
  limit: Limit,
  clock: Clock,
  refused?: Refused,
): Limiter {
  return windows === null
    ? new RateLimiter(limit, clock, refused)
    : new StoredRateLimiter(windows, name, limit, clock, refused)
}
