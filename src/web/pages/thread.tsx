// The thread page at a thread's app_url: its messages (Markdown, images, documents, choices, ratings), the answer
// being written, and what the reader may do next. Every form works without JavaScript; /assets/thread.js only
// streams the answer in and then swaps in the page as the server renders it.
import { escapeHtml } from '@kitajs/html'
import type { AttachmentKind } from '../../attachments/repository'
import type { ThreadsModel } from '../../threads/model'
import type { Rating } from '../../threads/repository'
import { CsrfField, Time } from '../components'
import { Layout, type Viewer } from '../layout'
import { renderMarkdown } from '../markdown'
import { FilesField, StateBadge, ThumbIcon, threadTitle } from './parts'

export const threadScriptPath = '/assets/thread.js'

export interface ThreadPageProps {
  viewer: Viewer
  thread: ThreadsModel.thread
  isOwner: boolean
  messages: ThreadsModel.message[]
  files: Map<string, { filename: string; kind: AttachmentKind }>
  ratings: Map<string, Rating>
  /** The user message whose answer is queued or being written, if any. */
  pendingMessageId: string | null
  /** Why the thread is in `error`. */
  failure: string | null
  /** Why the composer's last message was refused, with what was typed. */
  error?: string
  draft?: string
}

function threadPath(thread: ThreadsModel.thread, rest = ''): string {
  return escapeHtml(`/threads/${thread.id}${rest}`)
}

function authorOf(message: ThreadsModel.message, props: ThreadPageProps): string {
  if (message.role === 'assistant') return 'Assistant'
  if (message.role === 'summary') return 'Summary'
  return props.isOwner ? 'You' : (props.thread.owner.name ?? 'Owner')
}

function Attachment({ thread, id, props }: { thread: ThreadsModel.thread; id: string; props: ThreadPageProps }) {
  const file = props.files.get(id)
  const name = file?.filename ?? 'attachment'
  const href = threadPath(thread, `/attachments/${id}`)
  if (file?.kind === 'image') {
    return (
      <figure class="attachment-image">
        <a href={href}>
          <img src={href} alt={escapeHtml(name)} loading="lazy" />
        </a>
        <figcaption safe>{name}</figcaption>
      </figure>
    )
  }
  return (
    <p class="attachment-document">
      <a href={href} download={escapeHtml(name)}>
        <span safe>{name}</span> <span class="muted">({file?.kind === 'pdf' ? 'PDF' : 'text'})</span>
      </a>
    </p>
  )
}

/** A `user_get_choice` question: buttons that answer it when it is the thread's open question, else a list. */
function Choice({
  block,
  answerable,
  props,
}: {
  block: Extract<ThreadsModel.contentBlock, { type: 'user_get_choice' }>
  answerable: boolean
  props: ThreadPageProps
}): JSX.Element {
  return (
    <div class="choice">
      <p class="choice-question" safe>
        {block.question}
      </p>
      {answerable ? (
        <form method="post" action={threadPath(props.thread, '/messages')} class="choice-form">
          <CsrfField token={props.viewer.csrf} />
          <fieldset>
            <legend class="visually-hidden">Answer with one of these</legend>
            {block.choices.map((choice) => (
              <button type="submit" name="text" value={escapeHtml(choice)} safe>
                {choice}
              </button>
            ))}
          </fieldset>
        </form>
      ) : (
        <ul class="choice-list">
          {block.choices.map((choice) => (
            <li safe>{choice}</li>
          ))}
        </ul>
      )}
    </div>
  )
}

