// Administration → MCP servers over HTTP, for the organization's owners and admins, with the administration pages'
// rules: every post passes the `trustedForm` guard, POST-redirect-GET with a notice, a refusal shown on the page it
// came from, and a server (or tool) that cannot be found in the organization is the shared 404 page. Header values
// go into the sealed column and never come back out to a page. A server that signs in with OAuth is authorized from
// its page: Authorize sends the admin to its authorization server, whose answer comes back to the callback.

import { Elysia } from 'elysia'
import type { Logger } from '../shared/log'
import { guardedFetch, type OutboundRules } from '../shared/outbound/guarded-fetch'
import type { SecretBox } from '../shared/secret-box'
import { account, noticeFor, refusalOf } from '../web/account'
import { PageError } from '../web/errors'
import { consentPageHeaders, type PageSession, pageHeaders, pageOrigin, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field, type PostedForm } from '../web/trusted-form'
import {
  type AuthorizationDeps,
  authorizationRefusals,
  beginAuthorization,
  completeAuthorization,
} from './authorization'
import { mcpUserAgent } from './client'
import { oauthCallbackPath, oauthRedirectUrl } from './oauth-provider'
import type { ToolCaller } from './ports'
import type { McpServerRepository, McpServerRow } from './repository'
import {
  addServer,
  type ConnectorsDeps,
  listServers,
  parseHeaderLines,
  refreshServer,
  removeServer,
  requireServer,
  serverWithTools,
  setToolEnabled,
  setTrusted,
} from './service'
import {
  DeleteServerPage,
  McpServerPage,
  McpServersPage,
  type ServerFormValues,
  serverPath,
  serversPath,
} from './views/mcp-servers'

export interface ConnectorPagesDeps extends WebDeps {
  mcpServers: McpServerRepository
  secrets: SecretBox
  /** Fetches tool lists; without one, servers wait `pending` and Refresh says why. */
  toolCaller?: ToolCaller | null
  log: Logger
  allowPrivateNetworks: boolean
  /**
   * The bounds of requests to authorization servers (MCP_TIMEOUT_MS, MCP_RESPONSE_MAX_BYTES), under the same address
   * rule as the servers themselves; `allowPrivateNetworks` applies.
   */
  outbound: Pick<OutboundRules, 'timeoutMs' | 'maxResponseBytes' | 'resolve'>
}

export const serverNotices: Record<string, string> = {
  added: 'The server was added.',
  'added-oauth': 'The server was added. Authorize it to fetch its tools: it signs in with OAuth.',
  authorized: 'The server is authorized, and its tool list was fetched.',
  'authorized-refresh-failed':
    'The server is authorized, but its tool list could not be fetched: the reason is under State.',
  refreshed: 'The tool list was fetched again.',
  'refresh-failed': 'The tool list could not be fetched: the reason is under State.',
  trusted: 'The server is trusted: its tools run without asking first.',
  untrusted: 'The server is no longer trusted: its tools that may change something ask first.',
  'tool-on': 'The tool is on.',
  'tool-off': 'The tool is off: answers are not offered it.',
  deleted: 'The server was deleted.',
}

