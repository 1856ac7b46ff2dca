/** A JSON object (not an array, not null): what tool arguments, schemas and stored JSON columns must be. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
