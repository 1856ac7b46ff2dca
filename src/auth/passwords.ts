// Passwords people choose and the one-time passwords admins hand out: generating a one-time password, and
// changing a password (which also ends the person's other sessions and clears the must-change flag).
import { encodeBase32LowerCaseNoPadding } from '@oslojs/encoding'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { invalidRequest } from '../shared/errors'
import { hashPassword, hashSecret, verifyPassword } from '../shared/security'
import type { UserRepository } from './users.repository'

export const minimumPasswordLength = 8
/** Long passwords are welcome; this only bounds the work argon2 is asked to do. */
export const maximumPasswordLength = 1024

/**
 * 80 random bits as four groups of four letters and digits (`k3xq-7mfa-…`): enough for a password that works
 * once and must be replaced at first sign-in, and short enough to pass on by hand.
 */
export function generateOneTimePassword(): string {
  const bytes = new Uint8Array(10)
  crypto.getRandomValues(bytes)
  return (encodeBase32LowerCaseNoPadding(bytes).match(/.{4}/g) ?? []).join('-')
}

export interface PasswordChange {
  userId: number
  organizationId: number
  currentPassword: string
  newPassword: string
  /** The session making the change stays signed in; every other one ends. */
  keepSessionToken: string
}

/**
 * Replaces the person's password once the current one is proven, and records it; throws a readable 400 otherwise
 * (a wrong current password is refused, not recorded: the change's attempts share sign-in's limits).
 */
export async function changePassword(
  users: UserRepository,
  change: PasswordChange,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const currentHash = await users.passwordHashOf(change.userId)
  if (currentHash === null || !(await verifyPassword(change.currentPassword, currentHash))) {
    throw invalidRequest('The current password is not correct.')
  }
  if (change.newPassword.length < minimumPasswordLength) {
    throw invalidRequest(`The new password must be at least ${minimumPasswordLength} characters long.`)
  }
  if (change.newPassword.length > maximumPasswordLength) {
    throw invalidRequest(`The new password must be at most ${maximumPasswordLength} characters long.`)
  }
  if (change.newPassword === change.currentPassword) {
    throw invalidRequest('The new password must differ from the current one.')
  }
  // Anyone else holding the old password (the admin who set a one-time one, a thief) is signed out.
  await users.changePassword(
    change.userId,
    await hashPassword(change.newPassword),
    hashSecret(change.keepSessionToken),
    (endedSessions) =>
      auditEntry(origin, now, {
        organizationId: change.organizationId,
        action: 'password.changed',
        target: target('user', change.userId),
        detail: { ended_sessions: endedSessions },
      }),
  )
}
