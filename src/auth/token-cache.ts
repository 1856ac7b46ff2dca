// Bearer tokens already resolved, kept for a moment in memory: resolving one (a three-table join, and the
// SQLite read lock every statement takes) was a quarter of a simple API request's cost (README, Performance).
// Only tokens that resolved are kept, so unknown ones cannot fill it. Every write that can change what a valid
// token resolves to (revoking it, its grant or its app, removing its user, changing their role) calls
// `forgetResolvedTokens`, so such changes apply to the very next request; the one-second lifetime bounds how
// long one made outside the server, by hand in SQL, can go unseen.
import type { Db } from '../db/client'
import type { Caller, ResolvedToken } from './model'

export const resolvedTokenLifetimeMs = 1000
/** Far more tokens than a team uses at once; reaching it just starts the cache afresh. */
const maxTokens = 10_000

const caches = new WeakMap<Db, Map<string, { caller: Caller; until: number }>>()

/** The caller of a token resolved less than a second ago and not expired since, keyed by the token's hash. */
export function recallToken(db: Db, hash: string, now: number): Caller | null {
  const cache = caches.get(db)
  const entry = cache?.get(hash)
  if (!entry) return null
  if (now < entry.until) return entry.caller
  cache?.delete(hash)
  return null
}

export function rememberToken(db: Db, hash: string, resolved: ResolvedToken, now: number): void {
  let cache = caches.get(db)
  if (!cache) {
    cache = new Map()
    caches.set(db, cache)
  }
  if (cache.size >= maxTokens) cache.clear()
  const until = Math.min(now + resolvedTokenLifetimeMs, resolved.expiresAt ?? Number.POSITIVE_INFINITY)
  cache.set(hash, { caller: resolved.caller, until })
}

/** Called after every write that may change what a valid token resolves to; the next request reads the database. */
export function forgetResolvedTokens(db: Db): void {
  caches.get(db)?.clear()
}