function Feedback({ message, props }: { message: ThreadsModel.message; props: ThreadPageProps }): JSX.Element {
  const rating = props.ratings.get(message.id)
  const labelId = `rate-${message.id}`
  return (
    <form
      method="post"
      action={threadPath(props.thread, `/messages/${message.id}/feedback`)}
      class="feedback"
      aria-labelledby={labelId}
    >
      <CsrfField token={props.viewer.csrf} />
      <span id={labelId} class="feedback-label">
        Rate this answer
      </span>
      <button
        type="submit"
        name="positive"
        value="true"
        class="icon"
        title="Good answer"
        aria-pressed={rating?.positive === true ? 'true' : 'false'}
      >
        <ThumbIcon direction="up" />
        <span class="visually-hidden">Good answer</span>
      </button>
      <button
        type="submit"
        name="positive"
        value="false"
        class="icon"
        title="Bad answer"
        aria-pressed={rating?.positive === false ? 'true' : 'false'}
      >
        <ThumbIcon direction="down" />
        <span class="visually-hidden">Bad answer</span>
      </button>
      <details class="feedback-comment" open={Boolean(rating?.text)}>
        <summary>{rating?.text ? 'Your comment' : 'Add a comment'}</summary>
        <label for={`comment-${message.id}`}>
          Comment <span class="muted">(optional, sent with 👍 or 👎)</span>
        </label>
        <textarea id={`comment-${message.id}`} name="feedback_text" rows="2" maxlength="1024" safe>
          {rating?.text ?? ''}
        </textarea>
      </details>
    </form>
  )
}

function Block({
  block,
  answerable,
  props,
}: {
  block: ThreadsModel.contentBlock
  answerable: boolean
  props: ThreadPageProps
}): JSX.Element {
  switch (block.type) {
    case 'text': {
      const safeHtml = renderMarkdown(block.text)
      return <div class="markdown">{safeHtml}</div>
    }
    case 'image':
    case 'document':
      return <Attachment thread={props.thread} id={block.attachment_id} props={props} />
    case 'user_get_choice':
      return <Choice block={block} answerable={answerable} props={props} />
  }
}

function Message({
  message,
  isLast,
  props,
}: {
  message: ThreadsModel.message
  isLast: boolean
  props: ThreadPageProps
}): JSX.Element {
  const { thread } = props
  const answerable = isLast && props.isOwner && thread.state === 'ready'
  const headingId = `message-${message.id}-by`
  return (
    <li id={`message-${message.id}`} class={`message message-${message.role}`} aria-labelledby={headingId}>
      <div class="message-head">
        <h3 id={headingId} class="message-author" safe>
          {authorOf(message, props)}
        </h3>
        <a class="message-link" href={`#message-${message.id}`} title="Link to this message">
          <Time at={message.created_at} />
        </a>
      </div>
      {message.role === 'summary' ? (
        <p class="muted summary-note">Stands in for earlier messages; the model reads it as a note.</p>
      ) : null}
      {message.contents.map((block) => (
        <Block block={block} answerable={answerable} props={props} />
      ))}
      {message.role === 'assistant' ? <Feedback message={message} props={props} /> : null}
    </li>
  )
}

function ThreadTools({ props }: { props: ThreadPageProps }): JSX.Element {
  const { thread } = props
  return (
    <div class="thread-tools">
      <details class="rename">
        <summary>Rename</summary>
        <form method="post" action={threadPath(thread, '/update')} class="inline-form">
          <CsrfField token={props.viewer.csrf} />
          <label for="thread-name">Name</label>
          <input id="thread-name" name="name" type="text" maxlength="500" value={escapeHtml(thread.name ?? '')} />
          <button type="submit">Save name</button>
        </form>
      </details>
      <form method="post" action={threadPath(thread, '/update')}>
        <CsrfField token={props.viewer.csrf} />
        <input type="hidden" name="archived" value={thread.archived ? 'false' : 'true'} />
        <button type="submit">{thread.archived ? 'Unarchive' : 'Archive'}</button>
      </form>
      <form method="post" action={threadPath(thread, '/update')}>
        <CsrfField token={props.viewer.csrf} />
        <input type="hidden" name="is_private" value={thread.is_private ? 'false' : 'true'} />
        <button type="submit">{thread.is_private ? 'Make public' : 'Make private'}</button>
      </form>
    </div>
  )
}

function LiveAnswer({ props, messageId }: { props: ThreadPageProps; messageId: string }): JSX.Element {
  const { thread } = props
  return (
    <section
      id="live-answer"
      class="message message-assistant live"
      aria-labelledby="live-title"
      data-stream-url={threadPath(thread, `/messages/${messageId}/stream`)}
    >
      <div class="message-head">
        <h3 id="live-title" class="message-author">
          Assistant
        </h3>
      </div>
      <p class="muted live-status">
        {thread.state === 'waiting' ? 'Waiting for its turn…' : 'Writing the answer…'}{' '}
        <noscript>
          <a href={threadPath(thread)}>Reload to see it</a>
        </noscript>
      </p>
      <div class="live-text markdown" aria-live="polite" aria-atomic="false" />
      {props.isOwner ? (
        <form method="post" action={threadPath(thread, '/stop')}>
          <CsrfField token={props.viewer.csrf} />
          <button type="submit">Stop</button>
        </form>
      ) : null}
    </section>
  )
}

