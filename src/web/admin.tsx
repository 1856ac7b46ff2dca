// The administration pages over HTTP, for the organization's owners and admins (members get a 403 page):
// OAuth clients (list, detail, secret rotation, deletion after confirmation), members (add with a one-time
// password, change role, remove after confirmation), registration tokens and the threads' retention period. Same rules as the settings pages:
// CSRF-checked form posts, secrets shown once on the response page, POST-redirect-GET for everything else.
import { Elysia } from 'elysia'
import { type Actor, addMember, changeMemberRole, findMember, isRole, listMembers, removeMember } from '../auth/members'
import type { Role } from '../auth/model'
import {
  deleteOrganizationClient,
  getOrganizationClient,
  listOrganizationClients,
  rotateClientSecret,
} from '../oauth/management'
import { createRegistrationToken } from '../oauth/registration'
import { type AppError, invalidRequest } from '../shared/errors'
import { parseRetentionDays } from '../threads/retention'
import { account, accountPageHeaders, RefusedFormPage, readTrustedForm } from './account'
import type { PageSession, WebDeps } from './index'
import { viewerOf } from './layout'
import { AdminClientPage, AdminClientsPage, DeleteClientPage } from './pages/admin/clients'
import { type MemberFormValues, MembersPage, RemoveMemberPage } from './pages/admin/members'
import { RetentionPage } from './pages/admin/retention'
import { MessagePage } from './pages/message'
import { AdminRegistrationPage } from './pages/settings/registration'
import { noticeFor, refusalOf } from './settings'

export const adminNotices: Record<string, string> = {
  'client-deleted': 'The client was deleted, and every token it held stopped working.',
  'role-changed': 'The role was changed.',
  'member-removed': 'The member was removed: signed out, with every token and connected app revoked.',
  'retention-saved': 'The retention period was saved.',
}

function actorOf(admin: PageSession): Actor {
  const { id, role, organizationId, organizationSlug } = admin.user
  return { id, role, organizationId, organizationSlug }
}

function NotFoundPage({ admin, what, back }: { admin: PageSession; what: string; back: string }): JSX.Element {
  return (
    <MessagePage
      title={`${what} not found`}
      message={`There is no such ${what.toLowerCase()} in your organization. It may have been deleted.`}
      viewer={viewerOf(admin)}
      action={{ href: back, label: 'Back' }}
    />
  )
}

