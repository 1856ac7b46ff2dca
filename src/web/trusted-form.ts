// The one guard of every state-changing web route: the route option `trustedForm` lets a request through only when
// it carries a CSRF token the attacker cannot know and the browser does not say it came from another site (see
// csrf.ts for both halves). Routes name where the token is, and nothing else:
//
// - 'form': a signed-in person's form; the token is the form's `csrf` field, derived from the session. Form-encoded
//   bodies only, as small as any form's.
// - 'upload': the same, and the body may also be multipart with files, up to an upload's size.
// - 'sign-in': the sign-in form, before there is a session; the token goes with the pre-sign-in cookie.
// - 'header': the settings API's JSON writes; the token is the `X-CSRF-Token` header and the body is the route's.
//
// A form route gets the read form as `form`, with no U+0000 in any field (src/shared/nul.ts). A page without a session sends the visitor to sign in first; a refused
// form is a 403 page (src/web/errors.tsx), and a refused settings API write a 403 `csrf_failed`.
// test/web-layer.test.ts posts to every route the app has without a token, so a new route cannot forget this.
import { Elysia } from 'elysia'
import { maxRequestBytes } from '../attachments/limits'
import { maxJsonBodyBytes, mediaTypeOf, readBounded } from '../shared/body'
import { AppError } from '../shared/errors'
import { formHoldsNul, nulRefusal } from '../shared/nul'
import {
  anonymousCsrfKeyName,
  anonymousCsrfToken,
  csrfTokenMatches,
  formRefusedMessage,
  isSameOriginRequest,
} from './csrf'
import { PageError } from './errors'
import { accountOf, cookieNames, type PageSession, type WebDeps, web } from './index'

export type TrustedFormKind = 'form' | 'upload' | 'sign-in' | 'header'

/** The header the settings API's writes carry their token in. */
export const csrfHeader = 'x-csrf-token'

/** A posted form, text fields and files, as Bun parses it. */
export type PostedForm = Awaited<ReturnType<Request['formData']>>

/** A form field's text; undefined when the form has no such field, or only a file under that name. */
export function field(form: PostedForm, name: string): string | undefined {
  const value = form.get(name)
  return typeof value === 'string' ? value : undefined
}

/** Every text value of a repeated field (checkboxes). */
export function fieldValues(form: PostedForm, name: string): string[] {
  return form.getAll(name).filter((value): value is string => typeof value === 'string')
}

/**
 * The posted form, read within its bound (413 past it); null for any other body or one that cannot be parsed.
 * Bun's own parser reads both encodings, as `request.formData()` would. A field holding U+0000 is a 400.
 */
async function readFormBody(request: Request, kind: TrustedFormKind): Promise<PostedForm | null> {
  const type = mediaTypeOf(request)
  const accepted = type === 'application/x-www-form-urlencoded' || (kind === 'upload' && type === 'multipart/form-data')
  if (!accepted) return null
  // The framework read it first: the route lacks `parse: 'none'`, which a macro cannot set.
  if (request.bodyUsed) throw new Error('A trustedForm route must leave its body unread (`parse: "none"`)')
  const bytes = await readBounded(request, kind === 'upload' ? maxRequestBytes : maxJsonBodyBytes)
  let form: PostedForm
  try {
    form = await new Response(bytes, {
      headers: { 'content-type': request.headers.get('content-type') ?? type },
    }).formData()
  } catch {
    return null
  }
  // Refused where it is read, as every form reader does, whoever sent it.
  if (formHoldsNul(form.entries())) throw nulRefusal()
  return form
}

function formRefused(action?: { href: string; label: string }): PageError {
  return new PageError(403, 'Form refused', formRefusedMessage, { action, code: 'csrf_failed' })
}

export const trustedForms = (deps: WebDeps) => {
  const names = cookieNames(deps.publicUrl)
  return new Elysia({ name: 'trusted-forms' }).use(web(deps)).macro({
    trustedForm(kind: TrustedFormKind) {
      if (kind === 'header') {
        // Checked where `account` checks the session: the first `parse` hook of a route with a body, before a byte
        // of it is read or validated, and in `transform` for the others.
        const check = ({ request }: { request: Request }): void => {
          const account = accountOf(request)
          const ours =
            account !== undefined &&
            isSameOriginRequest(request.headers, deps.publicUrl) &&
            csrfTokenMatches(account.csrf, request.headers.get(csrfHeader))
          if (!ours) {
            throw new AppError(403, 'csrf_failed', 'Send the CSRF token from GET /settings/api/session as X-CSRF-Token')
          }
        }
        return {
          account: true,
          parse: check,
          transform: check,
          resolve: (): { form: PostedForm } => ({ form: new FormData() as unknown as PostedForm }),
        }
      }
      if (kind === 'sign-in') {
        return {
          // A page, whose failures are pages too, though nobody is signed in yet.
          page: true,
          async resolve({ request, cookie }): Promise<{ form: PostedForm }> {
            const refused = () => formRefused({ href: '/login', label: 'Sign in again' })
            if (!isSameOriginRequest(request.headers, deps.publicUrl)) throw refused()
            const form = await readFormBody(request, kind)
            const nonce = cookie[names.csrf]?.value
            if (typeof nonce !== 'string' || nonce === '') throw refused()
            // Signed with the key every instance on the database shares, as the sign-in page signed it.
            const key = await deps.serverKeys.key(anonymousCsrfKeyName)
            if (!form || !csrfTokenMatches(anonymousCsrfToken(key, nonce), field(form, 'csrf'))) throw refused()
            return { form }
          },
        }
      }
      return {
        // A page: its failures are pages too, and the signed-in person is known to the checks below.
        session: true,
        async resolve(context): Promise<{ form: PostedForm }> {
          // Elysia runs this after the `session` macro's resolve but does not type what it added.
          const { session, request } = context as unknown as { session: PageSession | null; request: Request }
          if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
          // The browser's word is checked before a byte of the body is read.
          if (!isSameOriginRequest(request.headers, deps.publicUrl)) throw formRefused()
          const form = await readFormBody(request, kind)
          if (!form || !csrfTokenMatches(session.csrf, field(form, 'csrf'))) throw formRefused()
          return { form }
        },
      }
    },
  })
}
