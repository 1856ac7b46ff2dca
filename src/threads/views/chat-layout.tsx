// The chat's page shell, shared by the new conversation (`/`, `/threads`) and a thread: the sidebar with the
// person's threads (search, filters, archived, "New thread") beside the open conversation, whose composer sits at
// the bottom. On a phone the sidebar folds away behind a "Threads" link (`#sidebar`, so it opens without script).
import { escapeHtml, type PropsWithChildren } from '@kitajs/html'
import { type ClientAssets, themeScript } from '../../web/client-assets'
import { CsrfField } from '../../web/components'
import { stylesheetPath, type Viewer } from '../../web/layout'
import type { ThreadsModel } from '../model'
import { Icon, StateBadge, threadTitle } from './parts'

/** The list's filters, named and valued as the API's query parameters so a page URL reads like an API call. */
export interface ThreadFilters {
  q: string
  owned: 'true' | 'false' | ''
  private: 'true' | 'false' | ''
  archived: boolean
}

export interface SidebarProps {
  filters: ThreadFilters
  page: ThreadsModel.threadList
  /** For a search, each listed thread's passage that matched, by thread ID. */
  matches?: Map<string, ThreadsModel.searchHit>
  /** The filters as a query string ('' for none), which a thread's link keeps so its page shows the same list. */
  listQuery?: string
  nextHref: string | null
  firstHref: string | null
  /** The open thread, marked in the list. */
  currentId?: string
  /** The change feed's place the list was read at: the page's script follows the feed from there. */
  feedAfter: number
}

/** What the model in use is, said plainly in the sidebar and on the new conversation. */
export interface ModelInfo {
  /** `echo` is the development responder, which repeats messages back instead of answering. */
  provider: string
  model: string | null
  /** Several models are configured: each thread names its own in the composer's picker, not the sidebar. */
  several?: boolean
}

export interface ChatLayoutProps {
  title: string
  viewer: Viewer
  sidebar: SidebarProps
  assets: ClientAssets
  model: ModelInfo
}

function Option({ value, selected, label }: { value: string; selected: string; label: string }): JSX.Element {
  return (
    <option value={value} selected={value === selected} safe>
      {label}
    </option>
  )
}

export function filtersActive(filters: ThreadFilters): boolean {
  return filters.q !== '' || filters.owned !== '' || filters.private !== '' || filters.archived
}

function SearchForm({ filters }: { filters: ThreadFilters }): JSX.Element {
  const refined = filters.owned !== '' || filters.private !== '' || filters.archived
  return (
    <search aria-label="Threads">
      <form method="get" action="/threads" class="filters">
        <div class="search-row">
          <label for="q" class="visually-hidden">
            Search
          </label>
          <input id="q" name="q" type="search" placeholder="Search threads" value={escapeHtml(filters.q)} />
          <button type="submit" class="icon search-button" title="Search">
            <SearchIcon />
            <span class="visually-hidden">Search</span>
          </button>
        </div>
        <details class="filter-options" open={refined}>
          <summary>Filters</summary>
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
          <button type="submit">Apply</button>
        </details>
      </form>
    </search>
  )
}

/**
 * A snippet with its matches marked: each range a `mark`, the text around them escaped. The ranges are UTF-16 code
 * units, which JavaScript's own slicing counts, and never split a character (search-text.ts).
 */
export function Marked({ text, highlights }: { text: string; highlights: [number, number][] }): JSX.Element {
  const parts: JSX.Element[] = []
  let at = 0
  for (const [start, end] of highlights) {
    parts.push(escapeHtml(text.slice(at, start)), <mark safe>{text.slice(start, end)}</mark>)
    at = end
  }
  parts.push(escapeHtml(text.slice(at)))
  return <>{parts}</>
}

/** Characters of a passage kept before its first match in the sidebar, where three short lines show of it. */
const leadChars = 40

/**
 * The passage as the sidebar shows it: starting at most `leadChars` before its first match (at a space, with `…`),
 * so that the match is within the lines shown; the ranges moved to match.
 */
