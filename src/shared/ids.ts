// UUIDv7 for threads, messages and attachments: the ID order is the creation order.
export function newId(): string {
  return Bun.randomUUIDv7()
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(value: string): boolean {
  return uuidPattern.test(value)
}

/** When a UUIDv7 was made (ms since the epoch, from its first 48 bits); null for an ID of another version. */
export function idTime(id: string): number | null {
  if (!isUuid(id) || id[14] !== '7') return null
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
}
