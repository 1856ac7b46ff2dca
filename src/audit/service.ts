// The audit log's behaviour: reading it (owners and admins of the organization, through the API with `audit:read` or
// the administration page), downloading it, checking its hash chains (`bun run cli audit:verify`), and its retention.
// Writing it is every act's own repository's business (shared/audit.ts says why).

import { isOrganizationAdmin } from '../auth/members'
import type { Role } from '../auth/model'
import type { UserRepository } from '../auth/users.repository'
import {
  type ActorKind,
  type AuditOrigin,
  auditActions,
  auditEntry,
  isAuditAction,
  systemOrigin,
  type TargetKind,
  target,
  targetKinds,
} from '../shared/audit'
import { csvField, csvText } from '../shared/csv'
import { forbidden, invalidRequest } from '../shared/errors'
import { dateOnly, dayMs, parseInstant, toIso } from '../shared/time'
import { type Break, ChainCheck, type ChainHead, type StoredEvent } from './chain'
import { type AuditModel, maxAuditPage } from './model'
import type { AuditRepository, EventFilter } from './repository'

export interface AuditReadDeps {
  audit: AuditRepository
  /** An email in the actor filter names a person of the organization. */
  users: Pick<UserRepository, 'findByEmail'>
}

/** Who reads: the log is their organization's, for its owners and admins only. */
export interface AuditReader {
  organizationId: number
  role: Role
}

function requireReader(reader: AuditReader): void {
  if (!isOrganizationAdmin(reader.role)) throw forbidden('Only organization owners and admins can read the audit log')
}

/** The filters of a query (the API's and the page's are the same), checked: an unknown action or kind is 400. */
export type FilterQuery = Pick<AuditModel.listQuery, 'actor' | 'action' | 'target' | 'from' | 'to'>

/** The actions of `family.*`, or the one action named; 400 for anything else. */
function actionsOf(value: string): string[] {
  if (value.endsWith('.*')) {
    const prefix = value.slice(0, -1)
    const family = Object.keys(auditActions).filter((action) => action.startsWith(prefix))
    if (family.length === 0) throw invalidRequest(`No action starts with ${prefix}`)
    return family
  }
  if (!isAuditAction(value)) throw invalidRequest(`Unknown action ${value}; docs/audit.md lists them`)
  return [value]
}

/**
 * The filter a query asks for. An actor given by email is looked up in the organization: an email of someone
 * elsewhere (or of nobody) matches no event, as if nobody by that name had acted, without saying which it was.
 */
export async function eventFilter(
  deps: AuditReadDeps,
  organizationId: number,
  query: FilterQuery,
): Promise<EventFilter> {
  const filter: EventFilter = {}
  const actor = query.actor?.trim()
  if (actor) {
    if (/^\d+$/.test(actor)) filter.actorUserId = Number(actor)
    else if (actor === 'system' || actor === 'anonymous') filter.actorKind = actor
    else if (actor.includes('@')) {
      const user = await deps.users.findByEmail(actor.toLowerCase())
      filter.actorUserId = user && user.organizationId === organizationId ? user.id : -1
    } else throw invalidRequest('actor must be a user ID, an email, system or anonymous')
  }
  const action = query.action?.trim()
  if (action) filter.actions = actionsOf(action)
  const wanted = query.target?.trim()
  if (wanted) {
    const colon = wanted.indexOf(':')
    const kind = colon < 0 ? wanted : wanted.slice(0, colon)
    if (!(targetKinds as readonly string[]).includes(kind)) {
      throw invalidRequest(`target must start with one of ${targetKinds.join(', ')}`)
    }
    filter.target = colon < 0 ? { kind } : { kind, id: wanted.slice(colon + 1) }
  }
  if (query.from) filter.from = parseInstant(query.from, 'from')
  if (query.to) filter.to = parseInstant(query.to, 'to') + (dateOnly.test(query.to) ? dayMs : 0)
  if (filter.from !== undefined && filter.to !== undefined && filter.from >= filter.to) {
    throw invalidRequest('from must be before to')
  }
  return filter
}

