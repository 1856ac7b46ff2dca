// The administration feature: its pages over HTTP, for the organization's owners and admins (members get a 403
// page): OAuth clients (list, detail, secret rotation, deletion after confirmation), members (add with a one-time
// password, change role, remove after confirmation), registration tokens, the threads' retention period and the
// models members may use. The behaviour is auth's, oauth's, threads' and models' (members.ts, management.ts,
// registration.ts, retention.ts, models/service.ts). Same rules as
// the settings pages: every post passes the `trustedForm` guard, secrets are shown once on the response page,
// POST-redirect-GET for everything else, and what cannot be found is the shared error page.

import { Elysia } from 'elysia'
import { type Actor, addMember, changeMemberRole, findMember, isRole, listMembers, removeMember } from '../auth/members'
import type { Role } from '../auth/model'
import type { UserRepository } from '../auth/users.repository'
import type { Catalogue } from '../models/catalogue'
import type { ModelRepository } from '../models/repository'
import { setChoice, viewChoice } from '../models/service'
import type { ClientRepository } from '../oauth/clients.repository'
import {
  deleteOrganizationClient,
  getOrganizationClient,
  listOrganizationClients,
  rotateClientSecret,
} from '../oauth/management'
import { createRegistrationToken } from '../oauth/registration'
import type { QuotaRepository } from '../quotas/repository'
import {
  parseCost,
  parseTokens,
  periodOf,
  resetDay,
  setMemberDefault,
  setMemberOverride,
  setOrganizationBudget,
  viewBudgets,
} from '../quotas/service'
import { AdminRegistrationPage } from '../settings/views/registration'
import { type AppError, invalidRequest } from '../shared/errors'
import { parseRetentionDays, setRetention } from '../threads/retention'
import { account, noticeFor, refusalOf } from '../web/account'
import { type PageSession, pageHeaders, pageOrigin, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field, fieldValues } from '../web/trusted-form'
import { AdminClientPage, AdminClientsPage, DeleteClientPage } from './views/clients'
import { type MemberFormValues, MembersPage, RemoveMemberPage } from './views/members'
import { type ModelsFormValues, ModelsPage } from './views/models'
import { type QuotaFormValues, type QuotaScope, QuotasPage, quotasPath } from './views/quotas'
import { RetentionPage } from './views/retention'

export const adminNotices: Record<string, string> = {
  'client-deleted': 'The client was deleted, and every token it held stopped working.',
  'role-changed': 'The role was changed.',
  'member-removed': 'The member was removed: signed out, with every token and connected app revoked.',
  'retention-saved': 'The retention period was saved.',
  'models-saved': "The organization's models were saved.",
  'quota-saved': 'The budget was saved.',
  'quota-removed': "The member's own budget was removed: they have each member's budget again.",
}

function actorOf(admin: PageSession, request: Request): Actor {
  const { id, role, organizationId, organizationSlug } = admin.user
  return { id, role, organizationId, organizationSlug, origin: pageOrigin(request, admin) }
}

export interface AdminDeps extends WebDeps {
  users: UserRepository
  /** The organization's OAuth clients: the authorization server's storage. */
  oauthClients: ClientRepository
  /** The server's models and the organization's choice among them (src/models/). */
  catalogue: Catalogue
  models: ModelRepository
  /** Monthly budgets and the month's totals (src/quotas/). */
  quotas: QuotaRepository
}

