// Browser sessions: a random cookie value, stored only as its SHA-256, that expires after 30 days unused.
import { and, eq, isNull, lte, ne } from 'drizzle-orm'
import type { Db } from '../db/client'
import { generateSecret, hashPassword, hashSecret, verifyPassword } from '../shared/security'
import { dayMs } from '../shared/time'
import { organizations, type Role, users } from './auth.table'
import type { Caller } from './model'
import { findUserByEmail } from './service'
import { sessions } from './sessions.table'

export const sessionTokenPrefix = 'thss_'
export const sessionLifetimeMs = 30 * dayMs
/** The expiry moves only once less than this is left, so most page views read the session without writing. */
const renewWhenLessThanMs = 15 * dayMs

/** The signed-in person as the web pages see them. */
export interface SessionUser {
  id: number
  sub: string
  email: string
  name: string | null
  role: Role
  organizationId: number
  organizationSlug: string
  /** Signed in with a one-time password: every page but the change-password page sends them there. */
  mustChangePassword: boolean
}

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

export function createSession(db: Db, userId: number, now: number): NewSession {
  const token = generateSecret(sessionTokenPrefix)
  const expiresAt = now + sessionLifetimeMs
  db.insert(sessions)
    .values({ tokenHash: hashSecret(token), userId, createdAt: now, expiresAt })
    .run()
  return { token, expiresAt }
}

export function validateSession(db: Db, token: string, now: number): ValidSession | null {
  if (!token.startsWith(sessionTokenPrefix)) return null
  const row = db
    .select({
      id: sessions.id,
      expiresAt: sessions.expiresAt,
      user: {
        id: users.id,
        sub: users.sub,
        email: users.email,
        name: users.name,
        role: users.role,
        organizationId: users.organizationId,
        organizationSlug: organizations.slug,
        mustChangePassword: users.mustChangePassword,
      },
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(and(eq(sessions.tokenHash, hashSecret(token)), isNull(users.removedAt)))
    .get()
  if (!row) return null
  if (row.expiresAt <= now) {
    db.delete(sessions).where(eq(sessions.id, row.id)).run()
    return null
  }
  if (row.expiresAt - now >= renewWhenLessThanMs) return { user: row.user, expiresAt: row.expiresAt, renewed: false }
  const expiresAt = now + sessionLifetimeMs
  db.update(sessions).set({ expiresAt }).where(eq(sessions.id, row.id)).run()
  return { user: row.user, expiresAt, renewed: true }
}

export function invalidateSession(db: Db, token: string): void {
  db.delete(sessions)
    .where(eq(sessions.tokenHash, hashSecret(token)))
    .run()
}

/** Signs the person out everywhere except the browser holding `keepToken` (after a password change). */
export function invalidateOtherSessions(db: Db, userId: number, keepToken: string): void {
  db.delete(sessions)
    .where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, hashSecret(keepToken))))
    .run()
}

/** Deletes sessions past their expiry that nobody presented again (those that are presented go at once). */
export function deleteExpiredSessions(db: Db, now: number): void {
  db.delete(sessions).where(lte(sessions.expiresAt, now)).run()
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
export async function signIn(db: Db, email: string, password: string, now: number): Promise<SignedIn | null> {
  const user = findUserByEmail(db, email)
  const matches = await verifyPassword(password, user?.passwordHash ?? (await hashForUnknownUser()))
  if (!user || !matches) return null
  return { ...createSession(db, user.id, now), mustChangePassword: user.mustChangePassword }
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
