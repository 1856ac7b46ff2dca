// The one page layout every server-rendered page uses (sign-in, consent, threads, settings, administration):
// landmarks, a skip link, the local stylesheet and the chosen theme, and the signed-in person with a sign-out form.
import type { PropsWithChildren } from '@kitajs/html'
import { isOrganizationAdmin } from '../auth/members'
import type { PageSession } from '.'
import { themeScript } from './client-assets'
import { CsrfField } from './components'

export const stylesheetPath = '/assets/threadhouse.css'

/** Who is signed in, and the CSRF token their forms carry; absent on pages shown before sign-in. */
export interface Viewer {
  email: string
  csrf: string
  /** Owners and admins also see the organization's administration. */
  isAdmin: boolean
}

export function viewerOf(session: PageSession): Viewer {
  return { email: session.user.email, csrf: session.csrf, isAdmin: isOrganizationAdmin(session.user.role) }
}

export interface LayoutProps {
  title: string
  viewer?: Viewer
}

// Attribute values: @kitajs/html escapes only `"` in attributes, so dynamic values also go through escapeHtml
// (which leaves nothing for it to double-escape) to keep `&` in URLs and form values exact.
export function Layout({ title, viewer, children }: PropsWithChildren<LayoutProps>): JSX.Element {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <meta name="referrer" content="no-referrer" />
        <title safe>{`${title} · Threadhouse`}</title>
        <link rel="stylesheet" href={stylesheetPath} />
        {/* The theme chosen in the chat applies to every page, applied before the first paint. */}
        <script src={themeScript.path} />
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="site-header">
          <a class="brand" href="/">
            Threadhouse
          </a>
          {viewer ? (
            <nav aria-label="Main">
              <a href="/threads">Threads</a>
              <a href="/settings">Settings</a>
              {viewer.isAdmin ? <a href="/admin">Administration</a> : null}
            </nav>
          ) : null}
          {viewer ? (
            <form method="post" action="/logout">
              <span safe>{viewer.email}</span>
              <CsrfField token={viewer.csrf} />
              <button type="submit" class="link">
                Sign out
              </button>
            </form>
          ) : null}
        </header>
        <main id="main">{children}</main>
      </body>
    </html>
  )
}
