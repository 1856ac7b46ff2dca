// Bearer tokens already resolved, kept for a moment in memory, on SQLite only: resolving one (a join of three or four
// tables, and the SQLite read lock every statement takes) was a quarter of a simple API request's cost (README,
// Performance). Only tokens that resolved are kept, so unknown ones cannot fill it. One cache per database, held by
// the store: every write that can change what a valid token resolves to (revoking it, its grant or its app, removing
// its user, changing their role) calls `forgetResolvedTokens` with that database, so such changes apply to the very
// next request; the one-second lifetime bounds how long one made outside the server, by hand in SQL, can go unseen.
// An answer is remembered only when nothing was forgotten since its lookup began (`epoch`), so a lookup that a
// revocation overtakes is not kept.
//
// PostgreSQL has no such cache (store/postgres.ts): several instances share the database, and a revocation on one
// must be refused by the others at the next request. Emptying a cache on every instance would need a message from
// the revoking one and leaves a gap while that message travels; validating it would cost a read per request anyway.
// A lookup by hash there is one indexed round trip (bench/token-lookup.ts), so every request reads the database.
import type { Caller, ResolvedToken } from './model'

export const resolvedTokenLifetimeMs = 1000
/** Far more tokens than a team uses at once; reaching it just starts the cache afresh. */
const maxTokens = 10_000

interface Entry extends ResolvedToken {
  resolvedAt: number
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>()
  private forgotten = 0

  /** Changes on every `forget`: read it before looking a token up, and hand it to `remember` with the answer. */
  get epoch(): number {
    return this.forgotten
  }

  /**
   * The caller of a token resolved less than a second ago and not expired since, keyed by the token's hash. A
   * clock set back since then does not stretch that second.
   */
  recall(hash: string, now: number): Caller | null {
    const entry = this.entries.get(hash)
    if (!entry) return null
    const age = now - entry.resolvedAt
    if (age >= 0 && age < resolvedTokenLifetimeMs && (entry.expiresAt === null || now < entry.expiresAt)) {
      return entry.caller
    }
    this.entries.delete(hash)
    return null
  }

  /**
   * Keeps a token's caller, unless the cache was emptied since `epoch` was read: a write that changed what tokens
   * resolve to committed while this lookup was under way, so its answer may predate the write.
   */
  remember(hash: string, resolved: ResolvedToken, now: number, epoch: number): void {
    if (epoch !== this.forgotten) return
    if (this.entries.size >= maxTokens) this.entries.clear()
    this.entries.set(hash, { ...resolved, resolvedAt: now })
  }

  forget(): void {
    this.forgotten += 1
    this.entries.clear()
  }
}

const caches = new WeakMap<object, TokenCache>()

/** The cache of tokens resolved from this database (its driver handle): the same one for every store over it. */
export function tokenCacheOf(database: object): TokenCache {
  let cache = caches.get(database)
  if (!cache) {
    cache = new TokenCache()
    caches.set(database, cache)
  }
  return cache
}

/** Called after every write that may change what a valid token resolves to; the next request reads the database. */
export function forgetResolvedTokens(database: object): void {
  caches.get(database)?.forget()
}
