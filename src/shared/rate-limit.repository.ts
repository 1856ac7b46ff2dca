// The storage contract for rate-limit windows counted in the database, so that several instances on one PostgreSQL
// database count one client's attempts together (sign-in, the token endpoint, registration). SQLite has none: its
// one process counts in memory (rate-limit.ts).

/** A window after counting one more request in it. */
export interface CountedWindow {
  endsAt: number
  /** Requests counted in the window, this one included. */
  count: number
}

export interface RateLimitRepository {
  /**
   * Counts one request for `key` and answers its window: the current one, or a new one from `now` when the last
   * has ended. One atomic statement, so requests counted at once on any instance each add one.
   */
  hit(key: string, windowMs: number, now: number): Promise<CountedWindow>

  /** Deletes windows that ended before `now` (upkeep). */
  deleteEnded(now: number): Promise<void>
}
