// The threads page: a form to start a thread, search and filters, and one page of the visible threads.
import { escapeHtml } from '@kitajs/html'
import type { ThreadsModel } from '../../threads/model'
import { CsrfField, Time } from '../components'
import { Layout, type Viewer } from '../layout'
import { FilesField, StateBadge, threadTitle } from './parts'

/** The list's filters, named and valued as the API's query parameters so a page URL reads like an API call. */
export interface ThreadFilters {
  q: string
  owned: 'true' | 'false' | ''
  private: 'true' | 'false' | ''
  archived: boolean
}

export interface NewThreadDraft {
  name: string
  text: string
  isPrivate: boolean
}

export interface ThreadListPageProps {
  viewer: Viewer
  /** The signed-in person's user ID (`sub`), to tell their own threads apart. */
  viewerSub: string
  filters: ThreadFilters
  page: ThreadsModel.threadList
  nextHref: string | null
  firstHref: string | null
  /** Why the new-thread form was refused, with what was typed. */
  error?: string
  draft?: NewThreadDraft
}

function Option({ value, selected, label }: { value: string; selected: string; label: string }): JSX.Element {
  return (
    <option value={value} selected={value === selected} safe>
      {label}
    </option>
  )
}

function NewThreadForm({ viewer, error, draft }: Pick<ThreadListPageProps, 'viewer' | 'error' | 'draft'>) {
  return (
    <section class="card" aria-labelledby="new-thread-title">
      <h2 id="new-thread-title">Start a new thread</h2>
      {error ? (
        <p class="alert" role="alert" safe>
          {error}
        </p>
      ) : null}
      <form method="post" action="/threads" enctype="multipart/form-data">
        <CsrfField token={viewer.csrf} />
        <div class="field">
          <label for="new-text">Message</label>
          <textarea id="new-text" name="text" rows="3" required safe>
            {draft?.text ?? ''}
          </textarea>
        </div>
        <div class="field">
          <label for="new-name">
            Name <span class="muted">(optional)</span>
          </label>
          <input
            id="new-name"
            name="name"
            type="text"
            maxlength="500"
            aria-describedby="new-name-hint"
            value={escapeHtml(draft?.name ?? '')}
          />
          <p id="new-name-hint" class="hint">
            Without one, the thread is named after the start of your message.
          </p>
        </div>
        <FilesField id="new-files" />
        <div class="check">
          <input id="new-private" name="is_private" type="checkbox" value="true" checked={draft?.isPrivate ?? false} />
          <label for="new-private">Private: only you can see it</label>
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Start thread
          </button>
        </div>
      </form>
    </section>
  )
}

function SearchForm({ filters }: { filters: ThreadFilters }): JSX.Element {
  return (
    <search aria-label="Threads">
      <form method="get" action="/threads" class="filters">
        <div class="field search-field">
          <label for="q">Search</label>
          <input id="q" name="q" type="search" value={escapeHtml(filters.q)} />
        </div>
        <div class="field">
          <label for="owned">Owner</label>
          <select id="owned" name="owned">
            <Option value="" selected={filters.owned} label="Anyone" />
            <Option value="true" selected={filters.owned} label="Me" />
            <Option value="false" selected={filters.owned} label="Others" />
          </select>
        </div>
        <div class="field">
          <label for="private">Visibility</label>
          <select id="private" name="private">
            <Option value="" selected={filters.private} label="All" />
            <Option value="true" selected={filters.private} label="Private" />
            <Option value="false" selected={filters.private} label="Public" />
          </select>
        </div>
        <div class="check">
          <input id="archived" name="archived" type="checkbox" value="true" checked={filters.archived} />
          <label for="archived">Include archived</label>
        </div>
        <button type="submit">Search</button>
      </form>
    </search>
  )
}

function ThreadRow({ thread, viewerSub }: { thread: ThreadsModel.thread; viewerSub: string }): JSX.Element {
  const owner = thread.owner.id === viewerSub ? 'you' : (thread.owner.name ?? 'another member')
  return (
    <li class="thread-row">
      <a class="thread-link" href={`/threads/${escapeHtml(thread.id)}`} safe>
        {threadTitle(thread)}
      </a>
      <p class="thread-meta">
        <StateBadge state={thread.state} />
        {thread.is_private ? <span class="badge">Private</span> : null}
        {thread.archived ? <span class="badge">Archived</span> : null}
        <span>
          by <span safe>{owner}</span>, updated <Time at={thread.updated_at} />
        </span>
      </p>
    </li>
  )
}

export function ThreadListPage(props: ThreadListPageProps): JSX.Element {
  const { filters, page } = props
  const filtered = filters.q !== '' || filters.owned !== '' || filters.private !== '' || filters.archived
  return (
    <Layout title="Threads" viewer={props.viewer}>
      <div class="wide">
        <h1>Threads</h1>
        <NewThreadForm viewer={props.viewer} error={props.error} draft={props.draft} />
        <section aria-labelledby="list-title">
          <h2 id="list-title">{filtered ? 'Matching threads' : 'All threads'}</h2>
          <SearchForm filters={filters} />
          {page.data.length === 0 ? (
            <p class="empty">{filtered ? 'No thread matches these filters.' : 'No threads yet: start one above.'}</p>
          ) : (
            <ul class="thread-list">
              {page.data.map((thread) => (
                <ThreadRow thread={thread} viewerSub={props.viewerSub} />
              ))}
            </ul>
          )}
          {props.nextHref || props.firstHref ? (
            <nav class="pager" aria-label="Pages of threads">
              {props.firstHref ? <a href={escapeHtml(props.firstHref)}>First page</a> : null}
              {props.nextHref ? (
                <a href={escapeHtml(props.nextHref)} rel="next">
                  Next page
                </a>
              ) : null}
            </nav>
          ) : null}
        </section>
      </div>
    </Layout>
  )
}
