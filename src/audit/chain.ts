// The hash chain of the audit log (docs/audit.md, "Tamper evidence"): each event's SHA-256 covers its every field and
// the hash of the event before it in its organization, so changing, removing or reordering one event breaks every
// hash from there on, and `bun run cli audit:verify` names the first that no longer matches. SHA-256 is Bun's native
// one, synchronous, so that SQLite's synchronous transactions can append.
import type { AuditDetail, AuditDetailValue, AuditEntry } from '../shared/audit'

/** The encoding's version, the first value hashed: a later encoding names another and old events keep theirs. */
export const chainVersion = 'threadhouse-audit-1'

/** An event as stored: the entry's fields in columns, with its place in the chain and its hashes. */
export interface StoredEvent {
  id: string
  organizationId: number
  seq: number
  at: number
  action: string
  outcome: string
  actorKind: string
  actorId: string | null
  actorUserId: number | null
  address: string | null
  userAgent: string | null
  targetKind: string | null
  targetId: string | null
  /** Canonical JSON (canonicalDetail), the exact text hashed. */
  detail: string
  prevHash: string
  hash: string
}

/**
 * The detail object as text with its keys in code-point order and no whitespace, as JSON.stringify writes values:
 * the same facts always give the same bytes. Only whole numbers are allowed, whose text every JSON writer agrees on.
 */
export function canonicalDetail(detail: AuditDetail): string {
  const keys = Object.keys(detail).sort()
  for (const key of keys) checkValue(key, detail[key] as AuditDetailValue)
  return `{${keys.map((key) => `${JSON.stringify(key)}:${JSON.stringify(detail[key])}`).join(',')}}`
}

function checkValue(key: string, value: AuditDetailValue): void {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    throw new Error(`audit detail ${key} must be a whole number, not ${value}`)
  }
  if (Array.isArray(value) && !value.every((item) => typeof item === 'string')) {
    throw new Error(`audit detail ${key} must list strings only`)
  }
}

/**
 * The bytes an event's hash covers: a JSON array, written as JSON.stringify writes it (no whitespace), of the
 * version, the chain and place, the ID, time (epoch ms), action, outcome, the actor's kind, credential ID and user,
 * address, user agent, the target's kind and ID, the detail's canonical text (as a string) and the previous hash.
 */
export function canonicalEncoding(event: Omit<StoredEvent, 'hash'>): string {
  return JSON.stringify([
    chainVersion,
    event.organizationId,
    event.seq,
    event.id,
    event.at,
    event.action,
    event.outcome,
    event.actorKind,
    event.actorId,
    event.actorUserId,
    event.address,
    event.userAgent,
    event.targetKind,
    event.targetId,
    event.detail,
    event.prevHash,
  ])
}

export function eventHash(event: Omit<StoredEvent, 'hash'>): string {
  return Bun.CryptoHasher.hash('sha256', canonicalEncoding(event), 'hex')
}

/** The entry as the event at `seq` of its chain, after the event whose hash is `prevHash`. */
export function sealEvent(entry: AuditEntry, seq: number, prevHash: string): StoredEvent {
  const unsealed: Omit<StoredEvent, 'hash'> = {
    id: Bun.randomUUIDv7(),
    organizationId: entry.organizationId,
    seq,
    at: entry.at,
    action: entry.action,
    outcome: entry.outcome,
    actorKind: entry.actor.kind,
    actorId: entry.actor.id,
    actorUserId: entry.actor.userId,
    address: entry.address,
    userAgent: entry.userAgent,
    targetKind: entry.target?.kind ?? null,
    targetId: entry.target?.id ?? null,
    detail: canonicalDetail(entry.detail),
    prevHash,
  }
  return { ...unsealed, hash: eventHash(unsealed) }
}

/** Where a chain's kept part starts and ends, as its head row says. */
export interface ChainHead {
  organizationId: number
  lastSeq: number
  lastHash: string
  prunedSeq: number
  prunedHash: string
}

/** Why an event breaks its chain. */
export type Break =
  | { kind: 'altered'; event: StoredEvent }
  | { kind: 'unlinked'; event: StoredEvent }
  | { kind: 'missing_before'; event: StoredEvent; expectedSeq: number }
  | { kind: 'missing_after'; last: StoredEvent | null; expectedSeq: number }
  | { kind: 'no_head'; event: StoredEvent }

/**
 * Checks events read in seq order against each other, from where the head says the kept part starts: each must be the
 * next place, name the previous event's hash, and hash to its own. Fed in batches; `end` checks the head's last place.
 */
export class ChainCheck {
  private seq: number
  private hash: string
  last: StoredEvent | null = null
  count = 0

  constructor(head: Pick<ChainHead, 'prunedSeq' | 'prunedHash'>) {
    this.seq = head.prunedSeq
    this.hash = head.prunedHash
  }

  /** The first break in these events, or null when they continue the chain. */
  feed(events: readonly StoredEvent[]): Break | null {
    for (const event of events) {
      if (event.seq !== this.seq + 1) return { kind: 'missing_before', event, expectedSeq: this.seq + 1 }
      if (event.prevHash !== this.hash) return { kind: 'unlinked', event }
      if (eventHash(event) !== event.hash) return { kind: 'altered', event }
      this.seq = event.seq
      this.hash = event.hash
      this.last = event
      this.count += 1
    }
    return null
  }

  /** Whether the events read so far end where the head says the chain ends. */
  reachedHead(head: Pick<ChainHead, 'lastSeq' | 'lastHash'>): boolean {
    return this.seq === head.lastSeq && this.hash === head.lastHash
  }

  /** The last place checked. */
  get lastSeq(): number {
    return this.seq
  }
}
