// The storage contract for idempotency keys (service.ts). Every method is one atomic unit, so that requests racing
// with one key on any instance agree on which of them runs.

/** What the request found under its key. */
export type Reservation =
  /** The key is this request's now: it runs, and only it may store the response or release the key. */
  | { kind: 'reserved'; claim: string }
  /** Another request holds the key: finished (its response is stored) or still running (`status` null). */
  | { kind: 'taken'; fingerprint: string; status: number | null; body: string | null }

export interface IdempotencyRepository {
  /**
   * Reserves `key` for `userId` with a new random claim, unless another request holds it. A key reserved before
   * `expiredBefore` is free again, and so is one still running since before `abandonedBefore`: its request was lost
   * with a crashed process, which would have stored or released it long before. Exactly one of any number of
   * concurrent callers is answered `reserved`; the others read what it holds.
   */
  reserve(input: {
    userId: number
    key: string
    fingerprint: string
    now: number
    expiredBefore: number
    abandonedBefore: number
  }): Promise<Reservation>

  /** Stores the first response, if `claim` still holds the key (it was not taken over meanwhile). */
  complete(userId: number, key: string, claim: string, response: { status: number; body: string }): Promise<void>

  /** Frees the key for a retry, if `claim` still holds it (the request failed without effect worth repeating). */
  release(userId: number, key: string, claim: string): Promise<void>

  /** Deletes keys reserved before `before` (upkeep). */
  deleteExpired(before: number): Promise<void>
}