export const connectorPages = (deps: ConnectorPagesDeps) => {
  const service: ConnectorsDeps = {
    servers: deps.mcpServers,
    box: deps.secrets,
    caller: deps.toolCaller ?? null,
    allowPrivateNetworks: deps.allowPrivateNetworks,
  }
  const orgOf = (admin: PageSession) => admin.user.organizationId
  const authorization: AuthorizationDeps = {
    servers: deps.mcpServers,
    box: deps.secrets,
    fetch: guardedFetch({
      ...deps.outbound,
      allowPrivateNetworks: deps.allowPrivateNetworks,
      userAgent: mcpUserAgent,
    }),
    caller: deps.toolCaller ?? null,
    redirectUrl: oauthRedirectUrl(deps.publicUrl),
  }

  /**
   * A page with the Authorize form of an OAuth server: browsers hold the redirect after a form post to the page's
   * `form-action`, and Authorize's goes to the authorization server, as the consent page's goes to a client.
   */
  const formsMayLeave = (set: { headers: Record<string, unknown> }, server: McpServerRow) => {
    if (server.auth === 'oauth') Object.assign(set.headers, consentPageHeaders)
  }

  async function listPage(admin: PageSession, extra: Partial<Parameters<typeof McpServersPage>[0]> = {}) {
    return (
      <McpServersPage viewer={viewerOf(admin)} servers={await listServers(deps.mcpServers, orgOf(admin))} {...extra} />
    )
  }

  async function serverPage(
    admin: PageSession,
    serverId: string,
    set: { headers: Record<string, unknown> },
    extra: { notice?: string | null; error?: string },
  ) {
    const { server, tools } = await serverWithTools(deps.mcpServers, orgOf(admin), serverId).catch(missing)
    formsMayLeave(set, server)
    const oauth = server.auth === 'oauth' ? await deps.mcpServers.oauth(server.id) : null
    return <McpServerPage viewer={viewerOf(admin)} server={server} tools={tools} oauth={oauth} {...extra} />
  }

  /** The shared 404 page for a server (or a tool) not in the admin's organization. */
  function missing(error: unknown): never {
    const refusal = refusalOf(error)
    if (refusal.status !== 404) throw refusal
    throw new PageError(
      404,
      refusal.message.startsWith('Tool') ? 'Tool not found' : 'MCP server not found',
      'There is no such MCP server or tool in your organization. It may have been deleted.',
      { action: { href: serversPath, label: 'Back' } },
    )
  }

  /** The callback's refusals as error pages, each with its title and the way back. */
  function callbackFailed(error: unknown): never {
    const refusal = refusalOf(error)
    if (refusal.status === 404) missing(refusal)
    const titles: Record<string, string> = {
      [authorizationRefusals.expired]: 'Authorization expired',
      [authorizationRefusals.foreign]: 'Not your authorization',
      [authorizationRefusals.denied]: 'Authorization not given',
      [authorizationRefusals.failed]: 'Authorization failed',
    }
    throw new PageError(refusal.status, titles[refusal.code] ?? 'Authorization failed', refusal.message, {
      action: { href: serversPath, label: 'Back to MCP servers' },
      code: refusal.code,
    })
  }

  /**
   * One action on a server: CSRF-checked, then back to its page with the notice `run` names, or the refusal on its
   * page.
   */
  const action =
    <Params extends { serverId: string }>(
      run: (admin: PageSession, params: Params, form: PostedForm) => Promise<string>,
    ) =>
    async ({
      admin,
      params,
      form,
      html,
      redirect,
      set,
    }: {
      admin: PageSession
      params: Params
      form: PostedForm
      html: (value: JSX.Element) => unknown
      redirect: (url: string, status: 303) => unknown
      set: { status?: number | string; headers: Record<string, unknown> }
    }) => {
      const { serverId } = params
      let notice: string
      try {
        notice = await run(admin, params, form)
      } catch (error) {
        const refusal = refusalOf(error)
        if (refusal.status === 404) missing(refusal)
        set.status = refusal.status
        return html(await serverPage(admin, serverId, set, { error: refusal.message }))
      }
      return redirect(`${serverPath(serverId)}?notice=${notice}`, 303)
    }

  const flag = (form: PostedForm, name: string) => field(form, name) === 'true'
  const options = { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } } as const
  const reading = { organizationAdmin: true, detail: { hide: true } } as const

  return new Elysia({ name: 'connector-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      serversPath,
      async ({ admin, query, html }) => html(await listPage(admin, { notice: noticeFor(serverNotices, query.notice) })),
      reading,
    )
    .post(
      serversPath,
      async ({ admin, form, request, html, redirect, set }) => {
        const headerLines = field(form, 'headers') ?? ''
        const values: ServerFormValues = {
          name: (field(form, 'name') ?? '').trim(),
          url: (field(form, 'url') ?? '').trim(),
          retypeHeaders: headerLines.trim() !== '',
          trusted: flag(form, 'trusted'),
          oauth: flag(form, 'oauth'),
        }
        try {
          const added = await addServer(
            service,
            {
              organizationId: orgOf(admin),
              createdBy: admin.user.id,
              name: values.name,
              url: values.url,
              headers: parseHeaderLines(headerLines.split('\n')),
              auth: values.oauth ? 'oauth' : undefined,
              trusted: values.trusted,
            },
            deps.clock.now(),
            pageOrigin(request, admin),
          )
          deps.log.info('mcp server added', { serverId: added.server.id, by: admin.user.id })
          return redirect(`${serverPath(added.server.id)}?notice=${values.oauth ? 'added-oauth' : 'added'}`, 303)
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          // The name, URL and trust go back into the form; header values never do, not even to who typed them.
          return html(await listPage(admin, { error: refusal.message, form: values }))
        }
      },
      options,
    )
    .get(
      `${serversPath}/:serverId`,
      async ({ admin, params, query, html, set }) =>
        html(await serverPage(admin, params.serverId, set, { notice: noticeFor(serverNotices, query.notice) })),
      reading,
    )
    .post(
      `${serversPath}/:serverId/authorize`,
      async ({ admin, params, html, redirect, set }) => {
        const server = await requireServer(deps.mcpServers, orgOf(admin), params.serverId).catch(missing)
        try {
          const url = await beginAuthorization(authorization, server, admin.user.id, deps.clock.now())
          deps.log.info('mcp server authorization started', { serverId: server.id, by: admin.user.id })
          return redirect(url.href, 303)
        } catch (error) {
          // Discovery or registration failed: the reason on the server's page, where Authorize is tried again.
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await serverPage(admin, server.id, set, { error: refusal.message }))
        }
      },
      options,
    )
    .get(
      oauthCallbackPath,
      async ({ admin, query, redirect }) => {
        const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined)
        const done = await completeAuthorization(
          authorization,
          {
            state: text('state'),
            code: text('code'),
            error: text('error'),
            errorDescription: text('error_description'),
            iss: text('iss'),
          },
          { id: admin.user.id, organizationId: orgOf(admin) },
          deps.clock.now(),
        ).catch(callbackFailed)
        deps.log.info('mcp server authorized', { serverId: done.server.id, by: admin.user.id })
        const notice = done.refresh === null || done.refresh.error === null ? 'authorized' : 'authorized-refresh-failed'
        return redirect(`${serverPath(done.server.id)}?notice=${notice}`, 303)
      },
      reading,
    )
    .post(
      `${serversPath}/:serverId/refresh`,
      action(async (admin, { serverId }) => {
        const outcome = await refreshServer(service, orgOf(admin), serverId)
        return outcome.error === null ? 'refreshed' : 'refresh-failed'
      }),
      options,
    )
    .post(
      `${serversPath}/:serverId/trust`,
      action(async (admin, { serverId }, form) => {
        const trusted = flag(form, 'trusted')
        await setTrusted(service, orgOf(admin), serverId, { trusted }, deps.clock.now())
        deps.log.info('mcp server trust changed', { serverId, trusted, by: admin.user.id })
        return trusted ? 'trusted' : 'untrusted'
      }),
      options,
    )
    .post(
      `${serversPath}/:serverId/tools/:toolName`,
      action(async (admin, { serverId, toolName }: { serverId: string; toolName: string }, form) => {
        const enabled = flag(form, 'enabled')
        await setToolEnabled(service, orgOf(admin), serverId, toolName, { enabled })
        return enabled ? 'tool-on' : 'tool-off'
      }),
      options,
    )
    .get(
      `${serversPath}/:serverId/delete`,
      async ({ admin, params, html }) => {
        const server = await requireServer(deps.mcpServers, orgOf(admin), params.serverId).catch(missing)
        return html(<DeleteServerPage viewer={viewerOf(admin)} server={server} />)
      },
      reading,
    )
    .post(
      `${serversPath}/:serverId/delete`,
      async ({ admin, params, request, redirect }) => {
        const origin = pageOrigin(request, admin)
        await removeServer(service, orgOf(admin), params.serverId, deps.clock.now(), origin).catch(missing)
        deps.log.info('mcp server removed', { serverId: params.serverId, by: admin.user.id })
        return redirect(`${serversPath}?notice=deleted`, 303)
      },
      options,
    )
}
