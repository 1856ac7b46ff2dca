// People as the operator CLI sees them: every user of every organization, and a password reset for someone
// locked out, run by whoever operates the server rather than by an organization's admins.
import { asc, eq } from 'drizzle-orm'
import { organizations, type Role, users } from '../auth/auth.table'
import { generateOneTimePassword } from '../auth/passwords'
import { findUserByEmail } from '../auth/service'
import { sessions } from '../auth/sessions.table'
import type { Db } from '../db/client'
import { hashPassword } from '../shared/security'

export type UserStatus = 'active' | 'must-change-password' | 'removed'

export interface UserSummary {
  email: string
  name: string | null
  organizationSlug: string
  role: Role
  createdAt: number
  status: UserStatus
}

/** Every user, removed ones too (their email stays taken), by organization and then email. */
export function listUsers(db: Db): UserSummary[] {
  return db
    .select({
      email: users.email,
      name: users.name,
      organizationSlug: organizations.slug,
      role: users.role,
      createdAt: users.createdAt,
      mustChangePassword: users.mustChangePassword,
      removedAt: users.removedAt,
    })
    .from(users)
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .orderBy(asc(organizations.slug), asc(users.email))
    .all()
    .map(({ mustChangePassword, removedAt, ...user }) => ({
      ...user,
      status: removedAt !== null ? 'removed' : mustChangePassword ? 'must-change-password' : 'active',
    }))
}

export interface PasswordReset {
  email: string
  /** Seen by the operator, so it works once: the person must choose their own at the next sign-in. */
  oneTimePassword: string
  /** Web sessions that were signed in with the old password and are now ended. */
  endedSessions: number
}

/**
 * Gives an active user a new one-time password and ends every web session they have, in one transaction; null
 * when no active user has that email. Personal access tokens and OAuth grants are not passwords and stay valid
 * (removing the member ends those).
 */
export async function resetPassword(db: Db, email: string): Promise<PasswordReset | null> {
  const user = findUserByEmail(db, email)
  if (!user) return null
  const oneTimePassword = generateOneTimePassword()
  const passwordHash = await hashPassword(oneTimePassword)
  const endedSessions = db.transaction((tx) => {
    tx.update(users).set({ passwordHash, mustChangePassword: true }).where(eq(users.id, user.id)).run()
    return tx.delete(sessions).where(eq(sessions.userId, user.id)).returning({ id: sessions.id }).all().length
  })
  return { email: user.email, oneTimePassword, endedSessions }
}
