// The confirmation step before a thread is deleted: a page of its own, so it works without JavaScript, and a
// deletion is never one stray click in the thread's menu.
import { escapeHtml } from '@kitajs/html'
import { CsrfField } from '../../web/components'
import { Layout, type Viewer } from '../../web/layout'

export interface DeleteThreadPageProps {
  viewer: Viewer
  thread: { id: string; name: string | null }
}

export function DeleteThreadPage({ viewer, thread }: DeleteThreadPageProps): JSX.Element {
  const name = thread.name ?? 'Untitled thread'
  const back = `/threads/${thread.id}`
  return (
    <Layout title={`Delete ${name}`} viewer={viewer}>
      <section class="card" aria-labelledby="delete-title">
        <h1 id="delete-title">
          Delete “<span safe>{name}</span>”?
        </h1>
        <p>
          The thread, all its messages, ratings and attached files are deleted for good, for everyone who can see it. An
          answer still being written is stopped first. This cannot be undone: export the thread first to keep a copy.
        </p>
        <p>
          <a href={escapeHtml(`${back}/export?format=markdown`)}>Export as Markdown</a> ·{' '}
          <a href={escapeHtml(`${back}/export?format=json`)}>Export as JSON</a>
        </p>
        <form method="post" action={escapeHtml(`${back}/delete`)}>
          <CsrfField token={viewer.csrf} />
          <div class="actions">
            <a class="button" href={escapeHtml(back)}>
              Cancel
            </a>
            <button type="submit" class="danger-solid">
              Delete thread
            </button>
          </div>
        </form>
      </section>
    </Layout>
  )
}
