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
import { and, asc, count, eq, isNull } from 'drizzle-orm'
import type { Db } from '../db/client'
import { oauthAuthorizationCodes, oauthGrants, oauthRegistrationTokens } from '../oauth/oauth.table'
import { conflict, forbidden, invalidRequest, notFound } from '../shared/errors'
import { hashPassword } from '../shared/security'
import { personalAccessTokens, type Role, roles, users } from './auth.table'
import { generateOneTimePassword } from './passwords'
import { createUser } from './service'
import { sessions } from './sessions.table'
import { forgetResolvedTokens } from './token-cache'

/** Who is acting: the signed-in owner or admin. */
export interface Actor {
  id: number
  role: Role
  organizationId: number
  organizationSlug: string
}

export interface Member {
  id: number
  sub: string
  email: string
  name: string | null
  role: Role
  createdAt: number
  /** Still holds the one-time password an admin handed out. */
  mustChangePassword: boolean
}

export function isRole(value: string): value is Role {
  return (roles as readonly string[]).includes(value)
}

export function isOrganizationAdmin(role: Role): boolean {
  return role === 'owner' || role === 'admin'
}

function requireManager(actor: Actor): void {
  if (!isOrganizationAdmin(actor.role)) throw forbidden('Only organization owners and admins can manage members')
}

function requireMayGrant(actor: Actor, role: Role): void {
  if (role === 'owner' && actor.role !== 'owner') throw forbidden('Only an owner can make someone an owner')
}

function requireMayManage(actor: Actor, target: Member): void {
  if (target.role === 'owner' && actor.role !== 'owner') throw forbidden('Only an owner can change or remove an owner')
}

function activeOwners(db: Db, organizationId: number): number {
  const row = db
    .select({ n: count() })
    .from(users)
    .where(and(eq(users.organizationId, organizationId), eq(users.role, 'owner'), isNull(users.removedAt)))
    .get()
  return row?.n ?? 0
}

function requireAnotherOwner(db: Db, organizationId: number, target: Member): void {
  if (target.role === 'owner' && activeOwners(db, organizationId) <= 1) {
    throw conflict('An organization needs at least one owner: make someone else an owner first')
  }
}

const memberColumns = {
  id: users.id,
  sub: users.sub,
  email: users.email,
  name: users.name,
  role: users.role,
  createdAt: users.createdAt,
  mustChangePassword: users.mustChangePassword,
}

/** The organization's current members (removed people are not listed), by email. */
export function listMembers(db: Db, organizationId: number): Member[] {
  return db
    .select(memberColumns)
    .from(users)
    .where(and(eq(users.organizationId, organizationId), isNull(users.removedAt)))
    .orderBy(asc(users.email))
    .all()
}

/** A current member of the actor's organization by their public ID; anyone else is simply not found. */
export function findMember(db: Db, organizationId: number, sub: string): Member {
  const row = db
    .select(memberColumns)
    .from(users)
    .where(and(eq(users.sub, sub), eq(users.organizationId, organizationId), isNull(users.removedAt)))
    .get()
  if (!row) throw notFound('Member')
  return row
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
async function restoreRemoved(db: Db, actor: Actor, input: NewMember, password: string): Promise<Member | null> {
  const email = input.email.trim().toLowerCase()
  const existing = db
    .select({ id: users.id, organizationId: users.organizationId, removedAt: users.removedAt })
    .from(users)
    .where(eq(users.email, email))
    .get()
  if (!existing) return null
  if (existing.removedAt === null || existing.organizationId !== actor.organizationId) {
    throw conflict(`A user with email ${email} already exists`)
  }
  db.update(users)
    .set({
      role: input.role,
      name: normalizedName(input.name),
      passwordHash: await hashPassword(password),
      mustChangePassword: true,
      removedAt: null,
    })
    .where(eq(users.id, existing.id))
    .run()
  forgetResolvedTokens(db)
  return findMemberById(db, existing.id)
}

function findMemberById(db: Db, id: number): Member {
  const row = db.select(memberColumns).from(users).where(eq(users.id, id)).get()
  if (!row) throw notFound('Member')
  return row
}

/** Adds a person to the actor's organization with a one-time password they must change at first sign-in. */
export async function addMember(db: Db, actor: Actor, input: NewMember, now: number): Promise<AddedMember> {
  requireManager(actor)
  requireMayGrant(actor, input.role)
  const oneTimePassword = generateOneTimePassword()
  const restored = await restoreRemoved(db, actor, input, oneTimePassword)
  if (restored) return { member: restored, oneTimePassword }
  const created = await createUser(
    db,
    {
      email: input.email,
      password: oneTimePassword,
      name: normalizedName(input.name),
      organizationSlug: actor.organizationSlug,
      role: input.role,
      mustChangePassword: true,
    },
    now,
  )
  return { member: findMemberById(db, created.id), oneTimePassword }
}

export function changeMemberRole(db: Db, actor: Actor, sub: string, role: Role): Member {
  requireManager(actor)
  const target = findMember(db, actor.organizationId, sub)
  requireMayManage(actor, target)
  requireMayGrant(actor, role)
  if (target.role === role) return target
  if (role !== 'owner') requireAnotherOwner(db, actor.organizationId, target)
  db.update(users).set({ role }).where(eq(users.id, target.id)).run()
  forgetResolvedTokens(db)
  return { ...target, role }
}

/** Removes a member and, in the same transaction, every session, token, grant and pending code they hold. */
export function removeMember(db: Db, actor: Actor, sub: string, now: number): Member {
  requireManager(actor)
  const target = findMember(db, actor.organizationId, sub)
  if (target.id === actor.id) throw conflict('You cannot remove yourself; ask another owner or admin')
  requireMayManage(actor, target)
  requireAnotherOwner(db, actor.organizationId, target)
  db.transaction((tx) => {
    tx.update(users).set({ removedAt: now, mustChangePassword: false }).where(eq(users.id, target.id)).run()
    tx.delete(sessions).where(eq(sessions.userId, target.id)).run()
    tx.update(personalAccessTokens)
      .set({ revokedAt: now })
      .where(and(eq(personalAccessTokens.userId, target.id), isNull(personalAccessTokens.revokedAt)))
      .run()
    tx.update(oauthGrants)
      .set({ revokedAt: now })
      .where(and(eq(oauthGrants.userId, target.id), isNull(oauthGrants.revokedAt)))
      .run()
    // An authorization code not yet exchanged would otherwise open a fresh grant after removal.
    tx.delete(oauthAuthorizationCodes).where(eq(oauthAuthorizationCodes.userId, target.id)).run()
    tx.delete(oauthRegistrationTokens)
      .where(and(eq(oauthRegistrationTokens.userId, target.id), isNull(oauthRegistrationTokens.usedAt)))
      .run()
  })
  forgetResolvedTokens(db)
  return target
}
