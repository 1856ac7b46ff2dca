// Usage is counted per calendar month in UTC: `usage_totals.period` and quotas' resets.

/** `YYYY-MM` of the UTC month holding `ms`. */
export function periodOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7)
}

/** Epoch ms of the first instant of the UTC month after the one holding `ms`. */
export function nextPeriodStart(ms: number): number {
  const date = new Date(ms)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
}
