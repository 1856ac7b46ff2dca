// Administration → OAuth clients: the organization's clients (name, owner, redirect URIs, last use), one
// client's detail panel with secret rotation, and the confirmation step before deleting one.
import { escapeHtml } from '@kitajs/html'
import type { OAuthModel } from '../../oauth/model'
import { RedirectUriList } from '../../settings/views/clients'
import {
  CsrfField,
  ErrorAlert,
  Notice,
  OneTimeSecret,
  safeImageSource,
  safeLinkHref,
  TableRegion,
  Time,
} from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export function clientPath(clientId: string): string {
  return `/admin/clients/${encodeURIComponent(clientId)}`
}

function ownerLabel(owner: OAuthModel.clientSummary['owner']): string {
  if (!owner) return 'No owner (self-registered)'
  return owner.name ? `${owner.name} (${owner.email})` : owner.email
}

const registeredVia: Record<OAuthModel.clientSummary['registered_via'], string> = {
  builtin: 'Built in',
  settings: 'Created in settings',
  token_registration: 'Registered with a registration token',
  open_registration: 'Registered itself (open registration)',
}

function clientType(client: OAuthModel.clientSummary): string {
  return client.token_endpoint_auth_method === 'none' ? 'Public' : 'Confidential'
}

export interface AdminClientsPageProps {
  viewer: Viewer
  clients: OAuthModel.clientSummary[]
  notice?: string | null
}

