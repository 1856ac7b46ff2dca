// The web application's chat pages and their forms: HTTP in, HTML or a redirect out. Every form posts and
// redirects (303) without JavaScript; the chat script (src/web/client/) makes the same posts without reloading.
// The signed-in person acts as a Caller with threads:read and threads:write, so visibility and owner rules are the
// API's own.

import { Elysia } from 'elysia'
import { attachmentResponse } from '../attachments/download'
import type { FileInspector } from '../attachments/inspector'
import { originalKey } from '../attachments/keys'
import { unreadableReason } from '../attachments/pdf-text'
import type { AttachmentKind, AttachmentRepository } from '../attachments/repository'
import {
  attachmentNames,
  type CheckedFiles,
  checkFormFiles,
  discardCheckedFiles,
  findAttachment,
  refusalInWords,
  removeUnsentFiles,
  storeFormFiles,
} from '../attachments/service'
import type { Caller } from '../auth/model'
import { callerFromSession, findSession } from '../auth/sessions'
import { answerStream } from '../generation'
import type { GenerationRepository } from '../generation/repository'
import type { AnswerEngine } from '../generation/service'
import type { ToolCallRepository } from '../generation/tool-calls.repository'
import type { AuditLog } from '../shared/audit'
import { AppError, conflict, invalidRequest, notFound } from '../shared/errors'
import type { DomainEvents } from '../shared/events'
import { isUuid } from '../shared/ids'
import type { Logger } from '../shared/log'
import { type Heartbeats, type OpenStreams, sseResponse } from '../shared/streams/sse'
import type { BlobStore } from '../storage/blobs'
import type { UsageRepository } from '../usage/repository'
import { clientAssets } from '../web/client-assets'
import { type PageSession, pageHeaders, pageOrigin, seeOther, signInPath, type WebDeps } from '../web/index'
import { viewerOf } from '../web/layout'
import { field, fieldValues, type PostedForm, trustedForms } from '../web/trusted-form'
import type { Conversation } from './conversation'
import { exportResponse, exportThread } from './export'
import type { ThreadFeed } from './feed'
import { submitFeedback } from './feedback'
import type { Links } from './links'
import { listThreads, searchThreads } from './listing'
import { allMessages, attachmentIdsOf, lastFailure } from './messages'
import { feedbackTextMaxChars, type ThreadsModel, threadNameMaxLength } from './model'
import type { ThreadRepository } from './repository'
import { deleteThread, getThread, stopThread, updateThread } from './threads'
import { toolCallsOf } from './tool-calls'
import { versionsOf } from './versions'
import { type ModelInfo, type SidebarProps, type ThreadFilters, ThreadList } from './views/chat-layout'
import type { ModelPicker, QuotaNotice, ToolOption } from './views/composer'
import { DeleteThreadPage } from './views/delete-thread'
import { EditMessagePage } from './views/edit-message'
import { instructionsMaxChars, ThreadPage, type ThreadPageProps } from './views/thread'
import { NewConversationPage, type NewThreadDraft } from './views/threads'
import { requireOwnedThread } from './visibility'

/** A model as the pages offer it: the organization's choice, one of them its default. */
export interface OfferedModel {
  id: string
  name: string
  default: boolean
}

/** A thread's settings, as `GET /api/v1/threads/{id}/settings` answers them. */
export interface ThreadSettings {
  model: string | null
  instructions: string | null
  /** `server/tool` names; null: every tool the organization has on; []: none. */
  tools: string[] | null
}

/**
 * What the pages need of the models feature (src/models/), composed in app.ts: the models the person's organization
 * may use, their names, and a thread's settings read and changed with the API's rules (owner only; a model the
 * organization may not use and instructions past 8,000 characters are refused).
 */
export interface PageModels {
  offered(caller: Caller): Promise<OfferedModel[]>
  /** A configured model's display name; undefined for one no longer configured. */
  nameOf(id: string): string | undefined
  settings(caller: Caller, threadId: string): Promise<ThreadSettings>
  updateSettings(
    caller: Caller,
    threadId: string,
    changes: { model?: string | null; instructions?: string | null; tools?: string[] | null },
  ): Promise<ThreadSettings>
}

/** A tool of the organization's MCP servers, as a thread's Tools menu offers it. */
export type PageTool = ToolOption

/**
 * What the pages need of the organization's MCP servers (src/connectors/), composed in app.ts: the tools it has on,
 * which a thread's Tools menu offers (a thread's choice is saved through PageModels, with the API's rules).
 */
export interface PageTools {
  offered(caller: Caller): Promise<PageTool[]>
}

/**
 * What the pages show of the person's monthly budgets (src/quotas/), composed in app.ts: in the composer, a notice
 * from 80% of a budget and the refusal once one is used up, each with the date it resets.
 */
export interface PageQuotas {
  notice(caller: Caller): Promise<QuotaNotice | null>
}

