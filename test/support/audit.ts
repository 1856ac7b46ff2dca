// The audit log as tests see it: an event for repository calls a test makes directly (as the operator would), and
// the events an organization's log holds, oldest first, read through the store on either backend.
import { and, asc, eq } from 'drizzle-orm'
import type { StoredEvent } from '../../src/audit/chain'
import type { Role } from '../../src/auth/model'
import {
  type AuditAction,
  type AuditEntry,
  anonymousActor,
  auditEntry,
  noOrganization,
  systemOrigin,
} from '../../src/shared/audit'
import type { Store } from '../../src/store'
import type { Harness } from './helpers'

/** An event by the system, for a repository write a test makes directly (setting up, as the operator would). */
export function testEvent(action: AuditAction, organizationId = noOrganization, at = Date.now()): AuditEntry {
  return auditEntry(systemOrigin, at, { organizationId, action, target: null })
}

/** The organization's events (0: those of none), oldest first, as stored. */
export async function eventsOf(h: Pick<Harness, 'orm' | 'tables'>, organizationId: number): Promise<StoredEvent[]> {
  const { auditEvents } = h.tables
  return (await h.orm
    .select()
    .from(auditEvents)
    .where(eq(auditEvents.organizationId, organizationId))
    .orderBy(asc(auditEvents.seq))) as StoredEvent[]
}

/** The organization's events of one action, oldest first. */
export async function eventsNamed(
  h: Pick<Harness, 'orm' | 'tables'>,
  organizationId: number,
  action: AuditAction,
): Promise<StoredEvent[]> {
  const { auditEvents } = h.tables
  return (await h.orm
    .select()
    .from(auditEvents)
    .where(and(eq(auditEvents.organizationId, organizationId), eq(auditEvents.action, action)))
    .orderBy(asc(auditEvents.seq))) as StoredEvent[]
}

/** The origin of acts a test makes directly: the system's (the operator's CLI acts the same way). */
export const testOrigin = systemOrigin

/** The origin of a sign-in a test makes directly: nobody yet, from nowhere. */
export const signInOrigin = { ...systemOrigin, actor: anonymousActor }

/** Whom a personal access token a test makes is for: the user's organization and role, as the service needs them. */
export async function tokenHolder(
  store: Pick<Store, 'users'>,
  userId: number,
): Promise<{ id: number; organizationId: number; role: Role }> {
  const member = await store.users.findMemberById(userId)
  if (!member) throw new Error(`no user ${userId}`)
  return member
}