export function AdminClientsPage(props: AdminClientsPageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current="/admin/clients" title="OAuth clients">
      <section aria-labelledby="admin-clients-title">
        <h2 id="admin-clients-title">OAuth clients of your organization</h2>
        <Notice text={props.notice ?? null} />
        {props.clients.length === 0 ? (
          <p class="muted">Your organization has no OAuth clients yet.</p>
        ) : (
          <TableRegion label="OAuth clients">
            <table>
              <caption class="visually-hidden">OAuth clients of your organization</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Redirect URIs</th>
                  <th scope="col">Type</th>
                  <th scope="col">Last used</th>
                </tr>
              </thead>
              <tbody>
                {props.clients.map((client) => (
                  <tr>
                    <th scope="row">
                      <a href={escapeHtml(clientPath(client.client_id))} safe>
                        {client.client_name}
                      </a>{' '}
                      {client.verified ? null : <span class="badge">Not verified</span>}
                    </th>
                    <td safe>{ownerLabel(client.owner)}</td>
                    <td>
                      <RedirectUriList uris={client.redirect_uris} />
                    </td>
                    <td safe>{clientType(client)}</td>
                    <td>
                      <Time at={client.last_used_at} never="Never used" />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </section>
    </AdminFrame>
  )
}

export interface AdminClientPageProps {
  viewer: Viewer
  client: OAuthModel.clientDetail
  publicUrl: string
  /** A secret just rotated, shown this once. */
  rotatedSecret?: string | null
  error?: string | null
}

function ClientLink({ label, href }: { label: string; href: string | null }): JSX.Element {
  const link = safeLinkHref(href)
  if (!link) return ''
  return (
    <li>
      <a href={escapeHtml(link)} rel="noopener noreferrer nofollow" target="_blank" safe>
        {label}
      </a>
    </li>
  )
}

function ClientMetadata({ client, publicUrl }: { client: OAuthModel.clientDetail; publicUrl: string }) {
  const logo = safeImageSource(client.logo_uri, publicUrl)
  return (
    <dl class="details">
      <dt>Client ID</dt>
      <dd>
        <code safe>{client.client_id}</code>
      </dd>
      <dt>Type</dt>
      <dd>
        <span safe>{clientType(client)}</span> (<code safe>{client.token_endpoint_auth_method}</code>)
      </dd>
      <dt>Owner</dt>
      <dd safe>{ownerLabel(client.owner)}</dd>
      <dt>Origin</dt>
      <dd>
        <span safe>{registeredVia[client.registered_via]}</span>
        {client.verified ? null : (
          <>
            {' '}
            <span class="badge">Not verified</span>
          </>
        )}
      </dd>
      <dt>Redirect URIs</dt>
      <dd>
        <RedirectUriList uris={client.redirect_uris} />
      </dd>
      <dt>Scopes</dt>
      <dd>
        <code safe>{client.scope}</code>
      </dd>
      <dt>Grant types</dt>
      <dd>
        <code safe>{client.grant_types.join(' ')}</code>
      </dd>
      <dt>Created</dt>
      <dd>
        <Time at={client.created_at} />
      </dd>
      <dt>Last used</dt>
      <dd>
        <Time at={client.last_used_at} never="Never used" />
      </dd>
      <dt>Logo</dt>
      <dd>
        {logo ? (
          <img
            class="logo"
            src={escapeHtml(logo)}
            alt={escapeHtml(`Logo of ${client.client_name}`)}
            width="48"
            height="48"
          />
        ) : (
          <span class="muted">{client.logo_uri ? 'Not shown: only https images are displayed' : 'None'}</span>
        )}
        {client.logo_uri ? (
          <>
            <br />
            <code safe>{client.logo_uri}</code>
          </>
        ) : null}
      </dd>
      <dt>Links</dt>
      <dd>
        <ul class="plain">
          <ClientLink label="Website" href={client.client_uri} />
          <ClientLink label="Terms of service" href={client.tos_uri} />
          <ClientLink label="Privacy policy" href={client.policy_uri} />
        </ul>
        {client.client_uri || client.tos_uri || client.policy_uri ? null : <span class="muted">None</span>}
      </dd>
    </dl>
  )
}

export function AdminClientPage(props: AdminClientPageProps): JSX.Element {
  const { client } = props
  const path = clientPath(client.client_id)
  return (
    <AdminFrame viewer={props.viewer} current="/admin/clients" title={client.client_name}>
      <p>
        <a href="/admin/clients">← All OAuth clients</a>
      </p>
      <section aria-labelledby="client-title" class="card">
        <h2 id="client-title" safe>
          {client.client_name}
        </h2>
        {props.rotatedSecret ? (
          <OneTimeSecret id="rotated-secret" title="New client secret" value={props.rotatedSecret}>
            <p>The old secret stopped working. Tokens already issued stay valid.</p>
          </OneTimeSecret>
        ) : null}
        <ErrorAlert text={props.error} />
        <ClientMetadata client={client} publicUrl={props.publicUrl} />
        <div class="actions start">
          {client.token_endpoint_auth_method === 'none' ? (
            <p class="muted">Public clients have no secret to rotate.</p>
          ) : (
            <form method="post" action={escapeHtml(`${path}/secret`)} class="inline">
              <CsrfField token={props.viewer.csrf} />
              <button type="submit" aria-describedby="rotate-help">
                Rotate secret
              </button>
            </form>
          )}
          <a class="button danger" href={escapeHtml(`${path}/delete`)}>
            Delete client…
          </a>
        </div>
        {client.token_endpoint_auth_method === 'none' ? null : (
          <p id="rotate-help" class="muted">
            Rotating makes the current secret fail at once; the new one is shown once.
          </p>
        )}
      </section>
    </AdminFrame>
  )
}

export function DeleteClientPage({ viewer, client }: { viewer: Viewer; client: OAuthModel.clientDetail }) {
  const path = clientPath(client.client_id)
  return (
    <AdminFrame viewer={viewer} current="/admin/clients" title={`Delete ${client.client_name}`}>
      <section aria-labelledby="delete-title" class="card">
        <h2 id="delete-title">
          Delete <span safe>{client.client_name}</span>?
        </h2>
        <p>
          The client is removed and every token it holds, for everyone, stops working at once. People using it will have
          to use another app. This cannot be undone.
        </p>
        <form method="post" action={escapeHtml(`${path}/delete`)}>
          <CsrfField token={viewer.csrf} />
          <div class="actions">
            <a class="button" href={escapeHtml(path)}>
              Cancel
            </a>
            <button type="submit" class="danger-solid">
              Delete client
            </button>
          </div>
        </form>
      </section>
    </AdminFrame>
  )
}