export interface ThreadPagesDeps extends WebDeps {
  threads: ThreadRepository
  /** Where exports are recorded (they write nothing else); deletions are recorded by the thread repository. */
  audit: AuditLog
  attachments: AttachmentRepository
  /** What answers used, for the export. */
  usage: UsageRepository
  /** The tools answers called: under each answer, and in the export. */
  toolCalls: ToolCallRepository
  /** Answers' status, for their streams and to offer a stopped one's retry. */
  generations: GenerationRepository
  log: Logger
  /** Stops answers (sending goes through `conversation`). */
  engine: AnswerEngine
  conversation: Conversation
  events: DomainEvents
  links: Links
  heartbeats: Heartbeats
  streams: OpenStreams
  feed: ThreadFeed
  /** Where form files wait on local disk while they are checked. */
  uploadsDir: string
  inspector: FileInspector
  blobs: BlobStore
  /** What answers, named in the pages. */
  model: ModelInfo
  /** The models to choose from and thread settings (src/models/). */
  models: PageModels
  /** The tools a thread may be given (src/connectors/). */
  tools: PageTools
  /** The composer's word on monthly budgets (src/quotas/). */
  quotas: PageQuotas
}

/** The pages' own policy: the shared one, plus this origin's script and its stream, and images only from here. */
export const threadPageHeaders = {
  ...pageHeaders,
  'content-security-policy':
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' blob:; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
} as const

function formFiles(form: PostedForm, name: string): File[] {
  // The DOM and Bun typings each have their own File; at run time there is one.
  return form.getAll(name).flatMap((value) => (typeof value === 'string' ? [] : [value as unknown as File]))
}

function flag(value: string | undefined): boolean | undefined {
  return value === 'true' ? true : value === 'false' ? false : undefined
}

/** A redirect, or a page with its status. */
type FormOutcome = Response | { status: number; page: JSX.Element }

/**
 * The steps every form shares: the `trustedForm` guard has let in a signed-in person's form from our own page;
 * a refusal the action throws becomes the shared error page (src/web/errors.tsx).
 */
async function runForm(
  session: PageSession | null,
  form: PostedForm,
  back: string,
  action: (form: PostedForm, session: PageSession) => Promise<FormOutcome>,
): Promise<FormOutcome> {
  if (!session) return seeOther(signInPath(back))
  return action(form, session)
}

function respond(
  outcome: FormOutcome,
  context: { html: (page: JSX.Element) => unknown; set: { status?: number | string } },
): unknown {
  if (outcome instanceof Response) return outcome
  context.set.status = outcome.status
  return context.html(outcome.page)
}

function listFilters(query: Record<string, string | undefined>): ThreadFilters {
  const choice = (value: string | undefined): 'true' | 'false' | '' =>
    value === 'true' || value === 'false' ? value : ''
  return {
    q: (query.q ?? '').slice(0, 500),
    owned: choice(query.owned),
    private: choice(query.private),
    archived: query.archived === 'true',
  }
}

function filtersQuery(filters: ThreadFilters): URLSearchParams {
  const params = new URLSearchParams()
  if (filters.q !== '') params.set('q', filters.q)
  if (filters.owned !== '') params.set('owned', filters.owned)
  if (filters.private !== '') params.set('private', filters.private)
  if (filters.archived) params.set('archived', 'true')
  return params
}

function pageHref(filters: ThreadFilters, after: string | null): string {
  const params = filtersQuery(filters)
  if (after) params.set('after', after)
  const query = params.toString()
  return query === '' ? '/threads' : `/threads?${query}`
}

type PageExtras = Pick<ThreadPageProps, 'error' | 'draft' | 'instructionsError' | 'instructionsDraft'> & {
  /** The sidebar's search and filters, as the page's address gives them (a search result keeps its list). */
  list?: Record<string, string | undefined>
}

async function threadPage(deps: ThreadPagesDeps, session: PageSession, threadId: string, extras: PageExtras = {}) {
  const caller = callerFromSession(session.user)
  // The thread said it was busy, but its answer had ended by the time the pending one was looked up: the messages
  // read in between may lack that answer, and the page would show neither it nor a live one. Read again.
  for (let attempt = 1; ; attempt++) {
    const { page, consistent } = await threadPageOnce(deps, session, caller, threadId, extras)
    if (consistent || attempt === 3) return page
  }
}

