// Administration → Webhooks, laid out as GitHub's repository webhooks are: the endpoints with their state (and why one
// is disabled), a form to add one (its secret shown once), per-endpoint actions (test, disable or enable, delete after
// confirmation) and the recent delivery attempts with what each got back.
import { escapeHtml } from '@kitajs/html'
import { CsrfField, ErrorAlert, Notice, OneTimeSecret, TableRegion, Time } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'
import { webhookEventTypes } from '../events'
import type { AttemptRow, EndpointRow } from '../repository'

export function webhookPath(endpointId: string): string {
  return `/admin/webhooks/${encodeURIComponent(endpointId)}`
}

export interface WebhookFormValues {
  url: string
  events: string[]
}

export interface WebhooksPageProps {
  viewer: Viewer
  endpoints: EndpointRow[]
  attempts: AttemptRow[]
  notice?: string | null
  error?: string | null
  form?: WebhookFormValues
  created?: { endpoint: EndpointRow; secret: string } | null
}

function eventsLabel(events: string[] | null): string {
  return events === null ? 'All events' : events.join(', ')
}

function ActionButton(props: { viewer: Viewer; endpoint: EndpointRow; action: string; label: string }) {
  return (
    <form method="post" action={escapeHtml(`${webhookPath(props.endpoint.id)}/${props.action}`)} class="inline">
      <CsrfField token={props.viewer.csrf} />
      <button type="submit" aria-label={escapeHtml(`${props.label}: ${props.endpoint.url}`)} safe>
        {props.label}
      </button>
    </form>
  )
}

function EndpointRowView({ viewer, endpoint }: { viewer: Viewer; endpoint: EndpointRow }): JSX.Element {
  return (
    <tr>
      <th scope="row">
        <code safe>{endpoint.url}</code>
      </th>
      <td safe>{eventsLabel(endpoint.events)}</td>
      <td>
        {endpoint.enabled ? (
          endpoint.failureStreak > 0 ? (
            <span safe>{`Enabled; the last ${endpoint.failureStreak} attempts failed`}</span>
          ) : (
            'Enabled'
          )
        ) : (
          <>
            <span class="badge">Disabled</span> <span safe>{endpoint.disabledReason ?? ''}</span>
          </>
        )}
      </td>
      <td>
        <Time at={endpoint.lastSuccessAt} never="Never" />
      </td>
      <td>
        {endpoint.enabled ? (
          <>
            <ActionButton viewer={viewer} endpoint={endpoint} action="test" label="Send a test event" />{' '}
            <ActionButton viewer={viewer} endpoint={endpoint} action="disable" label="Disable" />
          </>
        ) : (
          <ActionButton viewer={viewer} endpoint={endpoint} action="enable" label="Enable" />
        )}{' '}
        <a href={escapeHtml(`${webhookPath(endpoint.id)}/delete`)} aria-label={escapeHtml(`Delete ${endpoint.url}`)}>
          Delete…
        </a>
      </td>
    </tr>
  )
}

function AddEndpointForm({ viewer, form }: { viewer: Viewer; form: WebhookFormValues }): JSX.Element {
  return (
    <form method="post" action="/admin/webhooks" class="card stack">
      <CsrfField token={viewer.csrf} />
      <h2>Add an endpoint</h2>
      <p class="muted">
        Events are posted as JSON and signed as Standard Webhooks specifies; the secret to verify them is shown once.
      </p>
      <div class="field">
        <label for="webhook-url">Payload URL</label>
        <input id="webhook-url" name="url" type="url" required maxlength="2000" value={escapeHtml(form.url)} />
      </div>
      <fieldset class="field">
        <legend>Events (none chosen: all of them)</legend>
        {webhookEventTypes.map((type) => (
          <label>
            <input type="checkbox" name="events" value={type} checked={form.events.includes(type)} />{' '}
            <code>{type}</code>
          </label>
        ))}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary">
          Add endpoint
        </button>
      </div>
    </form>
  )
}

function AttemptsTable({ endpoints, attempts }: { endpoints: EndpointRow[]; attempts: AttemptRow[] }) {
  const urls = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint.url]))
  if (attempts.length === 0) return <p class="muted">No delivery has been attempted yet.</p>
  return (
    <TableRegion label="Recent deliveries">
      <table>
        <caption class="visually-hidden">Recent delivery attempts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Response</th>
            <th scope="col">Delivery</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((attempt) => (
            <tr>
              <td>
                <Time at={attempt.at} />
              </td>
              <td>
                <code safe>{urls.get(attempt.endpointId) ?? attempt.endpointId}</code>
              </td>
              <td>
                <code safe>{attempt.eventType}</code>{' '}
                <span class="muted" safe>
                  {attempt.deliveryId}
                </span>
              </td>
              <td safe>{String(attempt.attempt)}</td>
              <td safe>
                {attempt.error === null
                  ? `HTTP ${attempt.responseStatus} in ${attempt.durationMs} ms`
                  : `${attempt.error} (${attempt.durationMs} ms)`}
              </td>
              <td>{attempt.status}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

export function WebhooksPage(props: WebhooksPageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current="/admin/webhooks" title="Webhooks">
      {props.created ? (
        <OneTimeSecret id="webhook-secret" title="Signing secret of the new endpoint" value={props.created.secret}>
          <p safe>{`Deliveries to ${props.created.endpoint.url} are signed with it.`}</p>
        </OneTimeSecret>
      ) : null}
      <section aria-labelledby="webhooks-title">
        <h2 id="webhooks-title">Webhook endpoints of your organization</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        {props.endpoints.length === 0 ? (
          <p class="muted">Your organization has no webhook endpoints yet.</p>
        ) : (
          <TableRegion label="Webhook endpoints">
            <table>
              <caption class="visually-hidden">Webhook endpoints of your organization</caption>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">State</th>
                  <th scope="col">Last delivered</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {props.endpoints.map((endpoint) => (
                  <EndpointRowView viewer={props.viewer} endpoint={endpoint} />
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </section>
      <AddEndpointForm viewer={props.viewer} form={props.form ?? { url: '', events: [] }} />
      <section aria-labelledby="webhook-deliveries-title">
        <h2 id="webhook-deliveries-title">Recent deliveries</h2>
        <AttemptsTable endpoints={props.endpoints} attempts={props.attempts} />
      </section>
    </AdminFrame>
  )
}

export function DeleteWebhookPage({ viewer, endpoint }: { viewer: Viewer; endpoint: EndpointRow }): JSX.Element {
  return (
    <AdminFrame viewer={viewer} current="/admin/webhooks" title="Delete webhook endpoint">
      <form method="post" action={escapeHtml(`${webhookPath(endpoint.id)}/delete`)} class="card stack">
        <CsrfField token={viewer.csrf} />
        <h2>Delete this endpoint?</h2>
        <p>
          <code safe>{endpoint.url}</code> will receive nothing more; its queued deliveries and their history go with
          it.
        </p>
        <div class="actions">
          <button type="submit" class="danger-solid">
            Delete endpoint
          </button>{' '}
          <a href="/admin/webhooks">Cancel</a>
        </div>
      </form>
    </AdminFrame>
  )
}