/** An event as the API and the downloads show it. */
export function toEvent(row: StoredEvent): AuditModel.event {
  return {
    id: row.id,
    seq: row.seq,
    at: toIso(row.at),
    action: row.action as AuditModel.event['action'],
    outcome: row.outcome as AuditModel.event['outcome'],
    actor: {
      kind: row.actorKind as ActorKind,
      id: row.actorId,
      user_id: row.actorUserId,
    },
    address: row.address,
    user_agent: row.userAgent,
    target:
      row.targetKind === null || row.targetId === null
        ? null
        : { kind: row.targetKind as TargetKind, id: row.targetId },
    organization_id: row.organizationId,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
    prev_hash: row.prevHash,
    hash: row.hash,
  }
}

/**
 * A page of the organization's events, newest first: keyset pages as the thread list's (`after` the previous page's
 * `last_id`, `has_more`), so pages miss nothing and repeat nothing while events are added.
 */
export async function listEvents(
  deps: AuditReadDeps,
  reader: AuditReader,
  query: AuditModel.listQuery,
): Promise<AuditModel.eventList> {
  requireReader(reader)
  const filter = await eventFilter(deps, reader.organizationId, query)
  const limit = Math.min(query.limit ?? 50, maxAuditPage)
  let beforeSeq: number | undefined
  if (query.after !== undefined) {
    const seq = await deps.audit.seqOf(reader.organizationId, query.after.toLowerCase())
    if (seq === null) throw invalidRequest('after does not name an event of your organization')
    beforeSeq = seq
  }
  const rows = await deps.audit.list(reader.organizationId, filter, { limit: limit + 1, beforeSeq })
  const data = rows.slice(0, limit).map(toEvent)
  return {
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: rows.length > limit,
    limit,
  }
}

/** Events read at a time for a download. */
const downloadBatch = 500

/** Every event the filter matches, newest first, batch by batch: what a download streams. */
async function* matchingEvents(
  audit: AuditRepository,
  organizationId: number,
  filter: EventFilter,
): AsyncGenerator<StoredEvent[]> {
  let beforeSeq: number | undefined
  for (;;) {
    const rows = await audit.list(organizationId, filter, { limit: downloadBatch, beforeSeq })
    if (rows.length > 0) yield rows
    if (rows.length < downloadBatch) return
    beforeSeq = rows.at(-1)?.seq
  }
}

export const csvColumns = [
  'id',
  'seq',
  'at',
  'action',
  'outcome',
  'actor_kind',
  'actor_id',
  'actor_user_id',
  'address',
  'user_agent',
  'target_kind',
  'target_id',
  'detail',
  'prev_hash',
  'hash',
] as const

/** One event as a CSV line; text others chose (user agents, names in the detail) cannot run as a formula. */
export function csvLine(row: StoredEvent): string {
  return [
    csvField(row.id),
    csvField(row.seq),
    csvField(toIso(row.at)),
    csvField(row.action),
    csvField(row.outcome),
    csvField(row.actorKind),
    csvText(row.actorId),
    csvField(row.actorUserId),
    csvText(row.address),
    csvText(row.userAgent),
    csvField(row.targetKind),
    csvText(row.targetId),
    csvText(row.detail),
    csvField(row.prevHash),
    csvField(row.hash),
  ].join(',')
}

/** One event as a line of JSON Lines: the API's object. */
export function jsonLine(row: StoredEvent): string {
  return JSON.stringify(toEvent(row))
}

export type DownloadFormat = 'csv' | 'jsonl'

/**
 * A download of every matching event (CSV with a header row, or JSON Lines), streamed batch by batch. The reader and
 * the filters are checked before it starts, so a refusal is an answer of its own rather than a broken file.
 */
export async function downloadEvents(
  deps: AuditReadDeps,
  reader: AuditReader,
  query: FilterQuery,
  format: DownloadFormat,
): Promise<ReadableStream<string>> {
  requireReader(reader)
  const batches = matchingEvents(
    deps.audit,
    reader.organizationId,
    await eventFilter(deps, reader.organizationId, query),
  )
  const [line, end] = format === 'csv' ? [csvLine, '\r\n'] : [jsonLine, '\n']
  return new ReadableStream<string>({
    start(controller) {
      if (format === 'csv') controller.enqueue(`${csvColumns.join(',')}\r\n`)
    },
    async pull(controller) {
      const next = await batches.next()
      if (next.done) controller.close()
      else controller.enqueue(`${next.value.map(line).join(end)}${end}`)
    },
    async cancel() {
      await batches.return(undefined)
    },
  })
}

