// Plumbing shared by the settings and administration pages: their headers (the strict page policy plus the
// one local script), the `member` and `organizationAdmin` macros that let in only who may see a page, the
// copy script itself, and reading a form only when its CSRF token and origin check out.
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { isOrganizationAdmin } from '../auth/members'
import { readForm } from '../shared/forms'
import { copyScriptPath } from './components'
import { csrfTokenMatches, formRefusedMessage, isSameOriginRequest } from './csrf'
import { type PageSession, pageHeaders, signInPath, type WebDeps, web } from './index'
import { viewerOf } from './layout'
import { MessagePage } from './pages/message'

const copyScript = Bun.file(join(import.meta.dir, 'assets/copy.js'))

/** The page policy, plus `script-src 'self'` for the copy script: still no inline script, no other origin. */
export const accountPageHeaders = {
  ...pageHeaders,
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; form-action 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'",
} as const

/** The sign-in page, coming back here afterwards; a form post comes back to the page it was posted from. */
export function signInLocation(request: Request): string {
  const url = new URL(request.url)
  const back = request.method === 'GET' ? url.pathname + url.search : url.pathname.split('/').slice(0, 3).join('/')
  return signInPath(back)
}

/** The posted form, or null when it lacks this session's CSRF token or the browser says it came from elsewhere. */
export async function readTrustedForm(
  request: Request,
  session: PageSession,
  publicUrl: string,
): Promise<URLSearchParams | null> {
  if (!isSameOriginRequest(request.headers, publicUrl)) return null
  const form = await readForm(request)
  if (!form || !csrfTokenMatches(session.csrf, form.get('csrf'))) return null
  return form
}

export function RefusedFormPage({ session }: { session: PageSession }): JSX.Element {
  return <MessagePage title="Form refused" message={formRefusedMessage} viewer={viewerOf(session)} />
}

export const account = (deps: WebDeps) =>
  new Elysia({ name: 'account' })
    .use(web(deps))
    .get(
      copyScriptPath,
      () => {
        return new Response(copyScript, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
      },
      { detail: { hide: true } },
    )
    .macro({
      /** Signed-in people only: others go to the sign-in page and come back. Resolves `member`. */
      member: {
        session: true,
        beforeHandle(context) {
          // Elysia runs this after the `session` macro's resolve but does not type what it added.
          const { session } = context as unknown as { session: PageSession | null }
          if (!session) return context.redirect(signInLocation(context.request), 303)
        },
        resolve(context): { member: PageSession } {
          return { member: (context as unknown as { session: PageSession }).session }
        },
      },
      /** Owners and admins of the organization only: members get a 403 page. Resolves `admin`. */
      organizationAdmin: {
        member: true,
        beforeHandle(context) {
          const { member } = context as unknown as { member: PageSession }
          if (isOrganizationAdmin(member.user.role)) return
          context.set.status = 403
          Object.assign(context.set.headers, accountPageHeaders)
          return context.html(
            <MessagePage
              title="Administration only"
              message="Only owners and admins of your organization can open this page. Ask one of them if you need something changed."
              viewer={viewerOf(member)}
              action={{ href: '/settings', label: 'Go to your settings' }}
            />,
          )
        },
        resolve(context): { admin: PageSession } {
          return { admin: (context as unknown as { member: PageSession }).member }
        },
      },
    })