export const adminPages = (deps: WebDeps) => {
  const now = (): number => deps.clock.now()

  async function membersPage(
    admin: PageSession,
    extra: Partial<Parameters<typeof MembersPage>[0]> = {},
  ): Promise<JSX.Element> {
    return (
      <MembersPage
        viewer={viewerOf(admin)}
        actor={{ id: admin.user.id, role: admin.user.role }}
        members={await listMembers(deps.store.users, admin.user.organizationId)}
        signInUrl={`${deps.publicUrl}/login`}
        {...extra}
      />
    )
  }

  /** The client's detail page, or the not-found page when it is not this organization's. */
  async function clientPage(
    admin: PageSession,
    clientId: string,
    extra: { rotatedSecret?: string; error?: string } = {},
  ) {
    try {
      const client = await getOrganizationClient(deps.store.oauthClients, admin.user.organizationId, clientId)
      return {
        status: 200,
        page: <AdminClientPage viewer={viewerOf(admin)} client={client} publicUrl={deps.publicUrl} {...extra} />,
      }
    } catch (error) {
      return {
        status: refusalOf(error).status,
        page: <NotFoundPage admin={admin} what="OAuth client" back="/admin/clients" />,
      }
    }
  }

  return new Elysia({ name: 'admin-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, accountPageHeaders)
    })
    .get('/admin', ({ redirect }) => redirect('/admin/clients', 303), {
      organizationAdmin: true,
      detail: { hide: true },
    })
    .get(
      '/admin/clients',
      async ({ admin, query, html }) =>
        html(
          <AdminClientsPage
            viewer={viewerOf(admin)}
            clients={await listOrganizationClients(deps.store.oauthClients, admin.user.organizationId)}
            notice={noticeFor(adminNotices, query.notice)}
          />,
        ),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .get(
      '/admin/clients/:clientId',
      async ({ admin, params, html, set }) => {
        const shown = await clientPage(admin, params.clientId)
        set.status = shown.status
        return html(shown.page)
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/clients/:clientId/secret',
      async ({ admin, params, request, html, set }) => {
        if (!(await readTrustedForm(request, admin, deps.publicUrl))) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        let rotated: { rotatedSecret?: string; error?: string }
        try {
          rotated = {
            rotatedSecret: (
              await rotateClientSecret(deps.store.oauthClients, admin.user.organizationId, params.clientId)
            ).client_secret,
          }
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          rotated = { error: refusal.message }
        }
        const shown = await clientPage(admin, params.clientId, rotated)
        if (shown.status !== 200) set.status = shown.status
        return html(shown.page)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/clients/:clientId/delete',
      async ({ admin, params, html, set }) => {
        try {
          const client = await getOrganizationClient(
            deps.store.oauthClients,
            admin.user.organizationId,
            params.clientId,
          )
          return html(<DeleteClientPage viewer={viewerOf(admin)} client={client} />)
        } catch (error) {
          set.status = refusalOf(error).status
          return html(<NotFoundPage admin={admin} what="OAuth client" back="/admin/clients" />)
        }
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/clients/:clientId/delete',
      async ({ admin, params, request, html, redirect, set }) => {
        if (!(await readTrustedForm(request, admin, deps.publicUrl))) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        try {
          await deleteOrganizationClient(deps.store.oauthClients, admin.user.organizationId, params.clientId)
        } catch (error) {
          set.status = refusalOf(error).status
          return html(<NotFoundPage admin={admin} what="OAuth client" back="/admin/clients" />)
        }
        return redirect('/admin/clients?notice=client-deleted', 303)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/members',
      async ({ admin, query, html }) =>
        html(await membersPage(admin, { notice: noticeFor(adminNotices, query.notice) })),
      {
        organizationAdmin: true,
        detail: { hide: true },
      },
    )
    .post(
      '/admin/members',
      async ({ admin, request, html, set }) => {
        const form = await readTrustedForm(request, admin, deps.publicUrl)
        if (!form) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        const role = form.get('role') ?? ''
        const values: MemberFormValues = {
          email: (form.get('email') ?? '').trim(),
          name: form.get('name') ?? '',
          role: isRole(role) ? role : 'member',
        }
        try {
          if (!isRole(role)) throw invalidRole()
          const added = await addMember(deps.store.users, actorOf(admin), values, now())
          return html(await membersPage(admin, { added }))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message, form: values }))
        }
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .post(
      '/admin/members/:sub/role',
      async ({ admin, params, request, html, redirect, set }) => {
        const form = await readTrustedForm(request, admin, deps.publicUrl)
        if (!form) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        const role = form.get('role') ?? ''
        let changed: { id: number; role: Role }
        try {
          if (!isRole(role)) throw invalidRole()
          changed = await changeMemberRole(deps.store.users, actorOf(admin), params.sub, role)
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message }))
        }
        // Someone who just gave up their own admin role can no longer see this page.
        if (changed.id === admin.user.id && changed.role === 'member') return redirect('/settings', 303)
        return redirect('/admin/members?notice=role-changed', 303)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/members/:sub/remove',
      async ({ admin, params, html, set }) => {
        try {
          const member = await findMember(deps.store.users, admin.user.organizationId, params.sub)
          return html(<RemoveMemberPage viewer={viewerOf(admin)} member={member} />)
        } catch (error) {
          set.status = refusalOf(error).status
          return html(<NotFoundPage admin={admin} what="Member" back="/admin/members" />)
        }
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/members/:sub/remove',
      async ({ admin, params, request, html, redirect, set }) => {
        if (!(await readTrustedForm(request, admin, deps.publicUrl))) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        try {
          await removeMember(deps.store.users, actorOf(admin), params.sub, now())
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message }))
        }
        return redirect('/admin/members?notice=member-removed', 303)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .get('/admin/registration-token', ({ admin, html }) => html(<AdminRegistrationPage viewer={viewerOf(admin)} />), {
      organizationAdmin: true,
      detail: { hide: true },
    })
    .post(
      '/admin/registration-token',
      async ({ admin, request, html, set }) => {
        if (!(await readTrustedForm(request, admin, deps.publicUrl))) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        const created = await createRegistrationToken(deps.store.oauthClients, admin.user, now())
        return html(<AdminRegistrationPage viewer={viewerOf(admin)} created={created} />)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/retention',
      async ({ admin, query, html }) =>
        html(
          <RetentionPage
            viewer={viewerOf(admin)}
            days={await deps.store.users.retentionOf(admin.user.organizationId)}
            notice={noticeFor(adminNotices, query.notice)}
          />,
        ),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/retention',
      async ({ admin, request, html, redirect, set }) => {
        const form = await readTrustedForm(request, admin, deps.publicUrl)
        if (!form) {
          set.status = 403
          return html(<RefusedFormPage session={admin} />)
        }
        const entered = form.get('days') ?? ''
        try {
          await deps.store.users.setRetention(admin.user.organizationId, parseRetentionDays(entered))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          const days = await deps.store.users.retentionOf(admin.user.organizationId)
          return html(<RetentionPage viewer={viewerOf(admin)} days={days} error={refusal.message} entered={entered} />)
        }
        return redirect('/admin/retention?notice=retention-saved', 303)
      },
      { organizationAdmin: true, parse: 'none', detail: { hide: true } },
    )
}

function invalidRole(): AppError {
  return invalidRequest('Choose a role from the list.')
}
