// Sign-in through the configured OpenID Connect provider: GET /login/oidc leaves for the provider, and
// GET /login/oidc/callback comes back and opens a session. Behaviour lives in oidc.ts and auth/sessions.ts.

import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from '@oslojs/encoding'
import { type Cookie, Elysia } from 'elysia'
import { createSession, recordSignInFailure } from '../auth/sessions'
import type { UserRepository } from '../auth/users.repository'
import { type AuditLog, anonymousActor, requestOrigin } from '../shared/audit'
import { secretsEqual } from '../shared/security'
import { PageError } from '../web/errors'
import {
  clearCookie,
  cookieNames,
  pageHeaders,
  safeNextPath,
  setSessionCookie,
  usesHttps,
  type WebDeps,
  web,
} from '../web/index'
import {
  createOidcClient,
  type OidcClient,
  OidcRefusal,
  type OidcSettings,
  oidcCallbackPath,
  type PendingSignIn,
  userForIdentity,
} from './oidc'

export interface OidcSigninDeps extends WebDeps {
  users: UserRepository
  /** Where a refused sign-in is recorded: it writes nothing else. */
  audit: AuditLog
  oidc: OidcSettings | null
}

/** The flow's cookie lives ten minutes: long enough to sign in at the provider, short enough to go stale. */
const pendingLifetimeSeconds = 600

function cookieName(publicUrl: string): string {
  return `${usesHttps(publicUrl) ? '__Host-' : ''}threadhouse_oidc`
}

function encodePending(pending: PendingSignIn): string {
  return encodeBase64urlNoPadding(new TextEncoder().encode(JSON.stringify(pending)))
}

function decodePending(value: unknown): PendingSignIn | null {
  if (typeof value !== 'string' || value === '') return null
  try {
    const parsed = JSON.parse(new TextDecoder().decode(decodeBase64urlIgnorePadding(value))) as Partial<PendingSignIn>
    const fields = [parsed.state, parsed.verifier, parsed.nonce, parsed.next]
    return fields.every((field) => typeof field === 'string') ? (parsed as PendingSignIn) : null
  } catch {
    return null
  }
}

function refused(status: number, reason: string): PageError {
  return new PageError(status, 'Sign-in did not work', reason, { action: { href: '/login', label: 'Back to sign-in' } })
}

function notConfigured(): PageError {
  return new PageError(404, 'Not available', 'Single sign-on is not configured here.', {
    action: { href: '/login', label: 'Sign in with a password' },
  })
}

/** Whether what came back is the sign-in this browser started (state, compared in constant time). */
function startedHere(
  query: Record<string, string | undefined>,
  pending: PendingSignIn | null,
): pending is PendingSignIn {
  return pending !== null && !!query.state && secretsEqual(pending.state, query.state)
}

/** Asks the provider who came back from a sign-in this browser started. */
async function completeSignIn(
  deps: OidcSigninDeps,
  client: OidcClient,
  query: Record<string, string | undefined>,
  pending: PendingSignIn,
): Promise<{ user: { id: number; organizationId: number }; next: string }> {
  if (query.error || !query.code) {
    throw new OidcRefusal(400, `${client.name} did not sign you in (${query.error ?? 'no code was returned'}).`)
  }
  const identity = await client.finish(query.code, pending)
  return { user: await userForIdentity(deps.users, identity, client.name), next: pending.next }
}

export const oidcSignin = (deps: OidcSigninDeps) => {
  const client = deps.oidc ? createOidcClient(deps.oidc, () => deps.clock.now()) : null
  const name = cookieName(deps.publicUrl)
  const sessionName = cookieNames(deps.publicUrl).session
  const setPending = (cookie: Cookie<unknown> | undefined, value: string): void => {
    cookie?.set({
      value,
      httpOnly: true,
      // Lax: the provider sends the browser back with a top-level GET, which carries Lax cookies.
      sameSite: 'lax',
      secure: usesHttps(deps.publicUrl),
      path: '/',
      maxAge: pendingLifetimeSeconds,
    })
  }
  return new Elysia({ name: 'oidc-signin' })
    .use(web(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      '/login/oidc',
      async ({ query, cookie, redirect }) => {
        if (!client) throw notConfigured()
        try {
          const { url, pending } = await client.start(safeNextPath(query.next, deps.publicUrl))
          setPending(cookie[name], encodePending(pending))
          return redirect(url.href, 302)
        } catch (error) {
          if (!(error instanceof OidcRefusal)) throw error
          throw refused(error.status, error.reason)
        }
      },
      { page: true, detail: { hide: true } },
    )
    .get(
      oidcCallbackPath,
      async ({ query, cookie, request, redirect }) => {
        const pendingCookie = cookie[name]
        const pending = decodePending(pendingCookie?.value)
        if (pendingCookie) clearCookie(pendingCookie, deps.publicUrl)
        if (!client) throw notConfigured()
        // Not recorded: anyone can send a request here, and what was not started here is no sign-in attempt.
        if (!startedHere(query, pending)) {
          throw refused(400, 'This sign-in has expired or was not started here. Start again from the sign-in page.')
        }
        const origin = requestOrigin(request, anonymousActor)
        try {
          const signedIn = await completeSignIn(deps, client, query, pending)
          const session = await createSession(deps.sessions, signedIn.user, deps.clock.now(), origin, 'oidc')
          const sessionCookie = cookie[sessionName]
          if (sessionCookie) setSessionCookie(sessionCookie, deps.publicUrl, session.token, session.expiresAt)
          // Checked again on the way out: the value came back through a cookie.
          return redirect(safeNextPath(signedIn.next, deps.publicUrl), 303)
        } catch (error) {
          if (!(error instanceof OidcRefusal)) throw error
          // A sign-in this browser started, yet nobody was matched to a user (that is what refuses it), so it belongs
          // to no organization. The reason is the status alone: the person's words may hold their email.
          await recordSignInFailure(deps.audit, null, deps.clock.now(), origin, {
            method: 'oidc',
            reason: `refused_${error.status}`,
          })
          throw refused(error.status, error.reason)
        }
      },
      { page: true, detail: { hide: true } },
    )
}
