// One injectable clock: the app reads time only through it, so tests can move time instead of sleeping.
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

export function toIso(ms: number): string {
  return new Date(ms).toISOString()
}
