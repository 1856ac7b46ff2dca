// Settings → Connected apps: every app holding live tokens for you, what it may do, when it last did; Revoke
// ends all of its tokens at once.
import { escapeHtml } from '@kitajs/html'
import type { OAuthModel } from '../../oauth/model'
import { CsrfField, ErrorAlert, Notice, TableRegion, Time } from '../../web/components'
import { SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export interface AppsPageProps {
  viewer: Viewer
  apps: OAuthModel.connectedApp[]
  notice?: string | null
  error?: string | null
}

function AppTable({ viewer, apps }: { viewer: Viewer; apps: OAuthModel.connectedApp[] }): JSX.Element {
  if (apps.length === 0) return <p class="muted">No app holds tokens for you.</p>
  return (
    <TableRegion label="Connected apps">
      <table>
        <caption class="visually-hidden">Connected apps</caption>
        <thead>
          <tr>
            <th scope="col">App</th>
            <th scope="col">Scopes held</th>
            <th scope="col">Connected</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {apps.map((app) => (
            <tr>
              <th scope="row">
                <span safe>{app.client_name}</span>{' '}
                {app.verified ? null : (
                  <span class="badge" title="This app registered itself; its name is its own claim">
                    Not verified
                  </span>
                )}
              </th>
              <td>
                {app.scopes.map((scope) => (
                  <code class="scope" safe>
                    {scope}
                  </code>
                ))}
              </td>
              <td>
                <Time at={app.connected_at} />
              </td>
              <td>
                <Time at={app.last_used_at} never="Never used" />
              </td>
              <td>
                <form
                  method="post"
                  action={escapeHtml(`/settings/apps/${encodeURIComponent(app.client_id)}/revoke`)}
                  class="inline"
                >
                  <CsrfField token={viewer.csrf} />
                  <button type="submit" class="danger" aria-label={escapeHtml(`Revoke ${app.client_name}`)}>
                    Revoke
                  </button>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

export function AppsPage(props: AppsPageProps): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current="/settings/apps" title="Connected apps">
      <section aria-labelledby="apps-title">
        <h2 id="apps-title">Connected apps</h2>
        <p class="muted">
          Apps you allowed to use your account through OAuth. Revoking one ends every token it holds for you at once; it
          would have to ask you again.
        </p>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <AppTable viewer={props.viewer} apps={props.apps} />
      </section>
    </SettingsFrame>
  )
}
