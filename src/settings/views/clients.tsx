// Settings → OAuth clients (developers): create a confidential client (name and redirect URIs; the client ID
// and secret are shown once) and list the clients you created.
import { escapeHtml } from '@kitajs/html'
import type { OAuthModel } from '../../oauth/model'
import { CsrfField, ErrorAlert, OneTimeSecret, TableRegion, Time } from '../../web/components'
import { SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export interface ClientFormValues {
  name: string
  redirectUris: string
}

export interface ClientsPageProps {
  viewer: Viewer
  clients: OAuthModel.clientSummary[]
  error?: string | null
  form?: ClientFormValues
  created?: { clientId: string; clientSecret: string; name: string } | null
}

export function RedirectUriList({ uris }: { uris: string[] }): JSX.Element {
  return (
    <ul class="plain">
      {uris.map((uri) => (
        <li>
          <code safe>{uri}</code>
        </li>
      ))}
    </ul>
  )
}

function CreateClientForm({ viewer, form }: { viewer: Viewer; form: ClientFormValues }): JSX.Element {
  return (
    <form method="post" action="/settings/clients" class="card stack">
      <CsrfField token={viewer.csrf} />
      <h2>Create a confidential client</h2>
      <p class="muted">
        For a server-side app that can keep a secret. Apps that cannot (command-line tools, desktop and browser apps)
        register themselves as public clients through dynamic registration instead.
      </p>
      <div class="field">
        <label for="client-name">Name</label>
        <input
          id="client-name"
          name="client_name"
          type="text"
          required
          maxlength="100"
          value={escapeHtml(form.name)}
          aria-describedby="client-name-help"
        />
        <span id="client-name-help" class="muted">
          Shown to people on the consent page.
        </span>
      </div>
      <div class="field">
        <label for="client-redirects">Redirect URIs</label>
        <textarea
          id="client-redirects"
          name="redirect_uris"
          rows="3"
          required
          aria-describedby="client-redirects-help"
          safe
        >
          {form.redirectUris}
        </textarea>
        <span id="client-redirects-help" class="muted">
          One per line. https, or http://localhost, http://127.0.0.1 or http://[::1] for development.
        </span>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Create client
        </button>
      </div>
    </form>
  )
}

function ClientTable({ clients }: { clients: OAuthModel.clientSummary[] }): JSX.Element {
  if (clients.length === 0) return <p class="muted">You have not created any OAuth clients.</p>
  return (
    <TableRegion label="Your OAuth clients">
      <table>
        <caption class="visually-hidden">Your OAuth clients</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Client ID</th>
            <th scope="col">Redirect URIs</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
          </tr>
        </thead>
        <tbody>
          {clients.map((client) => (
            <tr>
              <th scope="row" safe>
                {client.client_name}
              </th>
              <td>
                <code safe>{client.client_id}</code>
              </td>
              <td>
                <RedirectUriList uris={client.redirect_uris} />
              </td>
              <td>
                <Time at={client.created_at} />
              </td>
              <td>
                <Time at={client.last_used_at} never="Never used" />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

export function ClientsPage(props: ClientsPageProps): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current="/settings/clients" title="OAuth clients">
      <section aria-labelledby="clients-title">
        <h2 id="clients-title" class="visually-hidden">
          OAuth clients
        </h2>
        {props.created ? (
          <OneTimeSecret
            id="new-client-secret"
            title={`Client secret for “${props.created.name}”`}
            value={props.created.clientSecret}
          >
            <p>
              Client ID: <code safe>{props.created.clientId}</code>
            </p>
          </OneTimeSecret>
        ) : null}
        <ErrorAlert text={props.error} />
        <CreateClientForm viewer={props.viewer} form={props.form ?? { name: '', redirectUris: '' }} />
        <h2>Your clients</h2>
        <p class="muted">Owners and admins rotate secrets and delete clients under Administration.</p>
        <ClientTable clients={props.clients} />
      </section>
    </SettingsFrame>
  )
}
