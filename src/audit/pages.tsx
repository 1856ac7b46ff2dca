// Administration → Audit over HTTP: the log page with its filters and pages, its downloads (CSV, JSON Lines) under
// the session, and the form that sets how long events are kept. Owners and admins only (the `organizationAdmin`
// macro); behaviour in service.ts.
import { Elysia } from 'elysia'
import type { UserRepository } from '../auth/users.repository'
import { account, noticeFor, refusalOf } from '../web/account'
import { type PageSession, pageHeaders, pageOrigin, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field } from '../web/trusted-form'
import type { AuditRepository } from './repository'
import {
  type DownloadFormat,
  downloadEvents,
  type FilterQuery,
  listEvents,
  parseAuditRetentionDays,
  setAuditRetention,
} from './service'
import { AuditPage, type AuditPageProps, adminAuditPath } from './views/audit'

export interface AuditPagesDeps extends WebDeps {
  audit: AuditRepository
  users: Pick<UserRepository, 'findByEmail' | 'listMembers'>
}

const notices: Record<string, string> = {
  'retention-saved': 'The audit retention period was saved.',
}

type Query = Record<string, string | undefined>

/** The filters a GET form sent; blank fields are no filter. */
function filtersOf(query: Query): FilterQuery {
  const filters: FilterQuery = {}
  for (const name of ['actor', 'action', 'target', 'from', 'to'] as const) {
    const value = query[name]?.trim()
    if (value) filters[name] = value
  }
  return filters
}

const contentTypes: Record<DownloadFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/jsonl; charset=utf-8',
}

export const auditPages = (deps: AuditPagesDeps) => {
  const reader = (admin: PageSession) => ({ organizationId: admin.user.organizationId, role: admin.user.role })

  /** The page for the filters and place asked for; refused filters are said on the page, with their status. */
  async function page(
    admin: PageSession,
    query: Query,
    set: { status?: number | string },
    extra: Partial<AuditPageProps> = {},
  ): Promise<JSX.Element> {
    const organizationId = admin.user.organizationId
    const filters = filtersOf(query)
    const [members, retentionDays] = await Promise.all([
      deps.users.listMembers(organizationId),
      deps.audit.retentionOf(organizationId),
    ])
    const emails = new Map(members.map((member) => [member.id, member.email]))
    let listed: Pick<AuditPageProps, 'page' | 'error'>
    try {
      const after = query.after?.trim() || undefined
      listed = { page: await listEvents(deps, reader(admin), { ...filters, after, limit: 50 }) }
    } catch (error) {
      const refusal = refusalOf(error)
      set.status = refusal.status
      listed = { page: null, error: refusal.message }
    }
    return (
      <AuditPage
        viewer={viewerOf(admin)}
        query={filters}
        paged={Boolean(query.after)}
        emailOf={(id) => emails.get(id)}
        retentionDays={retentionDays}
        notice={noticeFor(notices, query.notice)}
        {...listed}
        {...extra}
      />
    )
  }

  /** Every matching event as a file; refused filters are the error page. */
  const download =
    (format: DownloadFormat) =>
    async ({ admin, query }: { admin: PageSession; query: Query }) => {
      const stream = await downloadEvents(deps, reader(admin), filtersOf(query), format)
      const day = new Date(deps.clock.now()).toISOString().slice(0, 10)
      return new Response(stream, {
        headers: {
          ...pageHeaders,
          'content-type': contentTypes[format],
          'content-disposition': `attachment; filename="audit-${admin.user.organizationSlug}-${day}.${format}"`,
        },
      })
    }

  return new Elysia({ name: 'audit-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(adminAuditPath, async ({ admin, query, html, set }) => html(await page(admin, query, set)), {
      organizationAdmin: true,
      detail: { hide: true },
    })
    .get(`${adminAuditPath}.csv`, download('csv'), { organizationAdmin: true, detail: { hide: true } })
    .get(`${adminAuditPath}.jsonl`, download('jsonl'), { organizationAdmin: true, detail: { hide: true } })
    .post(
      `${adminAuditPath}/retention`,
      async ({ admin, form, request, html, redirect, set }) => {
        const entered = field(form, 'days') ?? ''
        try {
          const days = parseAuditRetentionDays(entered)
          await setAuditRetention(
            deps.audit,
            admin.user.organizationId,
            days,
            deps.clock.now(),
            pageOrigin(request, admin),
          )
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await page(admin, {}, {}, { retention: { error: refusal.message, entered } }))
        }
        return redirect(`${adminAuditPath}?notice=retention-saved`, 303)
      },
      { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } },
    )
}
