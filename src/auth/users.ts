// Users and their organizations: creating a user (and their organization, for a new slug) and finding one by
// the email they sign in with.
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { conflict, invalidRequest } from '../shared/errors'
import { hashPassword } from '../shared/security'
import type { Role } from './model'
import { minimumPasswordLength } from './passwords'
import type { UserRecord, UserRepository } from './users.repository'

export interface NewUser {
  email: string
  password: string
  name?: string | null
  organizationSlug: string
  role: Role
  /** For a one-time password chosen by someone else: the person must replace it at first sign-in. */
  mustChangePassword?: boolean
}

/** Emails are stored lower-cased, so sign-in is case-insensitive. */
export function normalizedEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** Creates the user (and their organization, for a new slug) and records `member.added` with them. */
export async function createUser(
  users: UserRepository,
  input: NewUser,
  now: number,
  origin: AuditOrigin,
): Promise<{ id: number; sub: string; organizationId: number }> {
  const email = normalizedEmail(input.email)
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw invalidRequest(`Invalid email "${input.email}"`)
  if (input.password.length < minimumPasswordLength) {
    throw invalidRequest(`Password must be at least ${minimumPasswordLength} characters`)
  }
  const sub = Bun.randomUUIDv7()
  const slug = input.organizationSlug
  const created = await users.create(
    {
      sub,
      email,
      name: input.name ?? null,
      role: input.role,
      passwordHash: await hashPassword(input.password),
      mustChangePassword: input.mustChangePassword ?? false,
      organizationSlug: slug,
      mayCreateOrganization: /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(slug),
    },
    now,
    ({ id, organizationId }) =>
      auditEntry(origin, now, {
        organizationId,
        action: 'member.added',
        target: target('user', id),
        detail: { email, role: input.role, restored: false },
      }),
  )
  if (created === 'email_taken') throw conflict(`A user with email ${email} already exists`)
  if (created === 'no_such_organization') {
    throw invalidRequest(`Invalid organization slug "${slug}": use a-z, 0-9 and dashes`)
  }
  return { id: created.id, sub, organizationId: created.organizationId }
}

/** An active user by email; people removed from their organization are not found (they may not sign in). */
export function findUserByEmail(users: UserRepository, email: string): Promise<UserRecord | null> {
  return users.findActiveByEmail(normalizedEmail(email))
}
