// Shared plumbing of the server-rendered pages: HTML rendering, security headers, the session cookie, the
// `session` macro that resolves who is signed in (and marks the request as a page's, for the error pages) and
// the `account` macro of the settings API.
import { html } from '@elysiajs/html'
import { type Cookie, Elysia } from 'elysia'
import { type SessionUser, validateSession } from '../auth/sessions'
import type { SessionRepository } from '../auth/sessions.repository'
import { type AuditOrigin, requestOrigin, sessionActor } from '../shared/audit'
import { callerChecked, jsonBodies } from '../shared/body'
import { AppError } from '../shared/errors'
import type { ServerKeyRepository } from '../shared/server-keys.repository'
import type { Clock } from '../shared/time'
import { sessionCsrfToken } from './csrf'

export interface WebDeps {
  sessions: SessionRepository
  /** The key of the signed-out forms' CSRF tokens (trusted-form.ts). */
  serverKeys: ServerKeyRepository
  clock: Clock
  publicUrl: string
}

/** A signed-in request: the person, their session cookie value and the CSRF token their forms must carry. */
export interface PageSession {
  user: SessionUser
  token: string
  csrf: string
}

/** Who acts on a signed-in page, and from where: the session's person, for the audit log. */
export function pageOrigin(request: Request, session: { user: Pick<SessionUser, 'id' | 'sessionId'> }): AuditOrigin {
  return requestOrigin(request, sessionActor(session.user.sessionId, session.user.id))
}

/**
 * Headers every page gets: no framing, no referrer leaks, no caching of pages that hold CSRF tokens, and scripts
 * from this origin only (every page runs the theme script, client-assets.ts; none has an inline script).
 */
export const pageHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; form-action 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const

/**
 * The consent page leaves out `form-action`: browsers apply it to the redirect that follows the form post, and
 * that redirect goes to the client's own (possibly loopback or private-use scheme) redirect URI.
 */
export const consentPageHeaders = {
  ...pageHeaders,
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; frame-ancestors 'none'; " +
    "base-uri 'none'",
} as const

export interface CookieNames {
  session: string
  csrf: string
}

export function usesHttps(publicUrl: string): boolean {
  return publicUrl.startsWith('https://')
}

/** Under https the `__Host-` prefix makes browsers refuse these cookies from subdomains or plain http. */
export function cookieNames(publicUrl: string): CookieNames {
  const prefix = usesHttps(publicUrl) ? '__Host-' : ''
  return { session: `${prefix}threadhouse_session`, csrf: `${prefix}threadhouse_csrf` }
}

export function setSessionCookie(cookie: Cookie<unknown>, publicUrl: string, token: string, expiresAt: number): void {
  cookie.set({
    value: token,
    httpOnly: true,
    sameSite: 'lax',
    secure: usesHttps(publicUrl),
    path: '/',
    expires: new Date(expiresAt),
  })
}

/** Browsers only accept the deletion of a `__Host-` cookie that repeats its Secure and Path attributes. */
export function clearCookie(cookie: Cookie<unknown>, publicUrl: string): void {
  cookie.set({ value: '', httpOnly: true, sameSite: 'lax', secure: usesHttps(publicUrl), path: '/', maxAge: 0 })
}

/** A 303: after a form post the browser follows it with a GET. Never stored: where it leads depends on the session. */
export function seeOther(location: string): Response {
  return new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store' } })
}

/** The sign-in page, which comes back to `back` afterwards. */
export function signInPath(back: string): string {
  return `/login?next=${encodeURIComponent(back)}`
}

/**
 * Where to go after signing in: only a path on this server, never another origin (`//evil.example`,
 * `/\evil.example` and absolute URLs all fall back to `/`). The path is checked again once resolved, since dot
 * segments collapse into a leading `//` (`/a/..//evil.example`), which a browser reads as another host.
 */
export function safeNextPath(next: string | null | undefined, publicUrl: string): string {
  if (!next?.startsWith('/') || next.startsWith('//') || next.includes('\\')) return '/'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(next)) return '/'
  const base = new URL(publicUrl)
  const target = new URL(next, base)
  if (target.origin !== base.origin || target.pathname.startsWith('//')) return '/'
  return `${target.pathname}${target.search}${target.hash}`
}

