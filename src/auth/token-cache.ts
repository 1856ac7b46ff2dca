// Bearer tokens already resolved, kept for a moment in memory: resolving one (a join of three or four tables,
// and the SQLite read lock every statement takes) was a quarter of a simple API request's cost (README,
// Performance). Only tokens that resolved are kept, so unknown ones cannot fill it. Every write that can change
// what a valid token resolves to (revoking it, its grant or its app, removing its user, changing their role)
// calls `forgetResolvedTokens`, so such changes apply to the very next request; the one-second lifetime bounds
// how long one made outside the server, by hand in SQL, can go unseen.
import type { Db } from '../db/client'
import type { Caller, ResolvedToken } from './model'

export const resolvedTokenLifetimeMs = 1000
/** Far more tokens than a team uses at once; reaching it just starts the cache afresh. */
const maxTokens = 10_000

interface Entry extends ResolvedToken {
  resolvedAt: number
}

/** Keyed by the database handle (SQLite's or PostgreSQL's): one cache per database. */
const caches = new WeakMap<object, Map<string, Entry>>()

/**
 * The caller of a token resolved less than a second ago and not expired since, keyed by the token's hash. A
 * clock set back since then does not stretch that second.
 */
export function recallToken(db: Db, hash: string, now: number): Caller | null {
  const cache = caches.get(db)
  const entry = cache?.get(hash)
  if (!entry) return null
  const age = now - entry.resolvedAt
  if (age >= 0 && age < resolvedTokenLifetimeMs && (entry.expiresAt === null || now < entry.expiresAt)) {
    return entry.caller
  }
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
  cache.set(hash, { ...resolved, resolvedAt: now })
}

/** Called after every write that may change what a valid token resolves to; the next request reads the database. */
export function forgetResolvedTokens(db: object): void {
  caches.get(db)?.clear()
}
