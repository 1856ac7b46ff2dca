// People as the operator CLI sees them: every user of every organization, and a password reset for someone
// locked out, run by whoever operates the server rather than by an organization's admins.
import type { Role } from '../auth/model'
import { generateOneTimePassword } from '../auth/passwords'
import { findUserByEmail } from '../auth/users'
import type { UserRepository } from '../auth/users.repository'
import { auditEntry, systemOrigin, target } from '../shared/audit'
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
export async function listUsers(users: UserRepository): Promise<UserSummary[]> {
  return (await users.listAll()).map(({ mustChangePassword, removedAt, ...user }) => ({
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
export async function resetPassword(users: UserRepository, email: string, now: number): Promise<PasswordReset | null> {
  const user = await findUserByEmail(users, email)
  if (!user) return null
  const oneTimePassword = generateOneTimePassword()
  const endedSessions = await users.resetPassword(user.id, await hashPassword(oneTimePassword), (ended) =>
    auditEntry(systemOrigin, now, {
      organizationId: user.organizationId,
      action: 'password.reset',
      target: target('user', user.id),
      detail: { ended_sessions: ended },
    }),
  )
  return { email: user.email, oneTimePassword, endedSessions }
}
