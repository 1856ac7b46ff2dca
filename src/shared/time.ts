// One injectable clock: the app reads time only through it, so tests can move time instead of sleeping.
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

export const dayMs = 24 * 60 * 60 * 1000

/** `last_used_at` of tokens and grants is written at most this often, so that API reads stay reads. */
export const lastUsedResolutionMs = 60_000

export function toIso(ms: number): string {
  return new Date(ms).toISOString()
}
