// Browser sessions: a random cookie value, stored only as its SHA-256, that expires after 30 days unused.
import { generateSecret, hashPassword, hashSecret, verifyPassword } from '../shared/security'
import { dayMs } from '../shared/time'
import type { Caller } from './model'
import type { SessionRepository, SessionUser } from './sessions.repository'
import { findUserByEmail } from './users'
import type { UserRepository } from './users.repository'

export type { SessionUser } from './sessions.repository'

export const sessionTokenPrefix = 'thss_'
export const sessionLifetimeMs = 30 * dayMs
/** The expiry moves only once less than this is left, so most page views read the session without writing. */
const renewWhenLessThanMs = 15 * dayMs

export interface ValidSession {
  user: SessionUser
  expiresAt: number
  /** True when this request moved the expiry, so the cookie must be sent again with the new lifetime. */
  renewed: boolean
}

export interface NewSession {
  token: string
  expiresAt: number
}

export async function createSession(sessions: SessionRepository, userId: number, now: number): Promise<NewSession> {
  const token = generateSecret(sessionTokenPrefix)
  const expiresAt = now + sessionLifetimeMs
  await sessions.create({ tokenHash: hashSecret(token), userId, expiresAt }, now)
  return { token, expiresAt }
}

/** The session a cookie names, if it is one and has not expired; read only (an error page renews nothing). */
export async function findSession(sessions: SessionRepository, token: string, now: number) {
  if (!token.startsWith(sessionTokenPrefix)) return null
  const row = await sessions.findByHash(hashSecret(token))
  return row && row.expiresAt > now ? row : null
}

export async function validateSession(
  sessions: SessionRepository,
  token: string,
  now: number,
): Promise<ValidSession | null> {
  if (!token.startsWith(sessionTokenPrefix)) return null
  const row = await sessions.findByHash(hashSecret(token))
  if (!row) return null
  if (row.expiresAt <= now) {
    await sessions.delete(row.id)
    return null
  }
  if (row.expiresAt - now >= renewWhenLessThanMs) return { user: row.user, expiresAt: row.expiresAt, renewed: false }
  const expiresAt = now + sessionLifetimeMs
  await sessions.extend(row.id, expiresAt)
  return { user: row.user, expiresAt, renewed: true }
}

export function invalidateSession(sessions: SessionRepository, token: string): Promise<void> {
  return sessions.deleteByHash(hashSecret(token))
}

/** What a successful sign-in opens, and whether the person must first replace a one-time password. */
export interface SignedIn extends NewSession {
  mustChangePassword: boolean
}

// Verifying against a real argon2id hash when the email is unknown keeps both answers equally slow, so the
// sign-in form does not reveal which emails have accounts.
let dummyHash: Promise<string> | undefined
function hashForUnknownUser(): Promise<string> {
  dummyHash ??= hashPassword(generateSecret(''))
  return dummyHash
}

/** Checks the credentials and opens a session, or returns null when either is wrong or the person was removed. */
export async function signIn(
  repositories: { users: UserRepository; sessions: SessionRepository },
  email: string,
  password: string,
  now: number,
): Promise<SignedIn | null> {
  const user = await findUserByEmail(repositories.users, email)
  const matches = await verifyPassword(password, user?.passwordHash ?? (await hashForUnknownUser()))
  if (!user || !matches) return null
  return { ...(await createSession(repositories.sessions, user.id, now)), mustChangePassword: user.mustChangePassword }
}

/**
 * The signed-in person as the thread services know callers: a browser session may do what a token with
 * `threads:read threads:write` may, so pages and the API apply exactly the same visibility and owner rules.
 */
export function callerFromSession(user: SessionUser): Caller {
  return {
    credential: `session:${user.id}`,
    userId: user.id,
    sub: user.sub,
    name: user.name,
    email: user.email,
    role: user.role,
    organizationId: user.organizationId,
    organizationSlug: user.organizationSlug,
    scopes: new Set(['threads:read', 'threads:write']),
    sees: 'organization',
  }
}
