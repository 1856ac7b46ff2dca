// Retention: an organization may choose to keep threads only so many days after their last update (off by default).
// Its admins set the period in the web administration; the upkeep deletes what it lets go, as DELETE does (rows,
// then files), in batches. A thread with an answer queued or running is skipped, never stopped: it is in use, and its
// answer will update it anyway.
import type { UserRepository } from '../auth/users.repository'
import { type AuditOrigin, auditEntry, systemOrigin, target } from '../shared/audit'
import { invalidRequest } from '../shared/errors'
import type { Logger } from '../shared/log'
import { dayMs } from '../shared/time'
import type { BlobStore } from '../storage/blobs'
import type { ThreadRepository } from './repository'
import { removeFiles } from './threads'

export const retentionDaysRange = { min: 1, max: 3650 } as const

/** Threads looked up and deleted at a time; the event loop gets a turn between batches. */
export const retentionBatch = 100

/** A period from a form field: blank turns retention off; otherwise whole days within the range, or 400. */
export function parseRetentionDays(value: string): number | null {
  const trimmed = value.trim()
  if (trimmed === '') return null
  const days = Number(trimmed)
  const { min, max } = retentionDaysRange
  if (!/^\d+$/.test(trimmed) || days < min || days > max) {
    throw invalidRequest(
      `Enter a whole number of days from ${min} to ${max}, or leave the field empty to keep threads.`,
    )
  }
  return days
}

/** Sets (days) or turns off (null) the organization's retention period, and records it. */
export function setRetention(
  users: Pick<UserRepository, 'setRetention'>,
  organizationId: number,
  days: number | null,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  return users.setRetention(
    organizationId,
    days,
    auditEntry(origin, now, {
      organizationId,
      action: 'settings.retention_changed',
      target: target('organization', organizationId),
      detail: { days },
    }),
  )
}

export interface RetentionDeps {
  users: Pick<UserRepository, 'retentionPeriods'>
  threads: ThreadRepository
  blobs: Pick<BlobStore, 'delete'>
  log: Logger
}

/**
 * Deletes, in every organization with a retention period, the idle threads not updated for that long. Each deletion
 * checks again, in its own unit, that the thread is still idle and old, so a message sent meanwhile keeps it.
 * Returns how many threads went.
 */
export async function sweepRetention(deps: RetentionDeps, now: number): Promise<number> {
  let deleted = 0
  for (const { organizationId, days } of await deps.users.retentionPeriods()) {
    const before = now - days * dayMs
    let batch: string[]
    do {
      batch = await deps.threads.staleThreads(organizationId, before, retentionBatch)
      let progressed = false
      for (const threadId of batch) {
        const audit = auditEntry(systemOrigin, now, {
          organizationId,
          action: 'thread.deleted',
          target: target('thread', threadId),
          detail: { reason: 'retention', retention_days: days },
        })
        const files = await deps.threads.deleteThread(threadId, now, audit, before)
        if (files === null) continue // updated or busy since it was listed
        progressed = true
        deleted += 1
        await removeFiles(deps, threadId, files)
      }
      // A batch that deleted nothing would be listed again as it is: stop rather than loop.
      if (!progressed) break
      await new Promise((resolve) => setImmediate(resolve))
    } while (batch.length === retentionBatch)
  }
  return deleted
}
