// The share links' pages: the shared thread as people outside the organization see it (no navigation, no sign-in),
// the owner's confirmation before a link is made, Settings → Share links and Administration → Sharing.
import { escapeHtml } from '@kitajs/html'
import type { ThreadsModel } from '../../threads/model'
import { threadTitle } from '../../threads/views/parts'
import { CsrfField, ErrorAlert, Notice, OneTimeSecret, TableRegion, Time } from '../../web/components'
import { AdminFrame, SettingsFrame } from '../../web/frame'
import { Layout, type Viewer } from '../../web/layout'
import { renderMarkdown } from '../../web/markdown'
import type { OpenShare, ShareSummary, Snapshot } from '../repository'

type SnapshotMessage = Snapshot['messages'][number]
type SnapshotFile = Snapshot['files'][number]

/** The sentence every way of making a link shows before it is made. */
export const anyoneCanRead =
  'Anyone with the link can read this thread, without signing in, including people outside your organization.'

function SharedFile({ file, base }: { file: SnapshotFile | undefined; base: string }): JSX.Element {
  if (!file) return <p class="attachment-document muted">A file (not shared)</p>
  const href = escapeHtml(`${base}/files/${file.id}`)
  if (file.kind === 'image') {
    return (
      <figure class="attachment-image">
        <a href={href}>
          <img src={href} alt={escapeHtml(file.filename)} loading="lazy" />
        </a>
        <figcaption safe>{file.filename}</figcaption>
      </figure>
    )
  }
  return (
    <p class="attachment-document">
      <a href={href} download={escapeHtml(file.filename)}>
        <span safe>{file.filename}</span> <span class="muted">({file.kind === 'pdf' ? 'PDF' : 'text'})</span>
      </a>
    </p>
  )
}

function SharedBlock(props: {
  block: ThreadsModel.contentBlock
  files: Map<string, SnapshotFile>
  base: string
}): JSX.Element {
  const { block } = props
  switch (block.type) {
    case 'text': {
      const safeHtml = renderMarkdown(block.text)
      return <div class="markdown">{safeHtml}</div>
    }
    case 'image':
    case 'document':
      return <SharedFile file={props.files.get(block.attachment_id)} base={props.base} />
    case 'user_get_choice':
      return (
        <div class="choice">
          <p class="choice-question" safe>
            {block.question}
          </p>
          <ul class="choice-list">
            {block.choices.map((choice) => (
              <li safe>{choice}</li>
            ))}
          </ul>
        </div>
      )
  }
}

function authorOf(message: SnapshotMessage, snapshot: Snapshot): string {
  if (message.role === 'assistant') return 'Assistant'
  if (message.role === 'summary') return 'Summary'
  return snapshot.ownerName ?? 'Owner'
}

export interface SharedThreadPageProps {
  share: OpenShare
  /** The link's own path, `/s/{token}`: its files are served below it. */
  base: string
}

/** The shared thread: read only, no sidebar or navigation, and nothing that needs a session. */
export function SharedThreadPage({ share, base }: SharedThreadPageProps): JSX.Element {
  const { snapshot } = share
  const title = threadTitle(snapshot)
  const files = new Map(snapshot.files.map((file) => [file.id, file]))
  return (
    <Layout title={title} robots="noindex, nofollow">
      <article class="shared-thread" aria-labelledby="shared-title">
        <header class="shared-header">
          <p class="shared-from">
            Shared from <strong safe>{share.organizationName}</strong>
          </p>
          <h1 id="shared-title" safe>
            {title}
          </h1>
          <p class="muted">
            A read-only copy of the thread as it was on <Time at={share.createdAt} />. Later messages are not shown.
          </p>
        </header>
        <h2 id="shared-messages" class="visually-hidden">
          Messages
        </h2>
        {snapshot.messages.length === 0 ? <p class="empty">No messages.</p> : null}
        <ol class="messages" aria-labelledby="shared-messages">
          {snapshot.messages.map((message) => (
            <li
              id={escapeHtml(`message-${message.id}`)}
              class={`message message-${message.role}`}
              aria-labelledby={escapeHtml(`message-${message.id}-by`)}
            >
              <h3 id={escapeHtml(`message-${message.id}-by`)} class="message-author" safe>
                {authorOf(message, snapshot)}
              </h3>
              <div class="message-body">
                {message.contents.map((block) => (
                  <SharedBlock block={block} files={files} base={base} />
                ))}
              </div>
              <div class="message-actions">
                <span class="message-link">
                  <Time at={message.createdAt} />
                </span>
              </div>
            </li>
          ))}
        </ol>
      </article>
    </Layout>
  )
}

export interface ShareThreadPageProps {
  viewer: Viewer
  thread: { id: string; name: string | null }
  sharingEnabled: boolean
  /** The link just made: shown once. */
  created?: { url: string; includeFiles: boolean } | null
}

