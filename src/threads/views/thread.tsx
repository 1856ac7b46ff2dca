// The thread page at a thread's app_url: its messages (Markdown, images, documents, choices, ratings), the answer
// being written, and what the reader may do next, beside the sidebar, with the composer at the bottom. Every form
// works without JavaScript; the chat script (src/web/client/) sends, streams and updates the page without reloading it.
import { escapeHtml } from '@kitajs/html'
import type { AttachmentKind } from '../../attachments/repository'
import { CsrfField, Time } from '../../web/components'
import { renderMarkdown } from '../../web/markdown'
import type { ThreadsModel } from '../model'
import type { Rating } from '../repository'
import { toolCallLine } from '../tool-calls'
import { ChatLayout, type ChatLayoutProps, CopyIcon, TopBar } from './chat-layout'
import { Composer, type ModelPicker, type QuotaNotice, ToolIcon, type ToolsMenu } from './composer'
import { EchoNotice, EditIcon, RegenerateIcon, StateBadge, ThumbIcon, threadTitle } from './parts'

/** Where a listed message stands among its versions (versions.ts `versionsOf`), and for an answer its model. */
export interface MessageVersion {
  version: number
  versions: number
  previousId: string | null
  nextId: string | null
  /** The configured model ID that wrote an answer; null for a user message or an answer from before models. */
  model: string | null
}

/** The composer's model picker: the models the organization may use, and the one the next answer uses. */
/** The instructions textarea's bound, as the thread settings' API has it. */
export const instructionsMaxChars = 8000

