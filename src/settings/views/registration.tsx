// Registration token: any member generates one (shown once, with its expiry) so a developer's app can register
// itself into the organization. The same panel serves Settings and Administration.
import { escapeHtml } from '@kitajs/html'
import { CsrfField, OneTimeSecret, Time } from '../../web/components'
import { AdminFrame, SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export interface RegistrationTokenProps {
  viewer: Viewer
  /** Where the form posts, which is also the tab the page belongs to. */
  action: string
  created?: { token: string; expiresAt: number } | null
}

function RegistrationTokenPanel(props: RegistrationTokenProps): JSX.Element {
  return (
    <section aria-labelledby="registration-title">
      <h2 id="registration-title">Registration token</h2>
      <p class="muted">
        A registration token lets an app register itself as an OAuth client of your organization at once (RFC 7591
        dynamic registration with <code>Authorization: Bearer …</code> at <code>POST /oauth/register</code>). It works
        once, for 60 minutes.
      </p>
      {props.created ? (
        <OneTimeSecret id="registration-token" title="New registration token" value={props.created.token}>
          <p>
            Valid until <Time at={props.created.expiresAt} />, for one registration.
          </p>
        </OneTimeSecret>
      ) : null}
      <form method="post" action={escapeHtml(props.action)} class="card">
        <CsrfField token={props.viewer.csrf} />
        <div class="actions start">
          <button type="submit" class="primary">
            Generate registration token
          </button>
        </div>
      </form>
    </section>
  )
}

export function SettingsRegistrationPage(props: Omit<RegistrationTokenProps, 'action'>): JSX.Element {
  const action = '/settings/registration-token'
  return (
    <SettingsFrame viewer={props.viewer} current={action} title="Registration token">
      <RegistrationTokenPanel {...props} action={action} />
    </SettingsFrame>
  )
}

export function AdminRegistrationPage(props: Omit<RegistrationTokenProps, 'action'>): JSX.Element {
  const action = '/admin/registration-token'
  return (
    <AdminFrame viewer={props.viewer} current={action} title="Registration token">
      <RegistrationTokenPanel {...props} action={action} />
    </AdminFrame>
  )
}