function lead(snippet: string, highlights: [number, number][]): { text: string; highlights: [number, number][] } {
  const first = highlights[0]?.[0] ?? 0
  if (first <= leadChars) return { text: snippet, highlights }
  const space = snippet.indexOf(' ', first - leadChars)
  let cut = space === -1 || space >= first ? first : space + 1
  // Nor with the punctuation of a quote or a list: `…> What` reads as `…What`.
  while (cut < first && /[^\p{L}\p{N}]/u.test(snippet.charAt(cut))) cut += 1
  return {
    text: `…${snippet.slice(cut)}`,
    highlights: highlights.map(([start, end]) => [start - cut + 1, end - cut + 1]),
  }
}

function ThreadItem({
  thread,
  current,
  match,
  listQuery,
}: {
  thread: ThreadsModel.thread
  current: boolean
  match: ThreadsModel.searchHit | undefined
  listQuery: string
}): JSX.Element {
  // A search result opens its thread at the message it was found in, with the results still beside it.
  const href =
    `/threads/${thread.id}${listQuery === '' ? '' : `?${listQuery}`}` +
    (match?.message_id ? `#message-${match.message_id}` : '')
  const highlights = (match?.highlights ?? []) as [number, number][]
  // Found by its name: the name itself is marked, rather than shown twice.
  const byName =
    match !== undefined && match.message_id === null && match.attachment_id === null && match.snippet === thread.name
  const passage = match && match.snippet !== '' && !byName ? lead(match.snippet, highlights) : null
  return (
    <li class="thread-row">
      <a
        class={match ? 'thread-link found' : 'thread-link'}
        href={escapeHtml(href)}
        aria-current={current ? 'page' : undefined}
        title={escapeHtml(threadTitle(thread))}
      >
        <span class="thread-name">
          {byName ? <Marked text={match.snippet} highlights={highlights} /> : escapeHtml(threadTitle(thread))}
        </span>
        <span class="thread-flags">
          {thread.state === 'ready' ? null : <StateBadge state={thread.state} />}
          {thread.is_private ? <span class="badge subtle">Private</span> : null}
          {thread.archived ? <span class="badge subtle">Archived</span> : null}
        </span>
        {passage ? (
          <span class="thread-snippet">
            <Marked text={passage.text} highlights={passage.highlights} />
          </span>
        ) : null}
      </a>
    </li>
  )
}

export function ThreadList({ sidebar }: { sidebar: SidebarProps }): JSX.Element {
  const { page, filters } = sidebar
  const filtered = filtersActive(filters)
  return (
    <nav
      class="thread-nav"
      aria-labelledby="list-title"
      data-feed-after={String(sidebar.feedAfter)}
      data-list-query={escapeHtml(sidebar.listQuery ?? '')}
    >
      <h2 id="list-title" class="sidebar-heading">
        {filtered ? 'Matching threads' : 'Threads'}
      </h2>
      {page.data.length === 0 ? (
        <p class="empty">{filtered ? 'No thread matches these filters.' : 'No threads yet.'}</p>
      ) : (
        <ul class="thread-list">
          {page.data.map((thread) => (
            <ThreadItem
              thread={thread}
              current={thread.id === sidebar.currentId}
              match={sidebar.matches?.get(thread.id)}
              listQuery={sidebar.listQuery ?? ''}
            />
          ))}
        </ul>
      )}
      {sidebar.nextHref || sidebar.firstHref ? (
        <p class="pager">
          {sidebar.firstHref ? <a href={escapeHtml(sidebar.firstHref)}>First page</a> : null}
          {sidebar.nextHref ? (
            <a href={escapeHtml(sidebar.nextHref)} rel="next">
              Next page
            </a>
          ) : null}
        </p>
      ) : null}
    </nav>
  )
}

export function modelLabel(model: ModelInfo): string {
  return model.provider === 'echo' ? 'Echo (no model connected)' : (model.model ?? model.provider)
}