export interface ThreadPageProps extends Omit<ChatLayoutProps, 'title'> {
  thread: ThreadsModel.thread
  isOwner: boolean
  messages: ThreadsModel.message[]
  files: Map<string, { filename: string; kind: AttachmentKind }>
  ratings: Map<string, Rating>
  /** The user message whose answer is queued or being written, if any. */
  pendingMessageId: string | null
  /** Why the thread is in `error`. */
  failure: string | null
  /** Answers that were stopped before they were complete. */
  stoppedAnswers: Set<string>
  /** Notes under answers, by answer: the attached PDFs the model could not read, and why. */
  answerNotes: Map<string, string[]>
  /** Each listed message's place among its versions, and the model of each answer: one read for the page. */
  versions: Map<string, MessageVersion>
  /** Models' display names by ID, for the model named under each answer. */
  modelNames: Map<string, string>
  /** The tools each answer called, by answer (none: absent). */
  toolCalls: Map<string, ThreadsModel.toolCall[]>
  /** The composer's model picker; null when there is nothing to choose (one model). */
  picker: ModelPicker | null
  /** The composer's Tools menu, for the owner when the organization has tools on; null otherwise. */
  toolsMenu: ToolsMenu | null
  /** The thread's own instructions, for its owner's menu. */
  instructions: string | null
  /** Why the composer's last message was refused, with what was typed. */
  error?: string
  /** What the composer says of the owner's monthly budgets. */
  quota?: QuotaNotice | null
  draft?: string
  /** Why the thread's instructions were refused, with what was typed (the menu opens to show it). */
  instructionsError?: string
  instructionsDraft?: string
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
      <span id={labelId} class="visually-hidden">
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

/** The message as it was written, for copying: its text's Markdown, and a question with its choices as a list. */
function messageMarkdown(message: ThreadsModel.message): string {
  return message.contents
    .flatMap((block) => {
      if (block.type === 'text') return [block.text]
      if (block.type === 'user_get_choice')
        return [[block.question, '', ...block.choices.map((c) => `- ${c}`)].join('\n')]
      return []
    })
    .join('\n\n')
}

/**
 * Copies the message's Markdown as written (the page's text would bring the code blocks' labels and lose the marks);
 * only the script can copy, so it shows the button. The Markdown waits beside it in an inert template, as text.
 */
function CopyMessage({ message }: { message: ThreadsModel.message }): JSX.Element {
  return (
    <>
      <button type="button" class="icon copy-message js-only" title="Copy the message">
        <CopyIcon />
        <span class="visually-hidden">Copy the message</span>
      </button>
      <template class="message-markdown" safe>
        {messageMarkdown(message)}
      </template>
    </>
  )
}

/** Whether the owner may change the conversation now: edit, regenerate, switch versions (not while an answer runs). */
function canChange(props: ThreadPageProps): boolean {
  const state = props.thread.state
  return props.isOwner && props.pendingMessageId === null && (state === 'ready' || state === 'error')
}

/**
 * `‹ 2/3 ›`: the message's versions, each arrow a form that makes the neighbouring version (and its latest replies)
 * the thread's path. The arrows keep their IDs by place in the list, so the focus stays on them across the swap.
 */
function VersionNav({
  message,
  index,
  props,
}: {
  message: ThreadsModel.message
  index: number
  props: ThreadPageProps
}): JSX.Element {
  const place = props.versions.get(message.id)
  if (!place || place.versions < 2) return ''
  const active = canChange(props)
  const step = (target: string | null, direction: 'previous' | 'next') => {
    const label = direction === 'previous' ? 'Previous version' : 'Next version'
    const glyph = direction === 'previous' ? '‹' : '›'
    const id = `versions-${index}-${direction}`
    if (!target || !active) {
      return (
        <button type="button" class="icon version-step" id={id} aria-disabled="true" title={label}>
          <span aria-hidden="true">{glyph}</span>
          <span class="visually-hidden">{label}</span>
        </button>
      )
    }
    return (
      <form method="post" action={threadPath(props.thread, `/messages/${target}/activate`)} class="version-form">
        <CsrfField token={props.viewer.csrf} />
        <button type="submit" class="icon version-step" id={id} title={label}>
          <span aria-hidden="true">{glyph}</span>
          <span class="visually-hidden">{label}</span>
        </button>
      </form>
    )
  }
  return (
    <fieldset class="versions">
      <legend class="visually-hidden" safe>
        {`Version ${place.version} of ${place.versions}`}
      </legend>
      {props.isOwner ? step(place.previousId, 'previous') : null}
      <span class="version-count" aria-hidden="true" safe>
        {`${place.version}/${place.versions}`}
      </span>
      {props.isOwner ? step(place.nextId, 'next') : null}
    </fieldset>
  )
}

/** Edit: a page of its own without the script (a form with the text), an editor in place with it (chat.ts). */
function EditLink({ message, index, props }: { message: ThreadsModel.message; index: number; props: ThreadPageProps }) {
  return (
    <a
      class="icon-link message-edit"
      id={`edit-${index}`}
      href={threadPath(props.thread, `/messages/${message.id}/edit`)}
      title="Edit the message"
    >
      <EditIcon />
      <span class="visually-hidden">Edit the message</span>
    </a>
  )
}

/** Regenerate: a new answer to the message before it; the one shown stays as a version. */
function Regenerate({ questionId, index, props }: { questionId: string; index: number; props: ThreadPageProps }) {
  return (
    <form method="post" action={threadPath(props.thread, `/messages/${questionId}/regenerate`)} class="regenerate">
      <CsrfField token={props.viewer.csrf} />
      <button type="submit" class="icon" id={`regenerate-${index}`} title="Regenerate the answer">
        <RegenerateIcon />
        <span class="visually-hidden">Regenerate the answer</span>
      </button>
    </form>
  )
}

/** A call's arguments as the model gave them: an object indented as JSON, other text as it was written. */
function argumentsText(call: ThreadsModel.toolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments, null, 2)
}

/** The outcomes whose line already says the call's error. */
const saysError = new Set<ThreadsModel.toolCall['outcome']>(['error', 'timeout', 'refused'])

/** The outcomes a call's line shows as a problem. */
const troubled = new Set<ThreadsModel.toolCall['outcome']>(['error', 'timeout', 'refused', 'unknown', 'denied'])

/**
 * What the answer did with tools, before the text that read their results: one disclosure per call, its line ("Used
 * search_docs on docs · 320 ms") opening to the arguments and the result the model read, as plain text.
 */