// ---------------------------------------------------------------------------------------------------------
// Retention

/**
 * An organization keeps audit events at least 30 days: an admin cannot make the log forget what they just did by
 * shortening it to a day (the change itself is recorded, and outlives the events it lets go for 30 days).
 */
export const auditRetentionRange = { min: 30, max: 3650 } as const

/** A period from a form field or the CLI: whole days within the range, or 400. */
export function parseAuditRetentionDays(value: string): number {
  const trimmed = value.trim()
  const days = Number(trimmed)
  const { min, max } = auditRetentionRange
  if (!/^\d+$/.test(trimmed) || days < min || days > max) {
    throw invalidRequest(`Enter a whole number of days from ${min} to ${max}.`)
  }
  return days
}

/** Sets how long the organization keeps its audit events, and records it in the same transaction. */
export function setAuditRetention(
  audit: AuditRepository,
  organizationId: number,
  days: number,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  return audit.setRetention(
    organizationId,
    days,
    auditEntry(origin, now, {
      organizationId,
      action: 'settings.audit_retention_changed',
      target: target('organization', organizationId),
      detail: { days },
    }),
  )
}

/**
 * Deletes, in every chain, the events older than its retention period (the upkeep's hourly sweep); how many went.
 * Each chain is cut through its last event older than the period and records `audit.pruned`, which names the last
 * deleted event's place: verification starts after it (docs/audit.md, Retention).
 */
export async function pruneAuditLog(audit: AuditRepository, now: number): Promise<number> {
  let deleted = 0
  for (const { organizationId, days } of await audit.retentionPeriods()) {
    deleted += await audit.prune(organizationId, now - days * dayMs, (count, through) =>
      auditEntry(systemOrigin, now, {
        organizationId,
        action: 'audit.pruned',
        target: target('organization', organizationId),
        detail: { deleted: count, through_seq: through.seq, through_hash: through.hash, retention_days: days },
      }),
    )
  }
  return deleted
}

// ---------------------------------------------------------------------------------------------------------
// Verification

/** What `audit:verify` found in one chain. */
export interface ChainReport {
  organizationId: number
  /** Events checked. */
  events: number
  /** The kept part's first and last places; null when the chain has none. */
  firstSeq: number | null
  lastSeq: number | null
  /** The hash of the last event: kept somewhere else, it shows whether the chain was rewritten since. */
  headHash: string | null
  broken: BrokenEvent | null
}

export interface BrokenEvent {
  /** The first event that breaks the chain (for events missing at the end, the last one present), if any. */
  event: Pick<StoredEvent, 'id' | 'seq' | 'action' | 'at'> | null
  reason: string
}

/** Events read at a time while verifying. */
const verifyBatch = 1000

function describe(found: Break): BrokenEvent {
  const at = (event: StoredEvent) => ({ id: event.id, seq: event.seq, action: event.action, at: event.at })
  switch (found.kind) {
    case 'altered':
      return { event: at(found.event), reason: 'its hash does not match its contents: the event was changed' }
    case 'unlinked':
      return {
        event: at(found.event),
        reason: 'it does not name the hash of the event before it: that event was changed, removed or replaced',
      }
    case 'missing_before':
      return {
        event: at(found.event),
        reason: `the events before it from place ${found.expectedSeq} on are missing`,
      }
    case 'missing_after':
      return {
        event: found.last && at(found.last),
        reason: `the chain's head names events after it (from place ${found.expectedSeq}) that are missing`,
      }
    case 'no_head':
      return { event: at(found.event), reason: "its organization's chain head is missing" }
  }
}

/**
 * Whether the anchor is one retention left. The head's pruned place and hash are a row anyone who can write the
 * database edits in one statement, so they prove nothing alone: every prune records, after deleting, `audit.pruned`
 * naming them, and the newest such event (chained, so not forged without rewriting the chain from there) must.
 */
async function anchorRecorded(audit: AuditRepository, anchor: ChainHead): Promise<boolean> {
  if (anchor.prunedSeq === 0) return true
  const [record] = await audit.list(anchor.organizationId, { actions: ['audit.pruned'] }, { limit: 1 })
  if (!record || record.seq <= anchor.prunedSeq) return false
  const detail = JSON.parse(record.detail) as { through_seq?: unknown; through_hash?: unknown }
  return detail.through_seq === anchor.prunedSeq && detail.through_hash === anchor.prunedHash
}

