// The usage pages over HTTP: Administration → Usage (owners and admins: the organization's) and Settings → Usage
// (anyone signed in: their own), each with its CSV under the session. Ranges and rows are GET /usage's (service.ts).
import { Elysia } from 'elysia'
import type { Caller } from '../auth/model'
import { callerFromSession } from '../auth/sessions'
import type { UserRepository } from '../auth/users.repository'
import { account, refusalOf } from '../web/account'
import { type PageSession, pageHeaders, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import type { UsageGroup, UsageRepository } from './repository'
import { type UsageScope, usageCsv, usageList, usageOverview, usageRange } from './service'
import {
  AdminUsagePage,
  adminUsagePath,
  type BudgetLine,
  SettingsUsagePage,
  settingsUsagePath,
  type UsagePageProps,
} from './views/usage'

export interface UsagePagesDeps extends WebDeps {
  usage: UsageRepository
  users: UserRepository
  /** The currency of the models' prices; null when no model has one. */
  currency: string | null
  /** A person's monthly budgets and what this month used of each (the quotas feature, which imports this one). */
  budgets(caller: Caller): Promise<{ budgets: BudgetLine[]; resets: string }>
}

type Query = Record<string, string | undefined>

/** A GET form sends empty fields for dates left blank: those take the defaults. */
function rangeQuery(query: Query): { from?: string; to?: string } {
  return { ...(query.from ? { from: query.from } : {}), ...(query.to ? { to: query.to } : {}) }
}

const groups: Record<'admin' | 'settings', UsageGroup[]> = {
  admin: ['day', 'model', 'user'],
  settings: ['day', 'model', 'thread'],
}

export const usagePages = (deps: UsagePagesDeps) => {
  const report = { usage: deps.usage, currency: deps.currency }

  /** The page's props for the range asked for; a refused range is said on the page, with its status. */
  async function pageProps(
    session: PageSession,
    scope: UsageScope,
    query: Query,
    set: { status?: number | string },
  ): Promise<UsagePageProps> {
    const now = deps.clock.now()
    const defaults = usageRange({}, now)
    const entered = rangeQuery(query)
    const shown = { from: entered.from ?? defaults.from, to: entered.to ?? defaults.to }
    try {
      const range = usageRange(entered, now)
      return { viewer: viewerOf(session), ...shown, overview: await usageOverview({ ...report, now }, scope, range) }
    } catch (error) {
      const refusal = refusalOf(error)
      set.status = refusal.status
      return { viewer: viewerOf(session), ...shown, overview: null, error: refusal.message }
    }
  }

  /** The CSV of GET /usage for the scope, range and grouping asked for; a refusal is the error page. */
  async function csv(scope: UsageScope, query: Query, allowed: UsageGroup[], set: { headers: object }) {
    const now = deps.clock.now()
    const group = allowed.find((name) => name === query.group_by) ?? 'day'
    const list = await usageList({ ...report, now }, scope, usageRange(rangeQuery(query), now), group)
    Object.assign(set.headers, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="usage-${list.from.slice(0, 10)}-${list.to.slice(0, 10)}.csv"`,
    })
    return usageCsv(list)
  }

  return new Elysia({ name: 'usage-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      adminUsagePath,
      async ({ admin, query, html, set }) => {
        const organizationId = admin.user.organizationId
        const [props, members] = await Promise.all([
          pageProps(admin, { organizationId }, query, set),
          deps.users.listMembers(organizationId),
        ])
        const names = new Map(members.map((member) => [String(member.id), member.name || member.email]))
        return html(<AdminUsagePage {...props} memberName={(id) => names.get(id) ?? `Former member ${id}`} />)
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .get(
      `${adminUsagePath}.csv`,
      ({ admin, query, set }) => csv({ organizationId: admin.user.organizationId }, query, groups.admin, set),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .get(
      settingsUsagePath,
      async ({ member, query, html, set }) => {
        const scope = { organizationId: member.user.organizationId, userId: member.user.id }
        const [props, budgets] = await Promise.all([
          pageProps(member, scope, query, set),
          deps.budgets(callerFromSession(member.user)),
        ])
        return html(<SettingsUsagePage {...props} budgets={budgets} />)
      },
      { member: true, detail: { hide: true } },
    )
    .get(
      `${settingsUsagePath}.csv`,
      ({ member, query, set }) =>
        csv({ organizationId: member.user.organizationId, userId: member.user.id }, query, groups.settings, set),
      { member: true, detail: { hide: true } },
    )
}