/** The confirmation before a link is made, and the link itself once it is. */
export function ShareThreadPage({ viewer, thread, sharingEnabled, created }: ShareThreadPageProps): JSX.Element {
  const name = threadTitle(thread)
  const back = `/threads/${thread.id}`
  return (
    <Layout title={`Share ${name}`} viewer={viewer}>
      <section class="card stack" aria-labelledby="share-title">
        <h1 id="share-title">
          Share “<span safe>{name}</span>”
        </h1>
        {created ? (
          <>
            <OneTimeSecret id="share-url" title="Your link" value={created.url}>
              <p
                safe
              >{`${anyoneCanRead} ${created.includeFiles ? 'Its images and files are shown too.' : 'Its images and files are not shown.'}`}</p>
            </OneTimeSecret>
            <p>
              You can revoke it in <a href="/settings/shares">Settings → Share links</a>.
            </p>
            <p>
              <a href={escapeHtml(back)}>Back to the thread</a>
            </p>
          </>
        ) : sharingEnabled ? (
          <form method="post" action={escapeHtml(`${back}/share`)} class="stack">
            <CsrfField token={viewer.csrf} />
            <p>
              <strong>{anyoneCanRead}</strong>
            </p>
            <p>
              The link shows the thread's messages as they are now; messages written later are not shown. You can revoke
              it at any time in Settings, and it stops working if the thread is deleted.
            </p>
            <div class="check">
              <input id="share-include-files" name="include_files" type="checkbox" value="true" />
              <label for="share-include-files">Include images and files</label>
            </div>
            <div class="actions">
              <a class="button" href={escapeHtml(back)}>
                Cancel
              </a>
              <button type="submit" class="primary">
                Create link
              </button>
            </div>
          </form>
        ) : (
          <>
            <p>
              Sharing links is turned off for your organization. An owner or admin can turn it on in Administration.
            </p>
            <p>
              <a href={escapeHtml(back)}>Back to the thread</a>
            </p>
          </>
        )}
      </section>
    </Layout>
  )
}

function RevokeButton({ viewer, share, action }: { viewer: Viewer; share: ShareSummary; action: string }) {
  return (
    <form method="post" action={escapeHtml(action)} class="inline">
      <CsrfField token={viewer.csrf} />
      <button type="submit" aria-label={escapeHtml(`Revoke the link to ${threadTitle({ name: share.threadName })}`)}>
        Revoke
      </button>
    </form>
  )
}

function ShareTable(props: {
  viewer: Viewer
  shares: ShareSummary[]
  label: string
  showSharer: boolean
  revokePath: (share: ShareSummary) => string
}): JSX.Element {
  return (
    <TableRegion label={props.label}>
      <table>
        <caption class="visually-hidden" safe>
          {props.label}
        </caption>
        <thead>
          <tr>
            <th scope="col">Thread</th>
            {props.showSharer ? <th scope="col">Shared by</th> : null}
            <th scope="col">Files</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.shares.map((share) => (
            <tr>
              <th scope="row">
                {props.showSharer ? (
                  // Administrators may not see the thread itself (a private one is its owner's): its name as shared.
                  <span safe>{threadTitle({ name: share.threadName })}</span>
                ) : (
                  <a href={escapeHtml(`/threads/${share.threadId}`)} safe>
                    {threadTitle({ name: share.threadName })}
                  </a>
                )}
              </th>
              {props.showSharer ? <td safe>{share.createdBy.name ?? share.createdBy.email}</td> : null}
              <td>{share.includeFiles ? 'Included' : 'Not shown'}</td>
              <td>
                <Time at={share.createdAt} />
              </td>
              <td>
                <RevokeButton viewer={props.viewer} share={share} action={props.revokePath(share)} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

export interface SettingsSharesPageProps {
  viewer: Viewer
  shares: ShareSummary[]
  sharingEnabled: boolean
  notice?: string | null
  error?: string | null
}

export function SettingsSharesPage(props: SettingsSharesPageProps): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current="/settings/shares" title="Share links">
      <section aria-labelledby="shares-title" class="stack">
        <h2 id="shares-title">Your share links</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <p>
          Each link shows a read-only copy of a thread to anyone who has it. Make one from a thread's ⋯ menu; a link
          cannot be shown again, but it can be revoked here, and stops working at once.
        </p>
        {props.sharingEnabled ? null : (
          <p class="muted">
            Sharing is turned off for your organization: none of these links works until it is back on.
          </p>
        )}
        {props.shares.length === 0 ? (
          <p class="muted">You have no share links.</p>
        ) : (
          <ShareTable
            viewer={props.viewer}
            shares={props.shares}
            label="Your share links"
            showSharer={false}
            revokePath={(share) => `/settings/shares/${share.id}/revoke`}
          />
        )}
      </section>
    </SettingsFrame>
  )
}

export interface AdminSharesPageProps {
  viewer: Viewer
  enabled: boolean
  shares: ShareSummary[]
  notice?: string | null
  error?: string | null
}

export function AdminSharesPage(props: AdminSharesPageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current="/admin/shares" title="Sharing">
      <section aria-labelledby="sharing-title" class="stack">
        <h2 id="sharing-title">Sharing</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <p>
          {props.enabled
            ? 'Members can share a read-only copy of their threads by link, with anyone, inside or outside the organization.'
            : 'Sharing is off: no link works, and no new link can be made.'}
        </p>
        <form method="post" action="/admin/shares" class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <input type="hidden" name="enabled" value={props.enabled ? 'false' : 'true'} />
          <p class="muted">
            {props.enabled
              ? 'Turning sharing off stops every link below at once. The links are kept: they work again if sharing is turned back on, unless revoked.'
              : 'Turning sharing on lets members make links again, and the links below work again.'}
          </p>
          <div class="actions start">
            <button type="submit" class={props.enabled ? 'danger-solid' : 'primary'}>
              {props.enabled ? 'Turn sharing off' : 'Turn sharing on'}
            </button>
          </div>
        </form>
        <h2 id="links-title">Every link</h2>
        {props.shares.length === 0 ? (
          <p class="muted">Nobody in the organization has a share link.</p>
        ) : (
          <ShareTable
            viewer={props.viewer}
            shares={props.shares}
            label="Every share link in the organization"
            showSharer={true}
            revokePath={(share) => `/admin/shares/${share.id}/revoke`}
          />
        )}
      </section>
    </AdminFrame>
  )
}
