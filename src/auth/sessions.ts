// Browser sessions: a random cookie value, stored only as its SHA-256, that expires after 30 days unused. Opening one
// (a sign-in) and ending one (a sign-out) are recorded in the audit log in the same transaction; a refused sign-in
// writes nothing else, so its event is written alone (docs/audit.md, "Failed sign-ins").
import {
  type AuditLog,
  type AuditOrigin,
  anonymousActor,
  auditEntry,
  noOrganization,
  sessionActor,
  target,
} from '../shared/audit'
import { generateSecret, hashPassword, hashSecret, verifyPassword } from '../shared/security'
import { dayMs } from '../shared/time'
import type { Caller } from './model'
import type { SessionRepository, SessionUser } from './sessions.repository'
import { normalizedEmail } from './users'
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

/** How a person proved who they are. */
export type SignInMethod = 'password' | 'oidc'

/** Opens a session for the person and records the sign-in, made through `method`, with it. */
export async function createSession(
  sessions: SessionRepository,
  user: { id: number; organizationId: number },
  now: number,
  origin: AuditOrigin,
  method: SignInMethod,
): Promise<NewSession> {
  const token = generateSecret(sessionTokenPrefix)
  const expiresAt = now + sessionLifetimeMs
  await sessions.create({ tokenHash: hashSecret(token), userId: user.id, expiresAt }, now, (sessionId) =>
    auditEntry({ ...origin, actor: sessionActor(sessionId, user.id) }, now, {
      organizationId: user.organizationId,
      action: 'signin.succeeded',
      target: target('user', user.id),
      detail: { method, session_id: String(sessionId) },
    }),
  )
  return { token, expiresAt }
}

/**
 * Records a refused sign-in. One of a current member (a wrong password) joins their organization's log, naming them.
 * One by an email nobody current uses joins the log of no organization, and the email is not kept: it may be a
 * password typed in the wrong field, and it is nobody's business. Both write one event, so neither answer is slower.
 */
export function recordSignInFailure(
  audit: AuditLog,
  user: { id: number; organizationId: number } | null,
  now: number,
  origin: AuditOrigin,
  detail: { method: SignInMethod; reason: string },
): Promise<void> {
  return audit.append(
    auditEntry({ ...origin, actor: anonymousActor }, now, {
      organizationId: user?.organizationId ?? noOrganization,
      action: 'signin.failed',
      outcome: 'failure',
      target: user ? target('user', user.id) : null,
      detail,
    }),
  )
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

/** Signs out: ends the session the cookie names and records it, when there was one. */
export function invalidateSession(
  sessions: SessionRepository,
  token: string,
  user: Pick<SessionUser, 'id' | 'organizationId'>,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  return sessions.deleteByHash(
    hashSecret(token),
    auditEntry(origin, now, {
      organizationId: user.organizationId,
      action: 'signout',
      target: target('user', user.id),
    }),
  )
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

/**
 * Checks the credentials and opens a session, or returns null when either is wrong or the person was removed. Either
 * way the attempt is recorded (`origin` is the request's; its actor is nobody until the session opens).
 */
export async function signIn(
  repositories: { users: UserRepository; sessions: SessionRepository; audit: AuditLog },
  email: string,
  password: string,
  now: number,
  origin: AuditOrigin,
): Promise<SignedIn | null> {
  // A removed member is looked up too, so that their attempt goes to their former organization's log; it is checked
  // against the stand-in hash like an unknown email's, and one event is written either way, so both take as long.
  const found = await repositories.users.findByEmail(normalizedEmail(email))
  const user = found && found.removedAt === null ? found : null
  const matches = await verifyPassword(password, user?.passwordHash ?? (await hashForUnknownUser()))
  if (!user || !matches) {
    const reason = user ? 'wrong_password' : found ? 'removed' : 'unknown_email'
    await recordSignInFailure(repositories.audit, found, now, origin, { method: 'password', reason })
    return null
  }
  const session = await createSession(repositories.sessions, user, now, origin, 'password')
  return { ...session, mustChangePassword: user.mustChangePassword }
}

/**
 * The signed-in person as the thread services know callers: a browser session may do what a token with
 * `threads:read threads:write` may, so pages and the API apply exactly the same visibility and owner rules.
 */
export function callerFromSession(user: SessionUser): Caller {
  return {
    credential: `session:${user.sessionId}`,
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