async function threadPageOnce(
  deps: ThreadPagesDeps,
  session: PageSession,
  caller: Caller,
  threadId: string,
  extras: PageExtras,
): Promise<{ page: JSX.Element; consistent: boolean }> {
  const threads = deps.threads
  const thread = await getThread(threads, caller, threadId, deps.links)
  const messages = await allMessages(deps.threads, caller, threadId, deps.links)
  const fileIds = messages.flatMap((message) => attachmentIdsOf(message.contents))
  const answers = messages.filter((message) => message.role === 'assistant').map((message) => message.id)
  const running = thread.state === 'waiting' || thread.state === 'active' || thread.state === 'interrupted'
  const asked = messages.filter((message) => message.role === 'user').map((message) => message.id)
  const pendingMessageId = running ? await threads.pendingMessageId(threadId) : null
  const files = await attachmentNames(deps.attachments, fileIds)
  const isOwner = thread.owner.id === session.user.sub
  const versions = await versionsOf(
    threads,
    threadId,
    messages.map((message) => message.id),
  )
  const modelNames = new Map<string, string>()
  for (const { model } of versions.values()) if (model) modelNames.set(model, deps.models.nameOf(model) ?? model)
  const settings = isOwner ? await deps.models.settings(caller, threadId) : null
  const toolsOffered = settings ? await deps.tools.offered(caller) : []
  const page = (
    <ThreadPage
      viewer={viewerOf(session)}
      sidebar={await sidebarOf(deps, session, extras.list ?? {}, threadId)}
      assets={await clientAssets()}
      model={deps.model}
      stoppedAnswers={stoppedAnswers(messages, await deps.generations.interrupted(asked))}
      answerNotes={await answerNotes(deps.blobs, messages, files)}
      thread={thread}
      isOwner={isOwner}
      messages={messages}
      files={files}
      ratings={await threads.ratingsBy(session.user.id, answers)}
      pendingMessageId={pendingMessageId}
      failure={thread.state === 'error' ? await lastFailure(threads, threadId) : null}
      versions={versions}
      modelNames={modelNames}
      toolCalls={await toolCallsOf(deps.toolCalls, answers)}
      picker={settings ? pickerOf(await deps.models.offered(caller), settings.model) : null}
      toolsMenu={settings && toolsOffered.length > 0 ? { offered: toolsOffered, chosen: settings.tools } : null}
      instructions={settings?.instructions ?? null}
      quota={isOwner ? await deps.quotas.notice(caller) : null}
      error={extras.error}
      draft={extras.draft}
      instructionsError={extras.instructionsError}
      instructionsDraft={extras.instructionsDraft}
    />
  )
  return { page, consistent: !running || pendingMessageId !== null }
}

/**
 * The composer's model picker: the organization's models, the thread's own choice selected, else the default. A
 * choice no longer offered (removed, or no longer allowed) is said beside it, the default answering instead. Nothing to
 * pick with one model.
 */
function pickerOf(offered: OfferedModel[], chosen: string | null): ModelPicker | null {
  if (offered.length < 2) return null
  const fallback = offered.find((model) => model.default) ?? offered[0]
  const kept = offered.find((model) => model.id === chosen)
  const options = offered.map(({ id, name }) => ({ id, name }))
  if (kept || chosen === null || !fallback) return { options, selected: kept?.id ?? fallback?.id ?? '' }
  return {
    options,
    selected: fallback.id,
    note: `${chosen} is no longer available: ${fallback.name} answers instead.`,
  }
}

/** The sidebar's page of threads, filtered as the query says. */
async function sidebarOf(
  deps: ThreadPagesDeps,
  session: PageSession,
  query: Record<string, string | undefined>,
  currentId?: string,
): Promise<SidebarProps> {
  const filters = listFilters(query)
  const after = query.after && isUuid(query.after) ? query.after : undefined
  const caller = callerFromSession(session.user)
  // Read before the list, so that the page's script, following the change feed from here, misses no change the
  // list did not catch (one it did catch may come again: applying it twice is harmless).
  const { head } = await deps.threads.feedBounds()
  const apiQuery = {
    q: filters.q === '' ? undefined : filters.q,
    owned: flag(filters.owned),
    private: flag(filters.private),
    archived: filters.archived,
    limit: 25,
  }
  // A search lists its threads with the passage each was found by; a list without words, the threads alone.
  const read = async (from: string | undefined): Promise<Pick<SidebarProps, 'page' | 'matches'>> => {
    if (apiQuery.q === undefined)
      return { page: await listThreads(deps.threads, caller, { ...apiQuery, after: from }, deps.links) }
    const found = await searchThreads(deps.threads, caller, { ...apiQuery, q: apiQuery.q, after: from }, deps.links)
    return {
      page: { ...found, data: found.data.map((hit) => hit.thread) },
      matches: new Map(found.data.map((hit) => [hit.thread.id, hit])),
    }
  }
  // A cursor that is no longer visible (its thread was made private) restarts the list rather than failing.
  let listed: Pick<SidebarProps, 'page' | 'matches'>
  try {
    listed = await read(after)
  } catch (error) {
    if (!(error instanceof AppError) || after === undefined) throw error
    listed = await read(undefined)
  }
  const { page } = listed
  return {
    filters,
    ...listed,
    listQuery: filtersQuery(filters).toString(),
    nextHref: page.has_more ? pageHref(filters, page.last_id) : null,
    firstHref: after ? pageHref(filters, null) : null,
    currentId,
    feedAfter: head,
  }
}

