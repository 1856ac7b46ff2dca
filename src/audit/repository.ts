// The storage contract of the audit log. Events are appended only: by the acts' own repositories, inside their
// transactions (the store hands them the appender of repository.sqlite.ts or repository.pg.ts), or here, alone, for
// acts that write nothing else (a failed sign-in, an export). Nothing but retention deletes an event, and it deletes
// the oldest part of a chain only, keeping the last deleted event's place and hash as the kept part's anchor.
import type { AuditEntry } from '../shared/audit'
import type { ChainHead, StoredEvent } from './chain'

/** What a list of events is narrowed to; every filter is optional and they combine. */
export interface EventFilter {
  /** Events by this person, whatever credential they used. */
  actorUserId?: number
  /** Events by this kind of actor (`system`, `anonymous`, or a kind of credential). */
  actorKind?: string
  /** Any of these actions (one, or a family's: `member.*` is member.added, member.role_changed, …). */
  actions?: string[]
  target?: { kind: string; id?: string }
  /** Epoch ms, inclusive. */
  from?: number
  /** Epoch ms, exclusive. */
  to?: number
}

export interface AuditRepository {
  /** Appends one event in a transaction of its own: for acts that write nothing else. */
  append(entry: AuditEntry): Promise<void>

  /** The organization's events that match, newest (highest seq) first, starting below `beforeSeq`; at most `limit`. */
  list(organizationId: number, filter: EventFilter, page: { limit: number; beforeSeq?: number }): Promise<StoredEvent[]>

  /** The place of the event with this ID in the organization's chain, or null when it has no such event. */
  seqOf(organizationId: number, eventId: string): Promise<number | null>

  /** The chain's head, or null before its first event. */
  head(organizationId: number): Promise<ChainHead | null>

  /** Every chain's head, by organization (0, events of no organization, first). */
  heads(): Promise<ChainHead[]>

  /** Events of the chain after `afterSeq` in seq order, at most `limit`: what audit:verify reads, batch by batch. */
  readChain(organizationId: number, afterSeq: number, limit: number): Promise<StoredEvent[]>

  /** Organizations that have events but no head: a deleted head is a broken chain. */
  headlessChains(): Promise<number[]>

  /** The organization's audit retention period in days. */
  retentionOf(organizationId: number): Promise<number>

  /** Every chain's retention period, for the upkeep. */
  retentionPeriods(): Promise<{ organizationId: number; days: number }[]>

  /** Sets the organization's audit retention period, recording `entry` with it. */
  setRetention(organizationId: number, days: number, entry: AuditEntry): Promise<void>

  /**
   * Deletes the chain's oldest events, through the last one older than `before`, and moves the kept part's anchor to
   * that event's place and hash, recording `entry(count, through)` (audit.pruned, which names that anchor) in the
   * same transaction. The number of events deleted (0: nothing was old enough, nothing recorded).
   */
  prune(
    organizationId: number,
    before: number,
    entry: (deleted: number, through: { seq: number; hash: string }) => AuditEntry,
  ): Promise<number>
}