function ToolCalls({ message, props }: { message: ThreadsModel.message; props: ThreadPageProps }): JSX.Element {
  const calls = props.toolCalls.get(message.id)
  if (!calls || calls.length === 0) return ''
  return (
    <ul class="tool-calls" aria-label="Tools the answer used">
      {calls.map((call) => (
        <li>
          <details class={troubled.has(call.outcome) ? 'tool-call troubled' : 'tool-call'} id={`tool-call-${call.id}`}>
            <summary>
              <ToolIcon />
              <span class="tool-call-line" safe>
                {toolCallLine(call, props.isOwner ? 'your' : 'the owner’s')}
              </span>
            </summary>
            <div class="tool-call-body">
              {call.error && !saysError.has(call.outcome) ? (
                <p class="tool-call-note" safe>
                  {call.error}
                </p>
              ) : null}
              {call.decided_by ? (
                <p class="tool-call-note">
                  {call.outcome === 'denied' ? 'Denied' : 'Allowed'} by{' '}
                  <a href={`#message-${escapeHtml(call.decided_by)}`}>
                    {props.isOwner ? 'your reply' : 'the owner’s reply'}
                  </a>
                  .
                </p>
              ) : null}
              <h4 class="tool-call-heading">Arguments</h4>
              <pre class="tool-call-text" safe>
                {argumentsText(call)}
              </pre>
              {call.result === null ? null : (
                <>
                  <h4 class="tool-call-heading">{call.result_truncated ? 'Result (cut for the model)' : 'Result'}</h4>
                  <pre class="tool-call-text" safe>
                    {call.result}
                  </pre>
                </>
              )}
            </div>
          </details>
        </li>
      ))}
    </ul>
  )
}

/** The model that wrote an answer, by its display name (its ID when the catalogue no longer names it). */
function AnswerModel({ message, props }: { message: ThreadsModel.message; props: ThreadPageProps }): JSX.Element {
  const model = props.versions.get(message.id)?.model
  if (!model) return ''
  return (
    <span class="answer-model" title="The model that wrote this answer" safe>
      {props.modelNames.get(model) ?? model}
    </span>
  )
}

function Message({
  message,
  index,
  props,
}: {
  message: ThreadsModel.message
  index: number
  props: ThreadPageProps
}): JSX.Element {
  const { thread } = props
  const isLast = index === props.messages.length - 1
  const answerable = isLast && props.isOwner && thread.state === 'ready'
  const headingId = `message-${message.id}-by`
  const stopped = props.stoppedAnswers.has(message.id)
  const changeable = canChange(props)
  const question = props.messages[index - 1]
  return (
    <li id={`message-${message.id}`} class={`message message-${message.role}`} aria-labelledby={headingId}>
      <h3 id={headingId} class="message-author" safe>
        {authorOf(message, props)}
      </h3>
      {message.role === 'summary' ? (
        <p class="muted summary-note">Stands in for earlier messages; the model reads it as a note.</p>
      ) : null}
      {message.role === 'assistant' ? <ToolCalls message={message} props={props} /> : null}
      <div class="message-body">
        {message.contents.map((block) => (
          <Block block={block} answerable={answerable} props={props} />
        ))}
      </div>
      {stopped ? <p class="stopped-note">Stopped</p> : null}
      {(props.answerNotes.get(message.id) ?? []).map((note) => (
        <p class="answer-note" role="note" safe>
          {note}
        </p>
      ))}
      <div class="message-actions">
        <VersionNav message={message} index={index} props={props} />
        <CopyMessage message={message} />
        {message.role === 'user' && changeable ? <EditLink message={message} index={index} props={props} /> : null}
        {message.role === 'assistant' && changeable && question?.role === 'user' ? (
          <Regenerate questionId={question.id} index={index} props={props} />
        ) : null}
        {message.role === 'assistant' ? <Feedback message={message} props={props} /> : null}
        {/* The model and the time wrap together: a phone's narrow row never starts a line with "· 5 minutes ago". */}
        <span class="message-meta">
          {message.role === 'assistant' ? <AnswerModel message={message} props={props} /> : null}
          <a class="message-link" href={`#message-${message.id}`} title="Link to this message">
            <Time at={message.created_at} />
          </a>
        </span>
      </div>
    </li>
  )
}