function Failure({ props }: { props: ThreadPageProps }): JSX.Element {
  return (
    <section class="failure" aria-labelledby="failure-title">
      <h2 id="failure-title">This thread stopped with an error</h2>
      <p safe>{props.failure ?? 'The response failed.'}</p>
      <p>
        It cannot take new messages. You can go on in a new thread that starts with an extract of this one's last
        messages.
      </p>
      <form method="post" action={threadPath(props.thread, '/continue')}>
        <CsrfField token={props.viewer.csrf} />
        <button type="submit" class="primary">
          Continue in a new thread
        </button>
      </form>
    </section>
  )
}

function Composer({ props }: { props: ThreadPageProps }): JSX.Element {
  return (
    <section class="composer" aria-labelledby="composer-title">
      <h2 id="composer-title" class="visually-hidden">
        Reply
      </h2>
      {props.error ? (
        <p class="alert" role="alert" safe>
          {props.error}
        </p>
      ) : null}
      <form method="post" action={threadPath(props.thread, '/messages')} enctype="multipart/form-data">
        <CsrfField token={props.viewer.csrf} />
        <div class="field">
          <label for="composer-text">Message</label>
          <textarea id="composer-text" name="text" rows="4" required safe>
            {props.draft ?? ''}
          </textarea>
        </div>
        <FilesField id="composer-files" />
        <div class="actions">
          <button type="submit" class="primary">
            Send
          </button>
        </div>
      </form>
    </section>
  )
}

/**
 * What comes after the messages: the answer being written, the way on from an error, or the composer. A refused
 * message keeps the composer, with its text, even while an answer is being written.
 */
function NextStep({ props }: { props: ThreadPageProps }): JSX.Element {
  const { thread } = props
  if (props.pendingMessageId) {
    return (
      <>
        <LiveAnswer props={props} messageId={props.pendingMessageId} />
        {props.error ? <Composer props={props} /> : null}
      </>
    )
  }
  if (thread.state === 'error') return <Failure props={props} />
  if (thread.state !== 'ready') {
    // Between a Stop and the generator letting go there is no answer left to follow.
    return (
      <p class="muted">
        The answer is stopping. <a href={threadPath(thread)}>Reload</a> in a moment.
      </p>
    )
  }
  if (!props.isOwner) {
    return (
      <p class="muted">
        Only <span safe>{thread.owner.name ?? 'the owner'}</span> can write in this thread.
      </p>
    )
  }
  return <Composer props={props} />
}

export function ThreadPage(props: ThreadPageProps): JSX.Element {
  const { thread } = props
  const title = threadTitle(thread)
  return (
    <Layout title={title} viewer={props.viewer}>
      <div class="wide">
        <div id="thread-view">
          <nav aria-label="Breadcrumb" class="breadcrumb">
            <a href="/threads">Threads</a>
          </nav>
          <header class="thread-header">
            <h1 safe>{title}</h1>
            <p class="thread-meta">
              <StateBadge state={thread.state} />
              {thread.is_private ? <span class="badge">Private</span> : null}
              {thread.archived ? <span class="badge">Archived</span> : null}
              <span>
                by <span safe>{props.isOwner ? 'you' : (thread.owner.name ?? 'another member')}</span>, started{' '}
                <Time at={thread.created_at} />
              </span>
            </p>
            {props.isOwner ? <ThreadTools props={props} /> : null}
          </header>
          <section aria-labelledby="messages-title">
            <h2 id="messages-title" class="visually-hidden">
              Messages
            </h2>
            {props.messages.length === 0 ? <p class="empty">No messages yet.</p> : null}
            <ol class="messages">
              {props.messages.map((message, index) => (
                <Message message={message} isLast={index === props.messages.length - 1} props={props} />
              ))}
            </ol>
          </section>
          <NextStep props={props} />
        </div>
        <p id="thread-status" class="visually-hidden" role="status" />
      </div>
      <script src={threadScriptPath} defer />
    </Layout>
  )
}
