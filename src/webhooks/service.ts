// Administering an organization's webhook endpoints: adding one (its secret shown once), turning it off and on,
// sending it a test event, deleting it, and reading what was sent. Admin pages and the CLI call these; who may is
// their business (owners and admins of the organization).
import { type AuditOrigin, auditEntry, target, urlOrigin } from '../shared/audit'
import { AppError, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { checkEndpointUrl } from '../shared/outbound/addresses'
import { toIso } from '../shared/time'
import { isWebhookEventType, testEventType, type WebhookEventType, type WebhookPayload } from './events'
import type { EndpointRow, WebhookRepository } from './repository'
import { generateWebhookSecret } from './signing'

/** An organization has at most this many endpoints, as GitHub limits hooks per repository (20). */
export const maxEndpoints = 20

/** Reads an event filter such as `answer.completed,thread.created`; empty means every event. */
export function parseEventFilter(text: string): WebhookEventType[] | null {
  return eventFilter(
    text
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  )
}

/** The event types named, each once; none means every event. An unknown name is refused (400). */
export function eventFilter(names: string[]): WebhookEventType[] | null {
  const unknown = names.find((name) => !isWebhookEventType(name))
  if (unknown !== undefined) throw new AppError(400, 'invalid_request', `Unknown event type: ${unknown}`)
  return names.length === 0 ? null : [...new Set(names as WebhookEventType[])]
}

export interface NewEndpointInput {
  organizationId: number
  createdBy: number | null
  url: string
  events: WebhookEventType[] | null
}

/** Adds an endpoint and records it (its URL's origin only); the secret is in the answer only, once. */
export async function createEndpoint(
  webhooks: WebhookRepository,
  input: NewEndpointInput,
  options: { allowPrivateNetworks: boolean },
  now: number,
  origin: AuditOrigin,
): Promise<{ endpoint: EndpointRow; secret: string }> {
  const url = checkEndpointUrl(input.url.trim(), options.allowPrivateNetworks)
  if ((await webhooks.listEndpoints(input.organizationId)).length >= maxEndpoints) {
    throw new AppError(409, 'conflict', `An organization can have at most ${maxEndpoints} webhook endpoints.`)
  }
  const secret = generateWebhookSecret()
  const endpoint = await webhooks.createEndpoint(
    {
      id: newId(),
      organizationId: input.organizationId,
      url: url.href,
      secret,
      events: input.events,
      createdBy: input.createdBy,
      now,
    },
    (stored) =>
      auditEntry(origin, now, {
        organizationId: input.organizationId,
        action: 'webhook.endpoint_added',
        target: target('webhook_endpoint', stored.id),
        detail: { url_origin: urlOrigin(stored.url), events: stored.events ?? ['*'] },
      }),
  )
  return { endpoint, secret }
}

export async function requireEndpoint(
  webhooks: WebhookRepository,
  organizationId: number,
  endpointId: string,
): Promise<EndpointRow> {
  const endpoint = await webhooks.findEndpoint(organizationId, endpointId)
  if (!endpoint) throw notFound('Webhook endpoint')
  return endpoint
}

export async function disableEndpoint(
  webhooks: WebhookRepository,
  organizationId: number,
  endpointId: string,
  by: string,
  now: number,
): Promise<void> {
  const reason = `Disabled by ${by} on ${toIso(now)}.`
  if (!(await webhooks.setEnabled(organizationId, endpointId, { enabled: false, reason }, now))) {
    throw notFound('Webhook endpoint')
  }
}

export async function enableEndpoint(
  webhooks: WebhookRepository,
  organizationId: number,
  endpointId: string,
  now: number,
): Promise<void> {
  if (!(await webhooks.setEnabled(organizationId, endpointId, { enabled: true }, now))) {
    throw notFound('Webhook endpoint')
  }
}

/** Deletes an endpoint with its deliveries, and records it. */
export async function deleteEndpoint(
  webhooks: WebhookRepository,
  organizationId: number,
  endpointId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const deleted = await webhooks.deleteEndpoint(organizationId, endpointId, (url) =>
    auditEntry(origin, now, {
      organizationId,
      action: 'webhook.endpoint_removed',
      target: target('webhook_endpoint', endpointId),
      detail: { url_origin: urlOrigin(url) },
    }),
  )
  if (!deleted) throw notFound('Webhook endpoint')
}

/** Queues a `webhook.test` event for one enabled endpoint, whatever its filter; the delivery ID. */
export async function sendTestEvent(
  webhooks: WebhookRepository,
  organizationId: number,
  endpointId: string,
  now: number,
): Promise<string> {
  const endpoint = await requireEndpoint(webhooks, organizationId, endpointId)
  if (!endpoint.enabled) throw new AppError(409, 'conflict', 'Enable the endpoint before sending it a test event.')
  const payload: WebhookPayload = { type: testEventType, timestamp: toIso(now), data: { endpoint_id: endpoint.id } }
  const id = newId()
  await webhooks.enqueue(
    [{ id, endpointId, eventType: testEventType, payload: JSON.stringify(payload), threadId: null }],
    now,
  )
  return id
}