/** The thread's menu: exports for anyone who can read it; changes, a share link and deletion for its owner. */
function ThreadTools({ props }: { props: ThreadPageProps }): JSX.Element {
  const { thread } = props
  return (
    <details class="thread-tools" open={Boolean(props.instructionsError)}>
      <summary title="Thread options">
        <span aria-hidden="true">⋯</span>
        <span class="visually-hidden">Thread options</span>
      </summary>
      <div class="tools-panel">
        {props.isOwner ? <OwnerTools props={props} /> : null}
        <a class="tool-link" href={threadPath(thread, '/export?format=markdown')} download="">
          Export as Markdown
        </a>
        <a class="tool-link" href={threadPath(thread, '/export?format=json')} download="">
          Export as JSON
        </a>
        {props.isOwner ? (
          <a class="tool-link" href={threadPath(thread, '/share')}>
            Share a link…
          </a>
        ) : null}
        {props.isOwner ? (
          <a class="tool-link danger-link" href={threadPath(thread, '/delete')}>
            Delete thread…
          </a>
        ) : null}
      </div>
    </details>
  )
}

function OwnerTools({ props }: { props: ThreadPageProps }): JSX.Element {
  const { thread } = props
  return (
    <>
      <form method="post" action={threadPath(thread, '/update')} class="rename">
        <CsrfField token={props.viewer.csrf} />
        <label for="thread-name">Name</label>
        <input id="thread-name" name="name" type="text" maxlength="500" value={escapeHtml(thread.name ?? '')} />
        <button type="submit">Save name</button>
      </form>
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
      <form method="post" action={threadPath(thread, '/settings')} class="instructions">
        <CsrfField token={props.viewer.csrf} />
        <label for="thread-instructions">Instructions</label>
        <p id="thread-instructions-hint" class="hint">
          Added to the system prompt for this thread's answers, from the next one on.
        </p>
        {props.instructionsError ? (
          <p id="thread-instructions-error" class="alert" role="alert" safe>
            {props.instructionsError}
          </p>
        ) : null}
        <textarea
          id="thread-instructions"
          name="instructions"
          rows="3"
          maxlength={String(instructionsMaxChars)}
          placeholder="Answer in French; be brief."
          aria-describedby={
            props.instructionsError ? 'thread-instructions-hint thread-instructions-error' : 'thread-instructions-hint'
          }
          safe
        >
          {props.instructionsDraft ?? props.instructions ?? ''}
        </textarea>
        <button type="submit">Save instructions</button>
      </form>
    </>
  )
}

function LiveAnswer({ props, messageId }: { props: ThreadPageProps; messageId: string }): JSX.Element {
  const { thread } = props
  return (
    <li
      id="live-answer"
      class="message message-assistant live"
      aria-labelledby="live-title"
      data-stream-url={threadPath(thread, `/messages/${messageId}/stream`)}
    >
      <h3 id="live-title" class="message-author">
        Assistant
      </h3>
      <p class="muted live-status">
        <span class="typing" aria-hidden="true">
          <span />
          <span />
          <span />
        </span>{' '}
        <span class="live-status-text">
          {thread.state === 'waiting' ? 'Waiting for its turn…' : 'Writing the answer…'}
        </span>{' '}
        <noscript>
          <a href={threadPath(thread)}>Reload to see it</a>
        </noscript>
      </p>
      <div class="message-body">
        <div class="live-text markdown" aria-live="polite" aria-atomic="false" />
      </div>
    </li>
  )
}

const settingName = /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/

/**
 * A failure as the person reads it: the stored sentence (written for the API's callers) without the sentences that
 * speak to operators (settings to check, things an administrator should do); those go to administrators as a hint.
 */
export function failureForPeople(text: string | null): { said: string; forAdmins: string | null } {
  const stored = text?.trim() || 'The response failed.'
  const sentences = stored.split(/(?<=[.!?])\s+/)
  const plain = sentences
    .filter((sentence) => !settingName.test(sentence) && !/administrator/i.test(sentence))
    .map((sentence) => sentence.replace(/\s*\([^)]*\)/g, ''))
  const said = plain.length > 0 ? plain.join(' ') : 'The AI service could not answer this time.'
  return { said, forAdmins: said === stored ? null : stored }
}

/** The user message the failure left unanswered, when the path ends in one: what Retry asks again. */
function unanswered(props: ThreadPageProps): ThreadsModel.message | null {
  const last = props.messages.at(-1)
  return last?.role === 'user' ? last : null
}

