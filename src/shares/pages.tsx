// The share links' pages over HTTP. The shared thread (`/s/{token}`) and its files are for anyone holding the link:
// no session is read, nothing there links into the app, and search engines are told to stay out. The owner's
// confirmation (`/threads/{id}/share`, from the thread's ⋯ menu), Settings → Share links and Administration →
// Sharing follow the settings pages' rules: every post passes the `trustedForm` guard, the new link is shown once on
// the response page, POST-redirect-GET otherwise.
import { Elysia } from 'elysia'
import { attachmentResponse } from '../attachments/download'
import { callerFromSession } from '../auth/sessions'
import { AppError, notFound } from '../shared/errors'
import { isUuid } from '../shared/ids'
import type { BlobStore } from '../storage/blobs'
import type { Links } from '../threads/links'
import { requireOwnedThread } from '../threads/visibility'
import { account, noticeFor } from '../web/account'
import { PageError } from '../web/errors'
import { type PageSession, pageHeaders, pageOrigin, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field } from '../web/trusted-form'
import { shareDeps } from './index'
import { createShare, openShare, revokeShareIn, type ShareDeps, setSharing, sharedFile, sharePath } from './service'
import { AdminSharesPage, SettingsSharesPage, SharedThreadPage, ShareThreadPage } from './views/shares'

export interface SharePagesDeps extends WebDeps, ShareDeps {
  links: Links
  blobs: BlobStore
}

/**
 * The shared thread's headers: every page's policy (no framing, no referrer, so the link's token never leaves in a
 * Referer; not stored anywhere, so a revoked link stops at once), and not indexed.
 */
export const sharedPageHeaders = { ...pageHeaders, 'x-robots-tag': 'noindex, nofollow' } as const

export const shareNotices: Record<string, string> = {
  'share-revoked': 'The link was revoked. It no longer works.',
  'sharing-on': 'Sharing was turned on.',
  'sharing-off': 'Sharing was turned off: no link works until it is turned back on.',
}

/** A link that does not answer, however it stopped: plain, with nothing that leads into the app. */
function linkNotFound(): PageError {
  return new PageError(
    404,
    'This link does not work',
    'The link may have been revoked, or what it shared is no longer available. Ask the person who sent it.',
  )
}

export const sharePages = (deps: SharePagesDeps) => {
  const shares = shareDeps(deps)
  const now = (): number => deps.clock.now()

  async function threadShare(member: PageSession, threadId: string) {
    if (!isUuid(threadId)) throw notFound('Thread')
    const caller = callerFromSession(member.user)
    return { caller, thread: await requireOwnedThread(deps.threads, caller, threadId, 'share it') }
  }

  async function settingsPage(member: PageSession, notice: string | null = null) {
    return (
      <SettingsSharesPage
        viewer={viewerOf(member)}
        shares={await deps.shares.list({ createdBy: member.user.id })}
        sharingEnabled={await deps.shares.sharingEnabled(member.user.organizationId)}
        notice={notice}
      />
    )
  }

  async function adminPage(admin: PageSession, notice: string | null = null) {
    const organizationId = admin.user.organizationId
    return (
      <AdminSharesPage
        viewer={viewerOf(admin)}
        enabled={await deps.shares.sharingEnabled(organizationId)}
        shares={await deps.shares.list({ organizationId })}
        notice={notice}
      />
    )
  }

  const formOptions = { member: true, trustedForm: 'form', parse: 'none', detail: { hide: true } } as const
  const adminFormOptions = {
    organizationAdmin: true,
    trustedForm: 'form',
    parse: 'none',
    detail: { hide: true },
  } as const

  return new Elysia({ name: 'share-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      '/s/:token',
      async ({ params, html, set }) => {
        Object.assign(set.headers, sharedPageHeaders)
        const share = await openShare(deps.shares, params.token).catch(asLinkNotFound)
        return html(<SharedThreadPage share={share} base={sharePath(params.token)} />)
      },
      { page: true, detail: { hide: true } },
    )
    .get(
      '/s/:token/files/:attachmentId',
      async ({ params, request }) => {
        if (!isUuid(params.attachmentId)) throw linkNotFound()
        const file = await sharedFile(shares, params.token, params.attachmentId).catch(asLinkNotFound)
        const response = await attachmentResponse(deps.blobs, file, params.attachmentId, request)
        response.headers.set('x-robots-tag', 'noindex')
        // Checked again on every use, by anyone: no shared cache may keep a file once its link stops answering.
        response.headers.set('cache-control', 'no-store')
        response.headers.set('referrer-policy', 'no-referrer')
        return response
      },
      { page: true, detail: { hide: true } },
    )
    .get(
      '/threads/:threadId/share',
      async ({ member, params, html }) => {
        const { thread } = await threadShare(member, params.threadId)
        const sharingEnabled = await deps.shares.sharingEnabled(member.user.organizationId)
        return html(<ShareThreadPage viewer={viewerOf(member)} thread={thread} sharingEnabled={sharingEnabled} />)
      },
      { member: true, detail: { hide: true } },
    )
    .post(
      '/threads/:threadId/share',
      async ({ member, params, form, request, html }) => {
        const { caller, thread } = await threadShare(member, params.threadId)
        const includeFiles = field(form, 'include_files') === 'true'
        const body = { include_files: includeFiles }
        const created = await createShare(shares, caller, thread.id, body, now(), pageOrigin(request, member))
        return html(
          <ShareThreadPage
            viewer={viewerOf(member)}
            thread={thread}
            sharingEnabled={true}
            created={{ url: created.url, includeFiles }}
          />,
        )
      },
      formOptions,
    )
    .get(
      '/settings/shares',
      async ({ member, query, html }) => {
        return html(await settingsPage(member, noticeFor(shareNotices, query.notice)))
      },
      { member: true, detail: { hide: true } },
    )
    .post(
      '/settings/shares/:shareId/revoke',
      async ({ member, params, request, redirect }) => {
        const scope = { createdBy: member.user.id }
        const origin = pageOrigin(request, member)
        if (!isUuid(params.shareId) || !(await revokeShareIn(deps.shares, scope, params.shareId, now(), origin)))
          throw shareNotFound('/settings/shares')
        return redirect('/settings/shares?notice=share-revoked', 303)
      },
      formOptions,
    )
    .get(
      '/admin/shares',
      async ({ admin, query, html }) => {
        return html(await adminPage(admin, noticeFor(shareNotices, query.notice)))
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/shares',
      async ({ admin, form, request, redirect }) => {
        const enabled = field(form, 'enabled') === 'true'
        await setSharing(deps.shares, admin.user.organizationId, enabled, now(), pageOrigin(request, admin))
        return redirect(`/admin/shares?notice=${enabled ? 'sharing-on' : 'sharing-off'}`, 303)
      },
      adminFormOptions,
    )
    .post(
      '/admin/shares/:shareId/revoke',
      async ({ admin, params, request, redirect }) => {
        const scope = { organizationId: admin.user.organizationId }
        const origin = pageOrigin(request, admin)
        if (!isUuid(params.shareId) || !(await revokeShareIn(deps.shares, scope, params.shareId, now(), origin)))
          throw shareNotFound('/admin/shares')
        return redirect('/admin/shares?notice=share-revoked', 303)
      },
      adminFormOptions,
    )
}

function asLinkNotFound(error: unknown): never {
  throw error instanceof AppError && error.status === 404 ? linkNotFound() : error
}

function shareNotFound(back: string): PageError {
  return new PageError(404, 'Share link not found', 'That link does not exist or was already revoked.', {
    action: { href: back, label: 'Back' },
  })
}
