// One injectable clock: the app reads time only through it, so tests can move time instead of sleeping.
import { invalidRequest } from './errors'
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

/** An ISO 8601 date alone (YYYY-MM-DD): as the end of a range, it includes that whole day. */
export const dateOnly = /^\d{4}-\d{2}-\d{2}$/

/** Epoch ms of an ISO 8601 date (midnight UTC) or date-time; a 400 naming `name` for one that names no real day. */
export function parseInstant(value: string, name: string): number {
  const ms = Date.parse(dateOnly.test(value) ? `${value}T00:00:00Z` : value)
  const day = value.slice(0, 10)
  if (Number.isNaN(ms) || new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) !== day) {
    throw invalidRequest(`${name} is not a valid ISO 8601 date`)
  }
  return ms
}
