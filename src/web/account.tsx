// Plumbing shared by the settings and administration pages (src/settings/, src/admin/): the `member` and
// `organizationAdmin` macros that let in only who may see a page, and the notices their redirects show.
import { Elysia } from 'elysia'
import { isOrganizationAdmin } from '../auth/members'
import { AppError } from '../shared/errors'
import { PageError } from './errors'
import type { PageSession, WebDeps } from './index'
import { trustedForms } from './trusted-form'

/** A confirmation after a redirect, chosen by a fixed key so a URL can never put words on the page. */
export function noticeFor(notices: Record<string, string>, key: string | undefined): string | null {
  return key !== undefined && Object.hasOwn(notices, key) ? (notices[key] ?? null) : null
}

/** An expected refusal (bad input, not found, not allowed) becomes a message on the page; anything else is a bug. */
export function refusalOf(error: unknown): AppError {
  if (error instanceof AppError) return error
  throw error
}

export const account = (deps: WebDeps) =>
  new Elysia({ name: 'account' }).use(trustedForms(deps)).macro({
    /** Signed-in people only: others go to the sign-in page and come back (src/web/errors.tsx). Resolves `member`. */
    member: {
      session: true,
      // Checked before the handler as the `session` macro's own check is, so the one-time password comes first.
      beforeHandle(context) {
        // Elysia runs this after the `session` macro's resolve but does not type what it added.
        const { session } = context as unknown as { session: PageSession | null }
        if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
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
        throw new PageError(
          403,
          'Administration only',
          'Only owners and admins of your organization can open this page. Ask one of them if you need something changed.',
          { action: { href: '/settings', label: 'Go to your settings' } },
        )
      },
      resolve(context): { admin: PageSession } {
        return { admin: (context as unknown as { member: PageSession }).member }
      },
    },
  })
