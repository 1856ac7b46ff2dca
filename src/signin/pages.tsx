// Sign-in and sign-out pages: GET/POST /login and POST /logout. Behaviour lives in auth/sessions.ts.

import { Elysia } from 'elysia'
import { signInRetryAfter } from '../auth/attempts'
import { invalidateSession, signIn } from '../auth/sessions'
import type { UserRepository } from '../auth/users.repository'
import { type AuditLog, anonymousActor, requestOrigin } from '../shared/audit'
import { clientIpOf, requestIdOf } from '../shared/http'
import type { Logger } from '../shared/log'
import type { Limiter } from '../shared/rate-limit'
import { anonymousCsrfKeyName, anonymousCsrfToken, newCsrfNonce } from '../web/csrf'
import {
  changePasswordPath,
  clearCookie,
  cookieNames,
  pageHeaders,
  pageOrigin,
  safeNextPath,
  setSessionCookie,
  usesHttps,
  type WebDeps,
} from '../web/index'
import { field, trustedForms } from '../web/trusted-form'
import { LoginPage } from './views/login'

export interface SigninDeps extends WebDeps {
  users: UserRepository
  /** Where a refused sign-in is recorded: it writes nothing else. */
  audit: AuditLog
  log: Logger
  /** The OpenID Connect provider's name, when sign-in through it is configured (see oidc-pages.tsx). */
  externalSignIn: string | null
  /** Sign-in attempts per client address and per email (RATE_LIMIT_AUTH_PER_MINUTE); absent when turned off. */
  authLimiter?: Limiter
}

export const signin = (deps: SigninDeps) => {
  const names = cookieNames(deps.publicUrl)
  const external = (next: string) =>
    deps.externalSignIn === null
      ? undefined
      : { label: deps.externalSignIn, href: `/login/oidc?next=${encodeURIComponent(next)}` }
  const csrfCookie = {
    httpOnly: true,
    sameSite: 'lax',
    secure: usesHttps(deps.publicUrl),
    path: '/',
  } as const
  /** The sign-in form's token for a nonce, signed with the key every instance on the database shares. */
  const csrfFor = async (nonce: string): Promise<string> =>
    anonymousCsrfToken(await deps.serverKeys.key(anonymousCsrfKeyName), nonce)
  return new Elysia({ name: 'signin' })
    .use(trustedForms(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      '/login',
      async ({ query, session, cookie, html, redirect }) => {
        const next = safeNextPath(query.next, deps.publicUrl)
        if (session) return redirect(next, 303)
        // Keep an existing nonce so that two open sign-in tabs both work.
        const existing = cookie[names.csrf]?.value
        const nonce = typeof existing === 'string' && existing.length > 0 ? existing : newCsrfNonce()
        cookie[names.csrf]?.set({ value: nonce, ...csrfCookie })
        return html(<LoginPage next={next} csrf={await csrfFor(nonce)} external={external(next)} />)
      },
      { session: true, detail: { hide: true } },
    )
    .post(
      '/login',
      async ({ request, form, cookie, html, redirect, set }) => {
        // The page's hidden field, or for a script that posts to /login?next=… without it, the query.
        const next = safeNextPath(field(form, 'next') || new URL(request.url).searchParams.get('next'), deps.publicUrl)
        const email = field(form, 'email') ?? ''
        // The guard has matched the form's token to this cookie.
        const nonce = String(cookie[names.csrf]?.value)
        const retryAfter = await signInRetryAfter(deps.authLimiter, clientIpOf(request), email)
        if (retryAfter !== null) {
          set.status = 429
          set.headers['retry-after'] = String(retryAfter)
          return html(
            <LoginPage
              next={next}
              email={email}
              csrf={await csrfFor(nonce)}
              error={`Too many sign-in attempts. Wait ${retryAfter} seconds, then try again.`}
              external={external(next)}
            />,
          )
        }
        const origin = requestOrigin(request, anonymousActor)
        const opened = await signIn(deps, email, field(form, 'password') ?? '', deps.clock.now(), origin)
        if (!opened) {
          // An operator watching for password guessing needs these; the password itself is never logged.
          deps.log.warn('sign-in failed', { requestId: requestIdOf(request), email, ip: clientIpOf(request) })
          set.status = 401
          return html(
            <LoginPage
              next={next}
              email={email}
              csrf={await csrfFor(nonce)}
              error="The email or password is not correct."
              external={external(next)}
            />,
          )
        }
        const sessionCookie = cookie[names.session]
        if (sessionCookie) setSessionCookie(sessionCookie, deps.publicUrl, opened.token, opened.expiresAt)
        const used = cookie[names.csrf]
        if (used) clearCookie(used, deps.publicUrl)
        if (opened.mustChangePassword) return redirect(`${changePasswordPath}?next=${encodeURIComponent(next)}`, 303)
        return redirect(next, 303)
      },
      { trustedForm: 'sign-in', parse: 'none', detail: { hide: true } },
    )
    .post(
      '/logout',
      async ({ session, cookie, request, redirect }) => {
        if (!session) return redirect('/login', 303)
        await invalidateSession(
          deps.sessions,
          session.token,
          session.user,
          deps.clock.now(),
          pageOrigin(request, session),
        )
        const ended = cookie[names.session]
        if (ended) clearCookie(ended, deps.publicUrl)
        return redirect('/login', 303)
      },
      { session: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
}