async function resolveSession(
  deps: WebDeps,
  names: CookieNames,
  cookie: Record<string, Cookie<unknown>>,
): Promise<PageSession | null> {
  const sessionCookie = cookie[names.session]
  const token = sessionCookie?.value
  if (!sessionCookie || typeof token !== 'string') return null
  const valid = await validateSession(deps.sessions, token, deps.clock.now())
  if (!valid) return null
  if (valid.renewed) setSessionCookie(sessionCookie, deps.publicUrl, token, valid.expiresAt)
  return { user: valid.user, token, csrf: sessionCsrfToken(token) }
}

/** Where a person signed in with a one-time password must choose their own before anything else. */
export const changePasswordPath = '/settings/password'

/** The only pages a person with a one-time password may use: choosing a new password, and signing out. */
const openToOneTimePasswords = new Set([changePasswordPath, '/logout'])

/** The change-password page, coming back to this request's page afterwards when it was a plain visit. */
export function changePasswordLocation(request: Request): string {
  const url = new URL(request.url)
  if (request.method !== 'GET') return changePasswordPath
  return `${changePasswordPath}?next=${encodeURIComponent(url.pathname + url.search)}`
}

/** Requests answered by a page, with who is signed in (null for a visitor); the error pages read it. */
const pageSessions = new WeakMap<Request, PageSession | null>()

/** Who is signed in on a page request (null for a visitor); undefined when the request is not for a page. */
export function pageSessionOf(request: Request): PageSession | null | undefined {
  return pageSessions.get(request)
}

function mustChangePasswordFirst(session: PageSession | null, request: Request): boolean {
  return session?.user.mustChangePassword === true && !openToOneTimePasswords.has(new URL(request.url).pathname)
}

/** Requests the `account` macro let in, with whose session; set before any body is read. */
const accounts = new WeakMap<Request, PageSession>()

/** The session the `account` macro found for this request, from its first hook on. */
export function accountOf(request: Request): PageSession | undefined {
  return accounts.get(request)
}

export const web = (deps: WebDeps) => {
  const names = cookieNames(deps.publicUrl)
  const checkAccount = async (cookie: Record<string, Cookie<unknown>>, request: Request): Promise<void> => {
    if (accounts.has(request)) return
    const account = await resolveSession(deps, names, cookie)
    if (!account) throw new AppError(401, 'unauthorized', 'Sign in first: no valid session cookie')
    if (account.user.mustChangePassword) {
      throw new AppError(403, 'password_change_required', `Choose a new password first at ${changePasswordPath}`)
    }
    accounts.set(request, account)
    callerChecked(request)
  }
  return (
    new Elysia({ name: 'web' })
      .use(html({ contentType: 'text/html; charset=utf-8', autoDetect: false }))
      // The settings API's JSON bodies are read after the `account` check below.
      .use(jsonBodies)
      .macro({
        /** Pages that resolve no session (signing in itself): their failures are pages too, without navigation. */
        page: {
          transform({ request }) {
            if (!pageSessions.has(request)) pageSessions.set(request, null)
          },
        },
        /** Pages: `session` is the signed-in person, or null, and each page decides what a visitor sees. */
        session: {
          async resolve({ cookie, request }): Promise<{ session: PageSession | null }> {
            const session = await resolveSession(deps, names, cookie)
            pageSessions.set(request, session)
            return { session }
          },
          // Every page, whoever wrote it, first sends a person holding a one-time password to choose their own.
          beforeHandle(context) {
            // Elysia runs this after `resolve` above but does not type what resolve added.
            const { session } = context as unknown as { session: PageSession | null }
            if (mustChangePasswordFirst(session, context.request)) {
              return context.redirect(changePasswordLocation(context.request), 303)
            }
          },
        },
        /**
         * JSON operations behind the settings screens: 401 without a valid session. Checked as the first `parse`
         * hook of a route with a body, before a byte of it is read, and in `transform` for the others.
         */
        account: {
          async parse({ cookie, request }) {
            await checkAccount(cookie, request)
          },
          async transform({ cookie, request }) {
            await checkAccount(cookie, request)
          },
          resolve({ request }): { account: PageSession } {
            return { account: accounts.get(request) as PageSession }
          },
        },
      })
  )
}
