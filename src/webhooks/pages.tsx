// Administration → Webhooks over HTTP, for the organization's owners and admins, with the administration pages' rules:
// every post passes the `trustedForm` guard, the new endpoint's secret is shown once on the response page,
// POST-redirect-GET otherwise, and an endpoint that cannot be found is the shared error page.

import { Elysia } from 'elysia'
import type { Logger } from '../shared/log'
import { account, noticeFor, refusalOf } from '../web/account'
import { PageError } from '../web/errors'
import { type PageSession, pageHeaders, pageOrigin, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field, fieldValues } from '../web/trusted-form'
import type { WebhookRepository } from './repository'
import {
  createEndpoint,
  deleteEndpoint,
  disableEndpoint,
  enableEndpoint,
  eventFilter,
  requireEndpoint,
  sendTestEvent,
} from './service'
import { DeleteWebhookPage, type WebhookFormValues, WebhooksPage } from './views/webhooks'

export interface WebhookPagesDeps extends WebDeps {
  webhooks: WebhookRepository
  log: Logger
  allowPrivateNetworks: boolean
  /** Queued deliveries (a test event) are sent at once. */
  wake: () => void
}

export const webhookNotices: Record<string, string> = {
  'test-queued': 'A test event was queued; its delivery appears below in a moment.',
  disabled: 'The endpoint was disabled: it receives nothing until it is enabled again.',
  enabled: 'The endpoint was enabled.',
  deleted: 'The endpoint was deleted.',
}

/** Attempts listed on the page: enough to see a retry schedule, few enough to read. */
const shownAttempts = 50

export const webhookPages = (deps: WebhookPagesDeps) => {
  async function page(admin: PageSession, extra: Partial<Parameters<typeof WebhooksPage>[0]> = {}) {
    const organizationId = admin.user.organizationId
    return (
      <WebhooksPage
        viewer={viewerOf(admin)}
        endpoints={await deps.webhooks.listEndpoints(organizationId)}
        attempts={await deps.webhooks.recentAttempts(organizationId, shownAttempts)}
        {...extra}
      />
    )
  }

  function notFound(): PageError {
    return new PageError(
      404,
      'Webhook endpoint not found',
      'There is no such webhook endpoint in your organization. It may have been deleted.',
      {
        action: { href: '/admin/webhooks', label: 'Back' },
      },
    )
  }

  /** One endpoint action: CSRF-checked, then back to the list with a notice, or the refusal on the page. */
  const action =
    (run: (admin: PageSession, endpointId: string, request: Request) => Promise<void>, notice: string) =>
    async ({
      admin,
      params,
      request,
      html,
      redirect,
      set,
    }: {
      admin: PageSession
      params: { endpointId: string }
      request: Request
      html: (value: JSX.Element) => unknown
      redirect: (url: string, status: 303) => unknown
      set: { status?: number | string }
    }) => {
      try {
        await run(admin, params.endpointId, request)
      } catch (error) {
        const refusal = refusalOf(error)
        if (refusal.status === 404) throw notFound()
        set.status = refusal.status
        return html(await page(admin, { error: refusal.message }))
      }
      return redirect(`/admin/webhooks?notice=${notice}`, 303)
    }

  const orgOf = (admin: PageSession) => admin.user.organizationId
  const who = (admin: PageSession) => admin.user.email
  const options = { organizationAdmin: true, trustedForm: 'form', parse: 'none', detail: { hide: true } } as const

  return new Elysia({ name: 'webhook-pages' })
    .use(account(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, pageHeaders)
    })
    .get(
      '/admin/webhooks',
      async ({ admin, query, html }) => html(await page(admin, { notice: noticeFor(webhookNotices, query.notice) })),
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/webhooks',
      async ({ admin, form, request, html, set }) => {
        const values: WebhookFormValues = {
          url: (field(form, 'url') ?? '').trim(),
          events: fieldValues(form, 'events'),
        }
        try {
          const created = await createEndpoint(
            deps.webhooks,
            {
              organizationId: orgOf(admin),
              createdBy: admin.user.id,
              url: values.url,
              events: eventFilter(values.events),
            },
            { allowPrivateNetworks: deps.allowPrivateNetworks },
            deps.clock.now(),
            pageOrigin(request, admin),
          )
          deps.log.info('webhook endpoint added', { endpointId: created.endpoint.id, by: admin.user.id })
          return html(await page(admin, { created }))
        } catch (error) {
          const refusal = refusalOf(error)
          set.status = refusal.status
          return html(await page(admin, { error: refusal.message, form: values }))
        }
      },
      options,
    )
    .post(
      '/admin/webhooks/:endpointId/test',
      action(async (admin, id) => {
        await sendTestEvent(deps.webhooks, orgOf(admin), id, deps.clock.now())
        deps.wake()
      }, 'test-queued'),
      options,
    )
    .post(
      '/admin/webhooks/:endpointId/disable',
      action((admin, id) => disableEndpoint(deps.webhooks, orgOf(admin), id, who(admin), deps.clock.now()), 'disabled'),
      options,
    )
    .post(
      '/admin/webhooks/:endpointId/enable',
      action((admin, id) => enableEndpoint(deps.webhooks, orgOf(admin), id, deps.clock.now()), 'enabled'),
      options,
    )
    .get(
      '/admin/webhooks/:endpointId/delete',
      async ({ admin, params, html }) => {
        const endpoint = await requireEndpoint(deps.webhooks, orgOf(admin), params.endpointId).catch((error) => {
          throw refusalOf(error).status === 404 ? notFound() : error
        })
        return html(<DeleteWebhookPage viewer={viewerOf(admin)} endpoint={endpoint} />)
      },
      { organizationAdmin: true, detail: { hide: true } },
    )
    .post(
      '/admin/webhooks/:endpointId/delete',
      action(
        (admin, id, request) =>
          deleteEndpoint(deps.webhooks, orgOf(admin), id, deps.clock.now(), pageOrigin(request, admin)),
        'deleted',
      ),
      options,
    )
}