export const adminPages = (deps: AdminDeps) => {
  const now = (): number => deps.clock.now()

  async function membersPage(
    admin: PageSession,
    extra: Partial<Parameters<typeof MembersPage>[0]> = {},
  ): Promise<JSX.Element> {
    return (
      <MembersPage
        viewer={viewerOf(admin)}
        actor={{ id: admin.user.id, role: admin.user.role }}
        members={await listMembers(deps.users, admin.user.organizationId)}
        signInUrl={`${deps.publicUrl}/login`}
        {...extra}
      />
    )
  }

  /** Administration → Usage limits, with the organization's use this month. */
  async function quotasPage(
    admin: PageSession,
    extra: { notice?: string | null; error?: string; entered?: QuotaFormValues } = {},
  ): Promise<JSX.Element> {
    const organizationId = admin.user.organizationId
    const month = periodOf(now())
    const [budgets, members, totals] = await Promise.all([
      viewBudgets(deps, organizationId),
      listMembers(deps.users, organizationId),
      deps.quotas.monthTotals(organizationId, 0, month),
    ])
    return (
      <QuotasPage
        viewer={viewerOf(admin)}
        budgets={budgets}
        members={members}
        used={totals.organization}
        month={month}
        resetDay={resetDay(now())}
        {...extra}
      />
    )
  }

  /** A posted budget form: the organization's, the default per member, or one member's (or its removal). */
  async function saveBudget(
    admin: PageSession,
    entered: QuotaFormValues,
    remove: boolean,
    request: Request,
  ): Promise<string> {
    const organizationId = admin.user.organizationId
    const act = { now: now(), origin: pageOrigin(request, admin) }
    if (entered.scope === 'member') {
      const member = await findMember(deps.users, organizationId, entered.member ?? '')
      if (remove) {
        await setMemberOverride(deps, organizationId, member.id, null, act)
        return 'quota-removed'
      }
      const change = { tokens: parseTokens(entered.tokens), costMicros: parseCost(entered.cost) }
      await setMemberOverride(deps, organizationId, member.id, change, act)
      return 'quota-saved'
    }
    const change = { tokens: parseTokens(entered.tokens), costMicros: parseCost(entered.cost) }
    if (entered.scope === 'organization') await setOrganizationBudget(deps, organizationId, change, act)
    else await setMemberDefault(deps, organizationId, change, act)
    return 'quota-saved'
  }

  /** The client's detail page; a client of another organization is not found. */
  async function clientPage(
    admin: PageSession,
    clientId: string,
    extra: { rotatedSecret?: string; error?: string } = {},
  ): Promise<JSX.Element> {
    const client = await getOrganizationClient(deps.oauthClients, admin.user.organizationId, clientId)
    return <AdminClientPage viewer={viewerOf(admin)} client={client} publicUrl={deps.publicUrl} {...extra} />
  }

  return new Elysia({ name: 'admin-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
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
            clients={await listOrganizationClients(deps.oauthClients, admin.user.organizationId)}
            notice={noticeFor(adminNotices, query.notice)}
          />,
        ),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .get(
      '/admin/clients/:clientId',
      async ({ admin, params, html }) => html(await clientPage(admin, params.clientId)),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/clients/:clientId/secret',
      async ({ admin, params, request, html, set }) => {
        let rotated: { rotatedSecret?: string; error?: string }
        try {
          const origin = pageOrigin(request, admin)
          const organizationId = admin.user.organizationId
          rotated = {
            rotatedSecret: (await rotateClientSecret(deps.oauthClients, organizationId, params.clientId, now(), origin))
              .client_secret,
          }
        } catch (error) {
          // A public client has no secret: said on its page. A client not found is the error page.
          const refusal = refusalOf(error)
          if (refusal.status === 404) throw refusal
          set.status = refusal.status
          rotated = { error: refusal.message }
        }
        return html(await clientPage(admin, params.clientId, rotated))
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/clients/:clientId/delete',
      async ({ admin, params, html }) => {
        const client = await getOrganizationClient(deps.oauthClients, admin.user.organizationId, params.clientId)
        return html(<DeleteClientPage viewer={viewerOf(admin)} client={client} />)
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/clients/:clientId/delete',
      async ({ admin, params, request, redirect }) => {
        const origin = pageOrigin(request, admin)
        await deleteOrganizationClient(deps.oauthClients, admin.user.organizationId, params.clientId, now(), origin)
        return redirect('/admin/clients?notice=client-deleted', 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
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
      async ({ admin, form, request, html, set }) => {
        const role = field(form, 'role') ?? ''
        const values: MemberFormValues = {
          email: (field(form, 'email') ?? '').trim(),
          name: field(form, 'name') ?? '',
          role: isRole(role) ? role : 'member',
        }
        try {
          if (!isRole(role)) throw invalidRole()
          const added = await addMember(deps.users, actorOf(admin, request), values, now())
          return html(await membersPage(admin, { added }))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message, form: values }))
        }
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .post(
      '/admin/members/:sub/role',
      async ({ admin, params, form, request, html, redirect, set }) => {
        const role = field(form, 'role') ?? ''
        let changed: { id: number; role: Role }
        try {
          if (!isRole(role)) throw invalidRole()
          changed = await changeMemberRole(deps.users, actorOf(admin, request), params.sub, role, now())
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message }))
        }
        // Someone who just gave up their own admin role can no longer see this page.
        if (changed.id === admin.user.id && changed.role === 'member') return redirect('/settings', 303)
        return redirect('/admin/members?notice=role-changed', 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/members/:sub/remove',
      async ({ admin, params, html }) => {
        const member = await findMember(deps.users, admin.user.organizationId, params.sub)
        return html(<RemoveMemberPage viewer={viewerOf(admin)} member={member} />)
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/members/:sub/remove',
      async ({ admin, params, request, html, redirect, set }) => {
        try {
          await removeMember(deps.users, actorOf(admin, request), params.sub, now())
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await membersPage(admin, { error: refusal.message }))
        }
        return redirect('/admin/members?notice=member-removed', 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get('/admin/registration-token', ({ admin, html }) => html(<AdminRegistrationPage viewer={viewerOf(admin)} />), {
      organizationAdmin: true,
      detail: { hide: true },
    })
    .post(
      '/admin/registration-token',
      async ({ admin, request, html }) => {
        const created = await createRegistrationToken(deps.oauthClients, admin.user, now(), pageOrigin(request, admin))
        return html(<AdminRegistrationPage viewer={viewerOf(admin)} created={created} />)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/retention',
      async ({ admin, query, html }) =>
        html(
          <RetentionPage
            viewer={viewerOf(admin)}
            days={await deps.users.retentionOf(admin.user.organizationId)}
            notice={noticeFor(adminNotices, query.notice)}
          />,
        ),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/retention',
      async ({ admin, form, request, html, redirect, set }) => {
        const entered = field(form, 'days') ?? ''
        try {
          const organizationId = admin.user.organizationId
          const days = parseRetentionDays(entered)
          await setRetention(deps.users, organizationId, days, now(), pageOrigin(request, admin))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          const days = await deps.users.retentionOf(admin.user.organizationId)
          return html(<RetentionPage viewer={viewerOf(admin)} days={days} error={refusal.message} entered={entered} />)
        }
        return redirect('/admin/retention?notice=retention-saved', 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/admin/models',
      async ({ admin, query, html }) =>
        html(
          <ModelsPage
            viewer={viewerOf(admin)}
            view={await viewChoice(deps, admin.user.organizationId)}
            notice={noticeFor(adminNotices, query.notice)}
          />,
        ),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/models',
      async ({ admin, form, request, html, redirect, set }) => {
        const entered: ModelsFormValues = {
          allowAll: field(form, 'scope') !== 'some',
          allowed: fieldValues(form, 'allowed'),
          defaultModel: field(form, 'default') ?? '',
        }
        try {
          await setChoice(
            deps,
            admin.user.organizationId,
            {
              allowed: entered.allowAll ? null : entered.allowed,
              defaultModel: entered.defaultModel === '' ? null : entered.defaultModel,
            },
            now(),
            pageOrigin(request, admin),
          )
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          const view = await viewChoice(deps, admin.user.organizationId)
          return html(<ModelsPage viewer={viewerOf(admin)} view={view} error={refusal.message} entered={entered} />)
        }
        return redirect('/admin/models?notice=models-saved', 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
    .get(
      quotasPath,
      async ({ admin, query, html }) =>
        html(await quotasPage(admin, { notice: noticeFor(adminNotices, query.notice) })),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      quotasPath,
      async ({ admin, form, request, html, redirect, set }) => {
        const scope = field(form, 'scope') ?? ''
        const entered: QuotaFormValues = {
          scope: isQuotaScope(scope) ? scope : 'organization',
          tokens: field(form, 'tokens') ?? '',
          cost: field(form, 'cost') ?? '',
          member: field(form, 'member') ?? '',
        }
        let notice: string
        try {
          if (!isQuotaScope(scope)) throw invalidRequest('Choose which budget to set.')
          if (scope === 'member' && !entered.member) throw invalidRequest('Choose a member.')
          notice = await saveBudget(admin, entered, field(form, 'remove') === 'true', request)
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await quotasPage(admin, { error: refusal.message, entered }))
        }
        return redirect(`${quotasPath}?notice=${notice}`, 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
}

function isQuotaScope(value: string): value is QuotaScope {
  return value === 'organization' || value === 'member-default' || value === 'member'
}

function invalidRole(): AppError {
  return invalidRequest('Choose a role from the list.')
}
