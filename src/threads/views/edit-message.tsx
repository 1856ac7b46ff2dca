// Editing a message without JavaScript: a page of its own with the message's text in a form. Saving sends the new
// text as a version beside the old one, whose answer and later messages stay as the earlier version (`‹ 1/2 ›`).
// With the script the same form is made in place of the message (src/web/client/edit.ts) and posts to the same
// address.
import { escapeHtml } from '@kitajs/html'
import { CsrfField, ErrorAlert } from '../../web/components'
import { Layout, type Viewer } from '../../web/layout'

export interface EditMessagePageProps {
  viewer: Viewer
  thread: { id: string; name: string | null }
  messageId: string
  /** The text in the box: the message's own, or what was typed when the edit was refused. */
  text: string
  /** The files the message carries, which go with the new version. */
  files: string[]
  error?: string
}

export function EditMessagePage(props: EditMessagePageProps): JSX.Element {
  const name = props.thread.name ?? 'Untitled thread'
  const back = `/threads/${props.thread.id}`
  return (
    <Layout title={`Edit a message · ${name}`} viewer={props.viewer}>
      <section class="card edit-message" aria-labelledby="edit-title">
        <h1 id="edit-title">Edit your message</h1>
        <p>
          Saving sends it as a new version in “<span safe>{name}</span>” and its answer starts; the old message, its
          answer and everything after it stay as the earlier version, one click away.
        </p>
        <ErrorAlert text={props.error} />
        <form method="post" action={escapeHtml(`${back}/messages/${props.messageId}/edit`)}>
          <CsrfField token={props.viewer.csrf} />
          <label for="edit-text">Message</label>
          <textarea id="edit-text" name="text" rows="8" required safe>
            {props.text}
          </textarea>
          {props.files.length > 0 ? (
            <p class="hint">
              Its files go with it: <span safe>{props.files.join(', ')}</span>.
            </p>
          ) : null}
          <div class="actions">
            <a class="button" href={escapeHtml(`${back}#message-${props.messageId}`)}>
              Cancel
            </a>
            <button type="submit" class="primary">
              Save and send
            </button>
          </div>
        </form>
      </section>
    </Layout>
  )
}