function Sidebar({ viewer, sidebar, model }: Pick<ChatLayoutProps, 'viewer' | 'sidebar' | 'model'>): JSX.Element {
  return (
    <aside id="sidebar" class="sidebar" aria-label="Threads and account">
      <div class="sidebar-top">
        <a class="brand" href="/">
          Threadhouse
        </a>
        <a class="sidebar-close icon-link" href="#main" title="Close the list">
          <span aria-hidden="true">✕</span>
          <span class="visually-hidden">Close the list</span>
        </a>
      </div>
      <a class="button new-thread" href="/">
        <PlusIcon /> New thread
      </a>
      <SearchForm filters={sidebar.filters} />
      <ThreadList sidebar={sidebar} />
      <div class="sidebar-foot">
        {model.several ? null : (
          <p class="model-name" title="The model that answers">
            <span class="muted">Model</span> <span safe>{modelLabel(model)}</span>
          </p>
        )}
        <nav aria-label="Account" class="account-links">
          <a href="/settings">Settings</a>
          {viewer.isAdmin ? <a href="/admin">Administration</a> : null}
          <button type="button" class="link theme-switch" hidden>
            Theme: system
          </button>
        </nav>
        <form method="post" action="/logout" class="signout">
          <span class="account-email" safe>
            {viewer.email}
          </span>
          <CsrfField token={viewer.csrf} />
          <button type="submit" class="link">
            Sign out
          </button>
        </form>
      </div>
    </aside>
  )
}

/** The bar over the conversation: the way to the folded sidebar on a phone, then what the page puts there. */
export function TopBar({ children }: PropsWithChildren): JSX.Element {
  return (
    <header class="chat-top">
      <a class="sidebar-open icon-link" href="#sidebar" title="Threads">
        <MenuIcon />
        <span class="visually-hidden">Threads</span>
      </a>
      {children}
    </header>
  )
}

export function ChatLayout(props: PropsWithChildren<ChatLayoutProps>): JSX.Element {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <meta name="referrer" content="no-referrer" />
        <title safe>{`${props.title} · Threadhouse`}</title>
        <link rel="stylesheet" href={stylesheetPath} />
        <script src={themeScript.path} />
        <script src={props.assets.chat.path} defer />
      </head>
      <body class="chat-body">
        <a class="skip-link" href="#composer-text">
          Skip to the message box
        </a>
        <div class="app">
          <Sidebar viewer={props.viewer} sidebar={props.sidebar} model={props.model} />
          <main id="main" class="chat-main">
            {props.children}
          </main>
        </div>
        <p id="thread-status" class="visually-hidden" role="status" />
      </body>
    </html>
  )
}

export function MenuIcon(): JSX.Element {
  return (
    <Icon>
      <path d="M3 12h18M3 6h18M3 18h18" />
    </Icon>
  )
}

export function PlusIcon(): JSX.Element {
  return (
    <Icon>
      <path d="M12 5v14M5 12h14" />
    </Icon>
  )
}

export function SearchIcon(): JSX.Element {
  return (
    <Icon>
      <circle cx="11" cy="11" r="8" />
      <path d="m21 21-4.35-4.35" />
    </Icon>
  )
}

export function SendIcon(): JSX.Element {
  return (
    <Icon>
      <path d="M12 19V5M5 12l7-7 7 7" />
    </Icon>
  )
}

export function StopIcon(): JSX.Element {
  return (
    <svg aria-hidden="true" width="14" height="14" viewBox="0 0 14 14">
      <rect width="14" height="14" rx="2" fill="currentColor" />
    </svg>
  )
}

export function PaperclipIcon(): JSX.Element {
  return (
    <Icon>
      <path d="m21.44 11.05-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48" />
    </Icon>
  )
}

export function CopyIcon(): JSX.Element {
  return (
    <Icon>
      <rect x="9" y="9" width="13" height="13" rx="2" />
      <path d="M5 15H4a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2h9a2 2 0 0 1 2 2v1" />
    </Icon>
  )
}
