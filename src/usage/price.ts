// What an answer costs, from its model's price in the models list (models/catalogue.ts): never guessed. Amounts are
// kept as integer millionths of the currency (cost_micros), so sums are exact.
import type { TokenCounts } from './estimate'

/** A model's price per million tokens, as the models list gives it. */
export interface ModelPrice {
  inputPerMillion: number
  outputPerMillion: number
  /** The price of prompt tokens read from the provider's cache; the input price when absent. */
  cachedInputPerMillion?: number
  /** ISO 4217, such as USD. */
  currency: string
}

/**
 * Millionths of the currency: a price per million tokens is exactly the cost of one token in millionths, so the cost
 * is tokens × price, rounded to a whole millionth once. Cached prompt tokens are charged at the cached price.
 */
export function costMicros(tokens: TokenCounts, price: ModelPrice): number {
  const cached = Math.min(tokens.cachedInputTokens, tokens.inputTokens)
  const cachedPrice = price.cachedInputPerMillion ?? price.inputPerMillion
  return Math.round(
    (tokens.inputTokens - cached) * price.inputPerMillion +
      cached * cachedPrice +
      tokens.outputTokens * price.outputPerMillion,
  )
}

/** Millionths as the API shows an amount: a decimal number, or null. */
export function fromMicros(micros: number | null): number | null {
  return micros === null ? null : micros / 1_000_000
}

/** Tokens as people read them: `1,234,567`. */
export function formatTokens(tokens: number): string {
  return tokens.toLocaleString('en')
}

/** Millionths as an amount: at least two decimals, more only when they say something (`0.125`, `12.50`). */
export function formatCost(micros: number): string {
  const fixed = (micros / 1_000_000).toFixed(6).replace(/0+$/, '')
  const [whole = '0', fraction = ''] = fixed.split('.')
  return `${Number(whole).toLocaleString('en')}.${fraction.padEnd(2, '0')}`
}