function Failure({ props }: { props: ThreadPageProps }): JSX.Element {
  const { said, forAdmins } = failureForPeople(props.failure)
  const question = unanswered(props)
  return (
    <section class="failure" aria-labelledby="failure-title">
      <h2 id="failure-title">The answer failed</h2>
      <p safe>{said}</p>
      {props.viewer.isAdmin && forAdmins ? (
        <p class="admin-hint">
          <strong>For administrators:</strong> <span safe>{forAdmins}</span> The server's log has the details.
        </p>
      ) : null}
      {props.isOwner ? (
        <>
          <p>
            {question
              ? 'Retry asks for the answer again; you can also edit your message first. '
              : 'Edit a message or regenerate an answer to go on here. '}
            Or go on in a new thread that starts with an extract of this one's last messages.
          </p>
          <div class="failure-actions">
            {question ? (
              <form method="post" action={threadPath(props.thread, `/messages/${question.id}/regenerate`)}>
                <CsrfField token={props.viewer.csrf} />
                <button type="submit" class="primary" id="retry">
                  <RegenerateIcon /> Retry
                </button>
              </form>
            ) : null}
            <form method="post" action={threadPath(props.thread, '/continue')}>
              <CsrfField token={props.viewer.csrf} />
              <button type="submit">Continue in a new thread</button>
            </form>
          </div>
        </>
      ) : null}
    </section>
  )
}

/** What comes after the messages: the way on from an error, or a word on who may write. */
function NextStep({ props }: { props: ThreadPageProps }): JSX.Element {
  const { thread } = props
  if (props.pendingMessageId) return ''
  if (thread.state === 'error') return <Failure props={props} />
  if (thread.state !== 'ready') {
    // Between a Stop and the generator letting go there is no answer left to follow.
    return (
      <p class="muted next-note">
        The answer is stopping. <a href={threadPath(thread)}>Reload</a> in a moment.
      </p>
    )
  }
  if (!props.isOwner) {
    return (
      <p class="muted next-note">
        Only <span safe>{thread.owner.name ?? 'the owner'}</span> can write in this thread.
      </p>
    )
  }
  return ''
}

export function ThreadPage(props: ThreadPageProps): JSX.Element {
  const { thread } = props
  const title = threadTitle(thread)
  const running = props.pendingMessageId !== null
  const canWrite = props.isOwner && thread.state !== 'error'
  return (
    <ChatLayout title={title} viewer={props.viewer} sidebar={props.sidebar} assets={props.assets} model={props.model}>
      <TopBar>
        <div class="thread-header">
          <h1 class="chat-title" safe>
            {title}
          </h1>
          <p class="thread-meta">
            <StateBadge state={thread.state} />
            {thread.is_private ? <span class="badge">Private</span> : null}
            {thread.archived ? <span class="badge">Archived</span> : null}
            <span class="thread-byline">
              by <span safe>{props.isOwner ? 'you' : (thread.owner.name ?? 'another member')}</span>, started{' '}
              <Time at={thread.created_at} />
            </span>
          </p>
        </div>
        <ThreadTools props={props} />
      </TopBar>
      <div id="thread-view" class="conversation" data-state={thread.state}>
        <h2 id="messages-title" class="visually-hidden">
          Messages
        </h2>
        {props.messages.length === 0 ? <p class="empty">No messages yet.</p> : null}
        <ol class="messages" aria-labelledby="messages-title">
          {props.messages.map((message, index) => (
            <Message message={message} index={index} props={props} />
          ))}
          {props.pendingMessageId ? <LiveAnswer props={props} messageId={props.pendingMessageId} /> : null}
        </ol>
        <NextStep props={props} />
        {props.messages.length <= 1 ? <EchoNotice model={props.model} isAdmin={props.viewer.isAdmin} /> : null}
      </div>
      {canWrite ? (
        <Composer
          action={`/threads/${thread.id}/messages`}
          stopAction={`/threads/${thread.id}/stop`}
          running={running}
          csrf={props.viewer.csrf}
          draft={props.draft}
          error={props.error}
          quota={props.quota}
          placeholder="Reply"
          picker={props.picker}
          pickerAction={`/threads/${thread.id}/settings`}
          tools={props.toolsMenu}
        />
      ) : null}
    </ChatLayout>
  )
}