/**
 * The notes under answers: each answer names the PDFs of the messages it answered whose text the model could not
 * read (pdf-text.ts keeps why beside the file), as the model was told. Read from the store at each rendering, so
 * that no table changes; the byte that says so is read only for PDFs.
 */
async function answerNotes(
  blobs: BlobStore,
  messages: ThreadsModel.message[],
  files: Map<string, { filename: string; kind: AttachmentKind }>,
): Promise<Map<string, string[]>> {
  const pdfs = [...files].filter(([, file]) => file.kind === 'pdf')
  if (pdfs.length === 0) return new Map()
  const reasons = new Map(
    await Promise.all(pdfs.map(async ([id]) => [id, await unreadableReason(blobs, originalKey(id))] as const)),
  )
  const notes = new Map<string, string[]>()
  let unread: string[] = []
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (unread.length > 0) notes.set(message.id, unread)
      unread = []
      continue
    }
    for (const id of attachmentIdsOf(message.contents)) {
      const reason = reasons.get(id)
      const file = files.get(id)
      if (reason && file) unread.push(`The model could not read ${file.filename}: ${reason}.`)
    }
  }
  return notes
}

/** The answers that follow a user message whose answer was stopped part way. */
function stoppedAnswers(messages: ThreadsModel.message[], interrupted: Set<string>): Set<string> {
  const stopped = new Set<string>()
  messages.forEach((message, index) => {
    const next = messages[index + 1]
    if (interrupted.has(message.id) && next?.role === 'assistant') stopped.add(next.id)
  })
  return stopped
}

async function newConversationPage(
  deps: ThreadPagesDeps,
  session: PageSession,
  query: Record<string, string | undefined>,
  extras: { error?: string; draft?: NewThreadDraft; model?: string } = {},
) {
  const caller = callerFromSession(session.user)
  const offered = await deps.models.offered(caller)
  const picker = pickerOf(offered, null)
  // A refused start keeps the model that was chosen, as it keeps the text.
  if (picker && extras.model && offered.some((model) => model.id === extras.model)) picker.selected = extras.model
  return (
    <NewConversationPage
      viewer={viewerOf(session)}
      sidebar={await sidebarOf(deps, session, query)}
      assets={await clientAssets()}
      model={deps.model}
      picker={picker}
      error={extras.error}
      draft={extras.draft}
      quota={await deps.quotas.notice(caller)}
    />
  )
}

/** Stores the form's checked files in the thread and sends them with the text; the answer is queued. */
async function sendWithFiles(
  deps: ThreadPagesDeps,
  caller: Caller,
  threadId: string,
  text: string,
  checked: CheckedFiles,
): Promise<void> {
  const ids = (await storeFormFiles(deps, caller, threadId, checked)).map((file) => file.id)
  try {
    await deps.conversation.send(caller, threadId, { text, attachment_ids: ids.length > 0 ? ids : undefined })
  } catch (error) {
    await removeUnsentFiles(deps, threadId, ids)
    throw error
  }
}