/** The anchor the chain is checked from, once its prune is on record; a prune since it was read moves it, once. */
async function checkedAnchor(audit: AuditRepository, head: ChainHead): Promise<ChainHead | BrokenEvent> {
  if (await anchorRecorded(audit, head)) return head
  const latest = await audit.head(head.organizationId)
  if (latest && latest.prunedSeq !== head.prunedSeq && (await anchorRecorded(audit, latest))) return latest
  const anchor = latest ?? head
  const [first] = await audit.readChain(head.organizationId, anchor.prunedSeq, 1)
  return {
    event: first ? pick(first) : null,
    reason: `no kept audit.pruned event records that retention deleted the events through place ${anchor.prunedSeq}: they were removed by hand`,
  }
}

/** Checks one chain from its kept part's anchor to its head, reading in batches while the server may be writing. */
async function verifyChain(audit: AuditRepository, head: ChainHead): Promise<ChainReport> {
  const report = (check: ChainCheck, broken: BrokenEvent | null, first: number | null): ChainReport => ({
    organizationId: head.organizationId,
    events: check.count,
    firstSeq: first,
    lastSeq: check.last?.seq ?? null,
    headHash: check.last?.hash ?? null,
    broken,
  })
  const checked = await checkedAnchor(audit, head)
  if (!('organizationId' in checked)) return report(new ChainCheck(head), checked, checked.event?.seq ?? null)
  let anchor = checked
  let check = new ChainCheck(anchor)
  let first: number | null = null
  let waited = false
  for (;;) {
    const rows = await audit.readChain(head.organizationId, check.lastSeq, verifyBatch)
    if (rows.length === 0) {
      const latest = (await audit.head(head.organizationId)) ?? anchor
      if (check.reachedHead(latest)) return report(check, null, first)
      // An append committed after the read above: read again, once per head seen.
      if (latest.lastSeq > check.lastSeq && !waited) {
        waited = true
        continue
      }
      const broken =
        latest.lastSeq < check.lastSeq || (latest.lastSeq === check.lastSeq && latest.lastHash !== check.last?.hash)
          ? { event: check.last && pick(check.last), reason: "the chain's head does not name it as the last event" }
          : describe({ kind: 'missing_after', last: check.last, expectedSeq: check.lastSeq + 1 })
      return report(check, broken, first)
    }
    waited = false
    first ??= rows[0]?.seq ?? null
    const found = check.feed(rows)
    if (found === null) continue
    // Retention may have moved the anchor since it was read: start again from the new one, once.
    if (found.kind === 'missing_before' && check.count === 0 && anchor === head) {
      const latest = await audit.head(head.organizationId)
      if (latest && latest.prunedSeq !== anchor.prunedSeq) {
        const moved = await checkedAnchor(audit, latest)
        if (!('organizationId' in moved)) return report(check, moved, moved.event?.seq ?? null)
        anchor = moved
        check = new ChainCheck(anchor)
        first = null
        continue
      }
    }
    return report(check, describe(found), first)
  }
}

function pick(event: StoredEvent): BrokenEvent['event'] {
  return { id: event.id, seq: event.seq, action: event.action, at: event.at }
}

/**
 * Checks every chain (or one organization's): each event must be the next place after the kept part's anchor, name
 * the previous event's hash and hash to its own; the last must be the one the head names. Events whose chain has no
 * head are a broken chain too.
 */
export async function verifyAuditLog(audit: AuditRepository, organizationId?: number): Promise<ChainReport[]> {
  const heads =
    organizationId === undefined
      ? await audit.heads()
      : [await audit.head(organizationId)].filter((head): head is ChainHead => head !== null)
  const reports: ChainReport[] = []
  for (const head of heads) reports.push(await verifyChain(audit, head))
  for (const headless of await audit.headlessChains()) {
    if (organizationId !== undefined && headless !== organizationId) continue
    const [event] = await audit.readChain(headless, 0, 1)
    reports.push({
      organizationId: headless,
      events: 0,
      firstSeq: event?.seq ?? null,
      lastSeq: null,
      headHash: null,
      broken: event ? describe({ kind: 'no_head', event }) : null,
    })
  }
  return reports
}
