// The consent page: who is asking, for what, where the answer goes, and Allow/Deny. The decision button's name
// and values are fixed by the operator contract.
import { escapeHtml } from '@kitajs/html'
import { CsrfField } from '../../web/components'
import { Layout, type Viewer } from '../../web/layout'

export interface ConsentPageProps {
  viewer: Viewer
  /** The page's own URL: the form posts the same authorization request back. */
  action: string
  clientName: string
  /** Self-registered clients chose their own name and links; say so. */
  verified: boolean
  logoUri: string | null
  links: { label: string; href: string }[]
  /** Where the browser goes next: the redirect URI's host, or its scheme for a native app. */
  redirectTarget: string
  scopes: { scope: string; description: string }[]
  csrf: string
  /** Set when approving will tie an unclaimed client to this organization. */
  claimsForOrganization: string | null
}

export function ConsentPage(props: ConsentPageProps): JSX.Element {
  return (
    <Layout title={`Authorize ${props.clientName}`} viewer={props.viewer}>
      <section class="card" aria-labelledby="consent-title">
        <div class="client">
          {props.logoUri ? <img src={escapeHtml(props.logoUri)} alt="" width="48" height="48" /> : null}
          <h1 id="consent-title">
            <span safe>{props.clientName}</span> wants to access your Threadhouse account{' '}
            {!props.verified ? (
              <span class="badge" title="This app registered itself; Threadhouse has not verified its name or links">
                Not verified
              </span>
            ) : null}
          </h1>
        </div>
        {!props.verified ? (
          <p class="muted">
            This app registered itself. Its name, logo and links are its own claims, not checked by Threadhouse. Only
            continue if you started this from an app you trust.
          </p>
        ) : null}
        <h2>It will be able to</h2>
        <ul class="scopes">
          {props.scopes.map((item) => (
            <li>
              <span safe>{item.description}</span> <code safe>{item.scope}</code>
            </li>
          ))}
        </ul>
        <p>
          You will be sent to <strong safe>{props.redirectTarget}</strong> after you decide.
        </p>
        {props.claimsForOrganization ? (
          <p class="muted">
            Allowing also makes this app available to your organization{' '}
            <strong safe>{props.claimsForOrganization}</strong> only; people in other organizations will not be able to
            use it.
          </p>
        ) : null}
        {props.links.length > 0 ? (
          <ul class="links" aria-label="About this app">
            {props.links.map((link) => (
              <li>
                <a href={escapeHtml(link.href)} rel="noopener noreferrer nofollow" target="_blank" safe>
                  {link.label}
                </a>
              </li>
            ))}
          </ul>
        ) : null}
        <form method="post" action={escapeHtml(props.action)}>
          <CsrfField token={props.csrf} />
          <div class="actions">
            <button type="submit" name="decision" value="deny">
              Deny
            </button>
            <button type="submit" name="decision" value="approve" class="primary">
              Allow
            </button>
          </div>
        </form>
      </section>
    </Layout>
  )
}