export const threadPages = (deps: ThreadPagesDeps) =>
  new Elysia({ name: 'thread-pages' })
    .use(trustedForms(deps))
    .onBeforeHandle(({ set }) => {
      Object.assign(set.headers, threadPageHeaders)
    })
    // A new conversation: `/` plainly, `/threads` with the sidebar's search and filters in its query (`/` takes them
    // too: the search as typed keeps the address it is typed at).
    .get(
      '/',
      async ({ session, query, html }) =>
        session ? html(await newConversationPage(deps, session, query)) : seeOther('/login'),
      { session: true, detail: { hide: true } },
    )
    .get(
      '/threads',
      async ({ session, query, html, request }) => {
        if (!session) {
          const url = new URL(request.url)
          return seeOther(signInPath(url.pathname + url.search))
        }
        return html(await newConversationPage(deps, session, query))
      },
      { session: true, detail: { hide: true } },
    )
    .post(
      '/threads',
      async ({ session, form, html, set }) =>
        respond(await runForm(session, form, '/threads', (form, signedIn) => startFromForm(deps, signedIn, form)), {
          html,
          set,
        }),
      { session: true, trustedForm: 'upload', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/threads/:threadId',
      async ({ session, params, query, html, request }) => {
        if (!session) {
          const url = new URL(request.url)
          return seeOther(signInPath(url.pathname + url.search))
        }
        if (!isUuid(params.threadId)) throw notFound('Thread')
        return html(await threadPage(deps, session, params.threadId, { list: query }))
      },
      { session: true, detail: { hide: true } },
    )
    .post(
      '/threads/:threadId/:action',
      async ({ session, params, form, request, html, set }) => {
        const { threadId, action } = params
        const back = `/threads/${encodeURIComponent(threadId)}`
        const outcome = await runForm(session, form, back, async (form, signedIn) => {
          if (!isUuid(threadId)) throw notFound('Thread')
          const caller = callerFromSession(signedIn.user)
          switch (action) {
            case 'messages':
              return postMessage(deps, signedIn, threadId, form)
            case 'update':
              await updateThread(deps.threads, caller, threadId, threadChanges(form), deps.links, deps.clock.now())
              return seeOther(back)
            case 'stop':
              await stopQuietly(deps, caller, threadId)
              return seeOther(back)
            case 'settings':
              return saveSettings(deps, signedIn, threadId, form)
            case 'delete': {
              // Reached from the confirmation page (GET of the same path); the API's deletion, owner only.
              const { threads, engine, events, blobs, log } = deps
              const origin = pageOrigin(request, signedIn)
              await deleteThread({ threads, engine, events, blobs, log }, caller, threadId, deps.clock.now(), origin)
              return seeOther('/')
            }
            case 'continue': {
              const question = await unansweredQuestion(deps, caller, threadId)
              // The question is asked again in the new thread: refused, no new thread is made for it.
              if (question !== null) await deps.conversation.requireQuota(caller)
              const continued = await deps.conversation.continueThread(caller, threadId)
              if (question === null) return seeOther(`/threads/${continued.thread_id}`)
              // The question the failure left unanswered is asked again in the new thread, after the extract.
              await deps.conversation.send(caller, continued.thread_id, { text: question })
              return seeOther(`/threads/${continued.thread_id}#live-answer`)
            }
            default:
              throw notFound('Page')
          }
        })
        return respond(outcome, { html, set })
      },
      { session: true, trustedForm: 'upload', parse: 'none', detail: { hide: true } },
    )
    .get(
      '/threads/:threadId/delete',
      async ({ session, params, html }) => {
        const back = `/threads/${encodeURIComponent(params.threadId)}`
        if (!session) return seeOther(signInPath(`${back}/delete`))
        // A thread not found, or not the caller's, is the shared error page.
        if (!isUuid(params.threadId)) throw notFound('Thread')
        const caller = callerFromSession(session.user)
        const thread = await requireOwnedThread(deps.threads, caller, params.threadId, 'delete it')
        return html(<DeleteThreadPage viewer={viewerOf(session)} thread={thread} />)
      },
      { session: true, detail: { hide: true } },
    )
    .get(
      '/threads/:threadId/export',
      async ({ account, params, query, request }) => {
        if (!isUuid(params.threadId)) throw notFound('Thread')
        const format = query.format ?? 'json'
        if (format !== 'json' && format !== 'markdown') throw invalidRequest('Choose format=json or format=markdown.')
        const caller = callerFromSession(account.user)
        const { threads, attachments, usage, toolCalls, links, audit } = deps
        const exported = await exportThread(
          { threads, attachments, usage, toolCalls, links, audit },
          caller,
          params.threadId,
          deps.clock.now(),
          { origin: pageOrigin(request, account), format },
        )
        return exportResponse(exported, format, params.threadId)
      },
      { account: true, detail: { hide: true } },
    )
    // Conversation control, at the API's own addresses under the thread: edit (a page of its own without script),
    // regenerate (Retry on a failed answer too) and a version made the thread's path.
    .get(
      '/threads/:threadId/messages/:messageId/edit',
      async ({ session, params, html }) => {
        const { threadId, messageId } = params
        if (!session) return seeOther(signInPath(`/threads/${encodeURIComponent(threadId)}`))
        if (!isUuid(threadId) || !isUuid(messageId)) throw notFound('Message')
        return html(await editPage(deps, session, threadId, messageId))
      },
      { session: true, detail: { hide: true } },
    )
    .post('/threads/:threadId/messages/:messageId/edit', messageForm(deps, editFromForm), messageFormOptions())
    .post(
      '/threads/:threadId/messages/:messageId/regenerate',
      messageForm(deps, async (deps, session, threadId, messageId) => {
        await deps.conversation.regenerate(callerFromSession(session.user), threadId, messageId, {})
        return seeOther(`/threads/${threadId}#live-answer`)
      }),
      messageFormOptions(),
    )
    .post(
      '/threads/:threadId/messages/:messageId/activate',
      messageForm(deps, async (deps, session, threadId, messageId) => {
        await deps.conversation.activate(callerFromSession(session.user), threadId, messageId)
        return seeOther(`/threads/${threadId}#message-${messageId}`)
      }),
      messageFormOptions(),
    )
    .post('/threads/:threadId/messages/:messageId/feedback', messageForm(deps, rateFromForm), messageFormOptions())
    .get(
      '/threads/:threadId/attachments/:attachmentId',
      async ({ account, params, request }) => {
        if (!isUuid(params.threadId) || !isUuid(params.attachmentId)) throw notFound('Attachment')
        const caller = callerFromSession(account.user)
        const file = await findAttachment(deps, caller, params.threadId, params.attachmentId)
        return attachmentResponse(deps.blobs, file, params.attachmentId, request)
      },
      { account: true, detail: { hide: true } },
    )
    // The change feed for the pages' script (live.ts): the API's feed (feed.ts) with the session for credentials,
    // since an EventSource sends cookies but no Authorization header. `after` is where the page's list was read
    // (the sidebar's `data-feed-after`) or where a feed closed in a hidden tab stopped; EventSource's own
    // Last-Event-ID, on its reconnections, comes later and wins.
    .get(
      '/threads/events',
      async ({ account, headers, query, set }) => {
        const caller = callerFromSession(account.user)
        const stillSignedIn = async () => {
          const session = await findSession(deps.sessions, account.token, deps.clock.now())
          return session?.user.id === account.user.id && !session.user.mustChangePassword
        }
        const attach = await deps.feed.open(caller, headers['last-event-id'] ?? query.after, stillSignedIn)
        return sseResponse(set, deps.heartbeats, { streams: deps.streams, userId: caller.userId }, attach)
      },
      { account: true, detail: { hide: true } },
    )
    // The sidebar's list alone, as a page would show it with these filters and this open thread: what live.ts
    // swaps in when the feed tells of a change, without rendering a whole thread for it.
    .get(
      '/threads/list',
      async ({ account, query, html }) => {
        const current = query.current && isUuid(query.current) ? query.current : undefined
        return html(<ThreadList sidebar={await sidebarOf(deps, account, query, current)} />)
      },
      { account: true, detail: { hide: true } },
    )
    .get(
      '/threads/:threadId/messages/:messageId/stream',
      ({ account, params, headers, set }) => {
        if (!isUuid(params.threadId) || !isUuid(params.messageId)) throw notFound('Message')
        const caller = callerFromSession(account.user)
        return answerStream(deps, set, { caller, ...params, lastEventId: headers['last-event-id'] })
      },
      { account: true, detail: { hide: true } },
    )

/** The thread's composer: the thread page again, with the reason and the text, when the message is refused. */
async function postMessage(
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  form: PostedForm,
): Promise<FormOutcome> {
  const caller = callerFromSession(session.user)
  const text = field(form, 'text') ?? ''
  const thread = await requireOwnedThread(deps.threads, caller, threadId, 'send messages to it')
  let checked: CheckedFiles | undefined
  try {
    if (text.trim() === '') throw invalidRequest('Write a message first.')
    // Checked before any file is stored, so that a busy thread does not keep files nobody sent.
    if (thread.state !== 'ready') {
      throw conflict('The previous answer is still being written: wait for it, or stop it.')
    }
    // Before the files are checked and stored: a refused message keeps none.
    await deps.conversation.requireQuota(caller)
    checked = await checkFormFiles(deps, formFiles(form, 'attachments'))
    // Set before the message, so that its answer uses it; put back when the message is refused after all.
    const replaced = await applyChosenModel(deps, caller, threadId, field(form, 'model'))
    try {
      await sendWithFiles(deps, caller, threadId, text, checked)
    } catch (error) {
      if (replaced) await deps.models.updateSettings(caller, threadId, { model: replaced.model })
      throw error
    }
    return seeOther(`/threads/${threadId}#live-answer`)
  } catch (error) {
    if (checked) await discardCheckedFiles(checked)
    if (!(error instanceof AppError)) throw error
    const page = await threadPage(deps, session, threadId, { error: refusalInWords(error), draft: text })
    return { status: error.status, page }
  }
}

type MessageAction = (
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  messageId: string,
  form: PostedForm,
) => Promise<FormOutcome>

/** A fresh object for each route: Elysia writes the macros' hooks into the options it is given. */
const messageFormOptions = () =>
  ({ session: true, trustedForm: 'upload', parse: 'none', detail: { hide: true } }) as const

/** A form about one message of a thread (rate, edit, regenerate, activate): the shared steps, then the action. */
function messageForm(deps: ThreadPagesDeps, action: MessageAction) {
  return async (context: {
    session: PageSession | null
    params: { threadId: string; messageId: string }
    form: PostedForm
    html: (page: JSX.Element) => unknown
    set: { status?: number | string }
  }): Promise<unknown> => {
    const { threadId, messageId } = context.params
    const back = `/threads/${encodeURIComponent(threadId)}`
    const outcome = await runForm(context.session, context.form, back, async (form, signedIn) => {
      if (!isUuid(threadId) || !isUuid(messageId)) throw notFound('Message')
      return action(deps, signedIn, threadId, messageId, form)
    })
    return respond(outcome, context)
  }
}

/** A rating from an answer's thumbs, with its optional comment. */
async function rateFromForm(
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  messageId: string,
  form: PostedForm,
): Promise<FormOutcome> {
  const positive = flag(field(form, 'positive'))
  if (positive === undefined) throw invalidRequest('Choose thumbs up or thumbs down.')
  const text = field(form, 'feedback_text')?.trim() ?? ''
  if ([...text].length > feedbackTextMaxChars) {
    throw invalidRequest(`A comment may have at most ${feedbackTextMaxChars} characters.`)
  }
  const rating = { positive, feedback_text: text === '' ? undefined : text }
  const caller = callerFromSession(session.user)
  await submitFeedback(deps.threads, caller, threadId, messageId, rating, deps.clock.now())
  return seeOther(`/threads/${threadId}#message-${messageId}`)
}

/** A user message of the thread's path, for its edit page and form: the owner's, else the shared error page. */
async function editableMessage(
  deps: ThreadPagesDeps,
  caller: Caller,
  threadId: string,
  messageId: string,
): Promise<{ thread: { id: string; name: string | null }; message: ThreadsModel.message }> {
  const thread = await requireOwnedThread(deps.threads, caller, threadId, 'edit its messages')
  const message = (await allMessages(deps.threads, caller, threadId, deps.links)).find(
    (listed) => listed.id === messageId && listed.role === 'user',
  )
  if (!message) throw notFound('Message')
  return { thread, message }
}

function messageText(message: ThreadsModel.message): string {
  return message.contents.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n\n')
}

/** The edit page: the message's text in a form, or what was typed with the reason it was refused. */
async function editPage(
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  messageId: string,
  refused?: { text: string; error: string },
): Promise<JSX.Element> {
  const caller = callerFromSession(session.user)
  const { thread, message } = await editableMessage(deps, caller, threadId, messageId)
  const files = await attachmentNames(deps.attachments, attachmentIdsOf(message.contents))
  return (
    <EditMessagePage
      viewer={viewerOf(session)}
      thread={thread}
      messageId={messageId}
      text={refused?.text ?? messageText(message)}
      files={[...files.values()].map((file) => file.filename)}
      error={refused?.error}
    />
  )
}

/**
 * An edit: the new text beside the old message, with the old message's files, and its answer starts. Refused (an
 * empty text, a thread still answering), it is the edit page again with the reason and the text.
 */
async function editFromForm(
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  messageId: string,
  form: PostedForm,
): Promise<FormOutcome> {
  const caller = callerFromSession(session.user)
  const text = field(form, 'text') ?? ''
  const { message } = await editableMessage(deps, caller, threadId, messageId)
  try {
    if (text.trim() === '') throw invalidRequest('Write a message first.')
    const ids = attachmentIdsOf(message.contents)
    await deps.conversation.edit(caller, threadId, messageId, {
      text,
      attachment_ids: ids.length > 0 ? ids : undefined,
    })
    return seeOther(`/threads/${threadId}#live-answer`)
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    const page = await editPage(deps, session, threadId, messageId, { text, error: refusalInWords(error) })
    return { status: error.status, page }
  }
}

/**
 * The thread's settings from its page: the composer's model picker (`model`), its Tools menu (`tools_choice`: `all`,
 * `none`, or `some` with the `tools` checked) or the menu's instructions (`instructions`, emptied to none). Refused
 * instructions come back in the open menu with the reason and the text.
 */
async function saveSettings(
  deps: ThreadPagesDeps,
  session: PageSession,
  threadId: string,
  form: PostedForm,
): Promise<FormOutcome> {
  const caller = callerFromSession(session.user)
  const model = field(form, 'model')
  const instructions = field(form, 'instructions')
  const tools = toolsChoice(form)
  if (model === undefined && instructions === undefined && tools === undefined)
    throw invalidRequest('Nothing to change.')
  const changes = {
    ...(model !== undefined && { model: model === '' ? null : model }),
    ...(instructions !== undefined && { instructions: instructions.trim() === '' ? null : instructions.trim() }),
    ...(tools !== undefined && { tools }),
  }
  try {
    // The API's bound (UTF-16 units, as its schema counts), checked here since the page's route has no schema.
    if ((instructions?.length ?? 0) > instructionsMaxChars) {
      throw invalidRequest(`Instructions may have at most ${instructionsMaxChars.toLocaleString('en')} characters.`)
    }
    await deps.models.updateSettings(caller, threadId, changes)
  } catch (error) {
    if (!(error instanceof AppError) || instructions === undefined || error.status !== 400) throw error
    const page = await threadPage(deps, session, threadId, {
      instructionsError: refusalInWords(error),
      instructionsDraft: instructions,
    })
    return { status: error.status, page }
  }
  return seeOther(`/threads/${threadId}`)
}

/** The Tools menu's choice: null for every tool the organization has on, else the tools checked (none: []). */
function toolsChoice(form: PostedForm): string[] | null | undefined {
  const choice = field(form, 'tools_choice')
  if (choice === undefined) return undefined
  if (choice === 'all') return null
  if (choice === 'none') return []
  if (choice !== 'some') throw invalidRequest('Choose all tools, none, or some.')
  // The settings' own rules bound the list and check each name.
  return [...new Set(fieldValues(form, 'tools'))]
}

/**
 * The composer's model, posted with a message: the thread's model from this answer on when it is another than the
 * one in use (with the script the picker has saved it already, and this changes nothing). Returns the setting it
 * replaced, null when it changed nothing.
 */
async function applyChosenModel(
  deps: ThreadPagesDeps,
  caller: Caller,
  threadId: string,
  chosen: string | undefined,
): Promise<{ model: string | null } | null> {
  if (!chosen) return null
  const [settings, offered] = await Promise.all([deps.models.settings(caller, threadId), deps.models.offered(caller)])
  const inUse = offered.some((model) => model.id === settings.model)
    ? settings.model
    : offered.find((model) => model.default)?.id
  if (chosen === inUse) return null
  await deps.models.updateSettings(caller, threadId, { model: chosen })
  return { model: settings.model }
}

/** The new-thread form: the list again, with the reason and what was typed, when the thread is refused. */
async function startFromForm(deps: ThreadPagesDeps, session: PageSession, form: PostedForm): Promise<FormOutcome> {
  const text = field(form, 'text') ?? ''
  const draft = { name: field(form, 'name') ?? '', text, isPrivate: field(form, 'is_private') === 'true' }
  const caller = callerFromSession(session.user)
  const model = field(form, 'model')
  let checked: CheckedFiles | undefined
  try {
    if (text.trim() === '') throw invalidRequest('Write a message to start the thread.')
    if ([...draft.name].length > threadNameMaxLength) {
      throw invalidRequest(`A name may have at most ${threadNameMaxLength} characters.`)
    }
    // Checked before the thread exists, like its files; the default needs no setting.
    const offered = model ? await deps.models.offered(caller) : []
    const chosen = offered.find((offer) => offer.id === model)
    if (model && !chosen) throw invalidRequest('Choose one of the models offered.')
    // Before the thread is made (the send below checks again): a refused start leaves nothing behind.
    await deps.conversation.requireQuota(caller)
    // Files are checked before the thread exists, so a refused file leaves nothing behind.
    checked = await checkFormFiles(deps, formFiles(form, 'attachments'))
    const name = draft.name.trim() === '' ? undefined : draft.name.trim()
    const created = await deps.conversation.start(caller, { name, is_private: draft.isPrivate })
    // The new thread's model, set before its first message so that the first answer already uses it.
    if (chosen && !chosen.default) await deps.models.updateSettings(caller, created.thread_id, { model: chosen.id })
    await sendWithFiles(deps, caller, created.thread_id, text, checked)
    return seeOther(`/threads/${created.thread_id}#live-answer`)
  } catch (error) {
    if (checked) await discardCheckedFiles(checked)
    if (!(error instanceof AppError)) throw error
    const page = await newConversationPage(deps, session, {}, { error: refusalInWords(error), draft, model })
    return { status: error.status, page }
  }
}

function threadChanges(form: PostedForm): ThreadsModel.updateThreadBody {
  const name = field(form, 'name')
  const changes: ThreadsModel.updateThreadBody = {
    ...(name !== undefined && { name: name.trim() === '' ? null : name.trim() }),
    ...(flag(field(form, 'archived')) !== undefined && { archived: flag(field(form, 'archived')) }),
    ...(flag(field(form, 'is_private')) !== undefined && { is_private: flag(field(form, 'is_private')) }),
  }
  if (Object.keys(changes).length === 0) throw invalidRequest('Nothing to change.')
  if (name !== undefined && [...name.trim()].length > threadNameMaxLength) {
    throw invalidRequest(`A name may have at most ${threadNameMaxLength} characters.`)
  }
  return changes
}

/** The text of the thread's last message when it is the person's and went unanswered; files are not carried. */
async function unansweredQuestion(deps: ThreadPagesDeps, caller: Caller, threadId: string): Promise<string | null> {
  const last = (await allMessages(deps.threads, caller, threadId, deps.links)).at(-1)
  if (last?.role !== 'user') return null
  const text = last.contents
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n\n')
    .trim()
  return text === '' ? null : text
}

/** Stop is a button that may race the answer's end: finding nothing left to stop is success too. */
async function stopQuietly(deps: ThreadPagesDeps, caller: Caller, threadId: string): Promise<void> {
  try {
    await stopThread(deps.threads, deps.engine, caller, threadId, deps.links)
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 409) throw error
  }
}
