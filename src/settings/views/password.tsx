// Settings → Password: change your password. Someone signed in with a one-time password from an admin lands
// here first and cannot use any other page until they have chosen their own.
import { escapeHtml } from '@kitajs/html'
import { minimumPasswordLength } from '../../auth/passwords'
import { CsrfField, ErrorAlert, Notice } from '../../web/components'
import { SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export interface PasswordPageProps {
  viewer: Viewer
  /** The person still holds a one-time password. */
  required: boolean
  /** Where to go once the password is changed (a path on this server). */
  next: string
  notice?: string | null
  error?: string | null
}

export function PasswordPage(props: PasswordPageProps): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current="/settings/password" title="Password">
      <section aria-labelledby="password-title">
        <h2 id="password-title">{props.required ? 'Choose your own password' : 'Change your password'}</h2>
        {props.required ? (
          <p>
            You signed in with a one-time password an administrator gave you. Choose your own password to continue; the
            one-time password then stops working.
          </p>
        ) : (
          <p class="muted">Changing your password signs you out everywhere else. API tokens keep working.</p>
        )}
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <form method="post" action="/settings/password" class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <input type="hidden" name="next" value={escapeHtml(props.next)} />
          <div class="field">
            <label for="current-password">{props.required ? 'One-time password' : 'Current password'}</label>
            <input
              id="current-password"
              name="current_password"
              type="password"
              autocomplete="current-password"
              required
            />
          </div>
          <div class="field">
            <label for="new-password">New password</label>
            <input
              id="new-password"
              name="new_password"
              type="password"
              autocomplete="new-password"
              minlength={String(minimumPasswordLength)}
              required
              aria-describedby="new-password-help"
            />
            <span id="new-password-help" class="muted">
              At least {minimumPasswordLength} characters.
            </span>
          </div>
          <div class="field">
            <label for="confirm-password">New password again</label>
            <input id="confirm-password" name="confirm_password" type="password" autocomplete="new-password" required />
          </div>
          <div class="actions">
            <button type="submit" class="primary">
              Change password
            </button>
          </div>
        </form>
      </section>
    </SettingsFrame>
  )
}
