// Managing an organization's members from the administration pages: listing them, adding one with a one-time
// password, changing roles and removing people. Owners and admins manage; the rules below are the only place
// that decides who may do what to whom.
//
// - Owners may do everything; admins may add, re-role and remove admins and members, but may neither give
//   the owner role nor touch an owner.
// - An organization always keeps at least one owner: the last one can be neither demoted nor removed.
// - Nobody removes themselves here (another owner or admin does it), so nobody locks themselves out by a slip.
// - Removal keeps the user row (their threads need an owner) and ends every way in: sessions, personal access
//   tokens, OAuth grants, unexchanged authorization codes and unused registration tokens. Their threads stay
//   as they were: public ones readable by the organization, private ones by nobody, none writable.
import { type AuditEntry, type AuditFacts, type AuditOrigin, auditEntry, target } from '../shared/audit'
import { conflict, forbidden, invalidRequest, notFound } from '../shared/errors'
import { hashPassword } from '../shared/security'
import { type Role, roles } from './model'
import { generateOneTimePassword } from './passwords'
import { createUser, normalizedEmail } from './users'
import type { Member, UserRepository } from './users.repository'

export type { Member } from './users.repository'

/** Who is acting: the signed-in owner or admin, and the request, for the audit log. */
export interface Actor {
  id: number
  role: Role
  organizationId: number
  organizationSlug: string
  origin: AuditOrigin
}

/** The event of an act by `actor` on a member, in their organization. */
function memberEvent(actor: Actor, now: number, facts: Omit<AuditFacts, 'organizationId'>): AuditEntry {
  return auditEntry(actor.origin, now, { organizationId: actor.organizationId, ...facts })
}

export function isRole(value: string): value is Role {
  return (roles as readonly string[]).includes(value)
}

/** The one admin check: owners and admins administer their organization (pages, members, clients, webhooks). */
export function isOrganizationAdmin(role: Role): boolean {
  return role === 'owner' || role === 'admin'
}

/** Refuses (403) anyone but an owner or admin; `task` says what only they may do ("manage members"). */
export function requireOrganizationAdmin(role: Role, task: string): void {
  if (!isOrganizationAdmin(role)) throw forbidden(`Only organization owners and admins can ${task}`)
}

function requireManager(actor: Actor): void {
  requireOrganizationAdmin(actor.role, 'manage members')
}

/** Whether someone of `actorRole` may hand out `role`: only owners make owners. */
export function mayGrant(actorRole: Role, role: Role): boolean {
  return role !== 'owner' || actorRole === 'owner'
}

/** Whether someone of `actorRole` may change or remove a person of `targetRole`: only owners touch owners. */
export function mayManage(actorRole: Role, targetRole: Role): boolean {
  return targetRole !== 'owner' || actorRole === 'owner'
}

function requireMayGrant(actor: Actor, role: Role): void {
  if (!mayGrant(actor.role, role)) throw forbidden('Only an owner can make someone an owner')
}

function requireMayManage(actor: Actor, target: Member): void {
  if (!mayManage(actor.role, target.role)) throw forbidden('Only an owner can change or remove an owner')
}

const lastOwner = () => conflict('An organization needs at least one owner: make someone else an owner first')

/** The organization's current members (removed people are not listed), by email. */
export function listMembers(users: UserRepository, organizationId: number): Promise<Member[]> {
  return users.listMembers(organizationId)
}

/** A current member of the actor's organization by their public ID; anyone else is simply not found. */
export async function findMember(users: UserRepository, organizationId: number, sub: string): Promise<Member> {
  const member = await users.findMember(organizationId, sub)
  if (!member) throw notFound('Member')
  return member
}

export interface NewMember {
  email: string
  name: string | null
  role: Role
}

export interface AddedMember {
  member: Member
  /** Shown once to the admin; the member must replace it at first sign-in. */
  oneTimePassword: string
}

function normalizedName(name: string | null): string | null {
  const trimmed = name?.trim() ?? ''
  if (trimmed.length > 100) throw invalidRequest('The name must be at most 100 characters')
  return trimmed === '' ? null : trimmed
}

/**
 * Someone removed from this organization earlier comes back as the same user, so their threads are theirs
 * again; any other existing email is a conflict.
 */
async function restoreRemoved(
  users: UserRepository,
  actor: Actor,
  input: NewMember,
  password: string,
  now: number,
): Promise<Member | null> {
  const email = normalizedEmail(input.email)
  const existing = await users.findByEmail(email)
  if (!existing) return null
  const taken = () => conflict(`A user with email ${email} already exists`)
  if (existing.removedAt === null || existing.organizationId !== actor.organizationId) throw taken()
  const restored = await users.restore(
    existing.id,
    { role: input.role, name: normalizedName(input.name), passwordHash: await hashPassword(password) },
    memberEvent(actor, now, {
      action: 'member.added',
      target: target('user', existing.id),
      detail: { email, role: input.role, restored: true },
    }),
  )
  // Restored by someone else meanwhile: present now, like any other member.
  if (!restored) throw taken()
  return restored
}

async function findMemberById(users: UserRepository, id: number): Promise<Member> {
  const member = await users.findMemberById(id)
  if (!member) throw notFound('Member')
  return member
}

/** Adds a person to the actor's organization with a one-time password they must change at first sign-in. */
export async function addMember(
  users: UserRepository,
  actor: Actor,
  input: NewMember,
  now: number,
): Promise<AddedMember> {
  requireManager(actor)
  requireMayGrant(actor, input.role)
  const oneTimePassword = generateOneTimePassword()
  const restored = await restoreRemoved(users, actor, input, oneTimePassword, now)
  if (restored) return { member: restored, oneTimePassword }
  const created = await createUser(
    users,
    {
      email: input.email,
      password: oneTimePassword,
      name: normalizedName(input.name),
      organizationSlug: actor.organizationSlug,
      role: input.role,
      mustChangePassword: true,
    },
    now,
    actor.origin,
  )
  return { member: await findMemberById(users, created.id), oneTimePassword }
}

export async function changeMemberRole(
  users: UserRepository,
  actor: Actor,
  sub: string,
  role: Role,
  now: number,
): Promise<Member> {
  requireManager(actor)
  const member = await findMember(users, actor.organizationId, sub)
  requireMayManage(actor, member)
  requireMayGrant(actor, role)
  if (member.role === role) return member
  const outcome = await users.changeRole(actor.organizationId, member.id, role, (previous) =>
    memberEvent(actor, now, {
      action: 'member.role_changed',
      target: target('user', member.id),
      detail: { from: previous, to: role },
    }),
  )
  if (outcome === 'not_found') throw notFound('Member')
  if (outcome === 'last_owner') throw lastOwner()
  return { ...member, role }
}

/** Removes a member and, in the same unit of work, every session, token, grant and pending code they hold. */
export async function removeMember(users: UserRepository, actor: Actor, sub: string, now: number): Promise<Member> {
  requireManager(actor)
  const member = await findMember(users, actor.organizationId, sub)
  if (member.id === actor.id) throw conflict('You cannot remove yourself; ask another owner or admin')
  requireMayManage(actor, member)
  const outcome = await users.remove(actor.organizationId, member.id, now, (role) =>
    memberEvent(actor, now, {
      action: 'member.removed',
      target: target('user', member.id),
      detail: { email: member.email, role },
    }),
  )
  if (outcome === 'not_found') throw notFound('Member')
  if (outcome === 'last_owner') throw lastOwner()
  return member
}
