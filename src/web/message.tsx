// A page that explains something went wrong (or cannot be done) and, where it helps, offers one way on.
import { escapeHtml } from '@kitajs/html'
import { Layout, type Viewer } from './layout'

export interface MessagePageProps {
  title: string
  message: string
  /** A technical detail for developers, such as the OAuth error code. */
  detail?: string
  viewer?: Viewer
  action?: { href: string; label: string }
}

export function MessagePage({ title, message, detail, viewer, action }: MessagePageProps): JSX.Element {
  return (
    <Layout title={title} viewer={viewer}>
      <section class="card" aria-labelledby="message-title">
        <h1 id="message-title" safe>
          {title}
        </h1>
        {/* .page-message: the chat reads it from a refusal of a message sent in the background, to show in place. */}
        <p class="page-message" safe>
          {message}
        </p>
        {detail ? (
          <p class="muted">
            <code safe>{detail}</code>
          </p>
        ) : null}
        {action ? (
          <p>
            <a href={escapeHtml(action.href)} safe>
              {action.label}
            </a>
          </p>
        ) : null}
      </section>
    </Layout>
  )
}
