// Threads, messages and feedback routes: HTTP in, HTTP out; behaviour lives in the services beside this file.

import { Elysia, t } from 'elysia'
import { attachmentsPerMessage } from '../attachments/limits'
import type { AttachmentRepository } from '../attachments/repository'
import { type AuthDeps, auth, stillAdmitted } from '../auth'
import { callerOrigin } from '../auth/callers'
import { AuthModel } from '../auth/model'
import type { AnswerEngine } from '../generation/service'
import type { ToolCallRepository } from '../generation/tool-calls.repository'
import type { IdempotencyRepository } from '../idempotency/repository'
import { idempotencyDeps, idempotencyKeyParameter, idempotencyNote, onceForJson } from '../idempotency/service'
import type { AuditLog } from '../shared/audit'
import { jsonBodies, jsonBody, optionalJsonBody } from '../shared/body'
import type { DomainEvents } from '../shared/events'
import { noContent, type Responses } from '../shared/responses'
import { type Heartbeats, type OpenStreams, sseResponse } from '../shared/streams/sse'
import { dayMs } from '../shared/time'
import type { BlobStore } from '../storage/blobs'
import type { UsageRepository } from '../usage/repository'
import { quotedCharacters, quotedMessages } from './continuation'
import type { Conversation } from './conversation'
import { exportHeaders, exportMarkdown, exportThread } from './export'
import { type ThreadFeed, tombstoneKeepMs } from './feed'
import { submitFeedback } from './feedback'
import type { Links } from './links'
import { listThreads, searchThreads } from './listing'
import { listMessages } from './messages'
import { ThreadsModel } from './model'
import type { ThreadRepository } from './repository'
import { deleteThread, getThread, stopThread, updateThread } from './threads'
import { listVersions, messageDetails } from './versions'

export interface ThreadsDeps extends AuthDeps {
  threads: ThreadRepository
  /** A deleted thread's files go with it. */
  attachments: AttachmentRepository
  idempotency: IdempotencyRepository
  /** What answers used, shown in a message's details and the export (usage/). */
  usage: UsageRepository
  /** The tools answers called, shown in a message's details and the export (generation/). */
  toolCalls: ToolCallRepository
  /** Stops answers (sending goes through `conversation`). */
  engine: AnswerEngine
  conversation: Conversation
  events: DomainEvents
  blobs: BlobStore
  links: Links
  responses: Responses
  /** Where exports are recorded (they write nothing else); deletions are recorded by the thread repository. */
  audit: AuditLog
}

const error = AuthModel.error
const readErrors = { 400: error, 401: error, 403: AuthModel.scopeError, 404: error }
const ownerErrors = { ...readErrors, 403: t.Union([AuthModel.scopeError, error]) }

/** The 429 of the requests that start an answer (`detail.responses`): a monthly budget (src/quotas/) or a rate limit. */
const answerStartLimits = {
  429: {
    description:
      'Over a monthly budget (`quota_exceeded`, an addition to the specification): the organization’s or the ' +
      'person’s budget in tokens or cost for this calendar month (UTC) is used up. Nothing is stored and the ' +
      'thread keeps its state; `message` names the budget and when answers can start again. `Retry-After` is ' +
      'the seconds until the next month starts (00:00 UTC on its first day). Or over a rate limit ' +
      '(`rate_limited`): retry after the seconds in `Retry-After`.',
    headers: {
      'Retry-After': {
        description: 'Seconds to wait before retrying: for `quota_exceeded`, until the next month starts (UTC).',
        schema: { type: 'integer' as const, minimum: 1 },
      },
    },
    content: { 'application/json': { schema: AuthModel.error } },
  },
}

export const threadRoutes = (deps: ThreadsDeps) =>
  new Elysia({ name: 'threads', prefix: '/api/v1/threads' })
    .use(auth(deps))
    .use(jsonBodies)
    .get('', ({ caller, query }) => listThreads(deps.threads, caller, query, deps.links), {
      scope: 'threads:read',
      query: ThreadsModel.listThreadsQuery,
      response: deps.responses({ 200: ThreadsModel.threadList, ...readErrors }),
      detail: {
        operationId: 'listThreads',
        summary: 'List threads visible to the caller',
        tags: ['Threads'],
        description:
          'Keyset pagination: pass the previous page’s `last_id` as `after`, with the same `sort_by`, ' +
          '`sort_dir` and filters. `limit` above 200 is clamped to 200. `q` matches threads whose name, active ' +
          'messages and attached files together hold every word of `q`: a word of 2+ characters also finds the ' +
          'words starting with it, double quotes ask for a word or phrase exactly, case and accents fold, and ' +
          'Chinese or Japanese is found by any run of 2+ characters (the first 16 words count; a blank `q` is no ' +
          'filter); results keep the requested sort order. A token with only ' +
          '`threads:read:own` lists only its user’s own threads.',
      },
    })
    .post(
      '',
      async ({ caller, body, request, status }) => {
        const outcome = await onceForJson(idempotencyDeps(deps), caller, request, 201, async () => {
          return await deps.conversation.start(caller, body)
        })
        return 'replay' in outcome ? outcome.replay : status(201, outcome.value)
      },
      {
        scope: 'threads:write',
        ...jsonBody(ThreadsModel.createThreadBody),
        response: deps.responses({
          201: ThreadsModel.createThreadResponse,
          400: error,
          401: error,
          403: AuthModel.scopeError,
          409: error,
          422: error,
        }),
        detail: {
          operationId: 'createThread',
          responses: answerStartLimits,
          summary: 'Create a thread',
          tags: ['Threads'],
          description:
            'With `text`, the thread starts in `waiting` and an answer is generated at once. Without it, the ' +
            'thread is created `ready` and empty, and `message_id` is null. Threadhouse never answers 409 here: ' +
            'every valid request creates a new thread (409 only for a repeated `Idempotency-Key` whose first ' +
            'request is still running). The body must be a JSON object: `{}` at least.' +
            idempotencyNote,
          parameters: [idempotencyKeyParameter],
        },
      },
    )
    .get('/:threadId', ({ caller, params }) => getThread(deps.threads, caller, params.threadId, deps.links), {
      scope: 'threads:read',
      params: ThreadsModel.threadParams,
      response: deps.responses({ 200: ThreadsModel.thread, ...readErrors }),
      detail: {
        operationId: 'getThread',
        summary: 'Get a thread',
        tags: ['Threads'],
        description: '404 for threads the caller cannot see.',
      },
    })
    .patch(
      '/:threadId',
      ({ caller, params, body }) =>
        updateThread(deps.threads, caller, params.threadId, body, deps.links, deps.clock.now()),
      {
        scope: 'threads:write',
        params: ThreadsModel.threadParams,
        ...jsonBody(ThreadsModel.updateThreadBody),
        response: deps.responses({ 200: ThreadsModel.thread, ...ownerErrors }),
        detail: {
          operationId: 'updateThread',
          summary: 'Rename, archive or unarchive a thread, or change its privacy',
          tags: ['Threads'],
          description:
            'Send any of `name` (a string, or null to remove it), `archived` and `is_private`; at least one. Only ' +
            'the thread’s owner may change it (403 `forbidden` for other members who can see it, 404 for threads ' +
            'the caller cannot see). Every change moves `updated_at`. Answers the updated thread. Archiving only ' +
            'files a thread away: it still takes messages, and an answer does not unarchive it.',
        },
      },
    )
    .get(
      '/:threadId/export',
      async ({ caller, params, query, request, set }) => {
        const { threads, attachments, usage, toolCalls, links, audit } = deps
        const format = query.format ?? 'json'
        const exported = await exportThread(
          { threads, attachments, usage, toolCalls, links, audit },
          caller,
          params.threadId,
          deps.clock.now(),
          { origin: callerOrigin(request, caller), format },
        )
        Object.assign(set.headers, exportHeaders(format, params.threadId))
        return format === 'markdown' ? exportMarkdown(exported) : exported
      },
      {
        scope: 'threads:read',
        params: ThreadsModel.threadParams,
        query: ThreadsModel.exportQuery,
        response: deps.responses({ 200: t.Union([ThreadsModel.threadExport, t.String()]), ...readErrors }),
        detail: {
          operationId: 'exportThread',
          summary: 'Export a thread as JSON or Markdown',
          tags: ['Threads'],
          description:
            'For anyone who can read the thread (404 otherwise). `format=json` (the default) answers the thread, ' +
            'every message it lists (oldest first, as `GET …/messages` gives them) and each attached file’s ' +
            'name, type, size and download path: what a program needs to rebuild it. `format=markdown` answers ' +
            '`text/markdown` for people: a heading per message with its role and time, its text as written, ' +
            'files and choices named, and a line per tool call ("Used search_docs on docs · 320 ms"). In JSON ' +
            'each assistant message carries its `usage` (as in its details; null when none was recorded) and its ' +
            '`tool_calls` (as in its details). Both come with `Content-Disposition: attachment`. An addition to ' +
            'the specification.',
        },
      },
    )
    .delete(
      '/:threadId',
      async ({ caller, params, request, set }) => {
        const { threads, engine, events, blobs, log } = deps
        const origin = callerOrigin(request, caller)
        await deleteThread({ threads, engine, events, blobs, log }, caller, params.threadId, deps.clock.now(), origin)
        set.status = 204
      },
      {
        scope: 'threads:write',
        parse: 'none', // no body: whatever is sent is left unread
        params: ThreadsModel.threadParams,
        response: deps.responses(ownerErrors),
        detail: {
          operationId: 'deleteThread',
          summary: 'Delete a thread for good (204, no content)',
          tags: ['Threads'],
          description:
            'Owner only (403 `forbidden` for other members who can see it, 404 for threads the caller cannot ' +
            'see, and for one already deleted). An answer running or queued is stopped first; then the thread, ' +
            'its messages, feedback, attachments (their files too), search entry and pending work are removed ' +
            'together, with its queued webhook deliveries. Its stream ends with an `error` event; change feeds get ' +
            '`thread.deleted`; its IDs answer 404 from then on. An addition to the specification, which has no delete.',
          responses: noContent('Deleted; no content'),
        },
      },
    )
    .post(
      '/:threadId/stop',
      async ({ caller, params, status }) =>
        status(202, await stopThread(deps.threads, deps.engine, caller, params.threadId, deps.links)),
      {
        scope: 'threads:write',
        parse: 'none', // no body: whatever is sent is left unread
        params: ThreadsModel.threadParams,
        response: deps.responses({ 202: ThreadsModel.thread, ...ownerErrors, 409: error }),
        detail: {
          operationId: 'stopThread',
          summary: 'Stop the answer a thread is producing',
          tags: ['Threads'],
          description:
            'Owner only. A queued answer is dropped at once (the thread is `ready` again); a running one is ' +
            'stopped: the thread is `interrupted` until the generator has let go, then `ready`, with the partial ' +
            'answer kept as an assistant message. The stream of that answer ends with an `error` event ("The ' +
            'response was stopped") and its poll answers `status: interrupted`. 409 when nothing is running or ' +
            'queued. Answers 202 with the thread as it is right after the request.',
        },
      },
    )
    .post(
      '/:threadId/continue',
      async ({ caller, params, status }) => {
        return status(201, await deps.conversation.continueThread(caller, params.threadId))
      },
      {
        scope: 'threads:write',
        parse: 'none', // no body: whatever is sent is left unread
        params: ThreadsModel.threadParams,
        response: deps.responses({ 201: ThreadsModel.continueThreadResponse, ...readErrors, 409: error }),
        detail: {
          operationId: 'continueThread',
          summary: 'Continue a thread in error in a new thread',
          tags: ['Threads'],
          description:
            'The way on from `error`: creates a new thread for the caller (any member who can see the old ' +
            'one), with the same privacy, the old name followed by " (continued)", and one `summary` message: ' +
            `a deterministic extract quoting the old thread's last ${quotedMessages} messages (each shortened ` +
            `to ${quotedCharacters} characters, files named, not carried over) and linking to it. It is not written ` +
            'by a model. ' +
            'The new thread is `ready`; no answer starts until a message is sent. 409 unless the old thread is in ' +
            '`error`. Needs `threads:write`, and `threads:read` to continue another member’s thread.',
        },
      },
    )
    .get(
      '/:threadId/messages',
      ({ caller, params, query }) => listMessages(deps.threads, caller, params.threadId, query, deps.links),
      {
        scope: 'threads:read',
        params: ThreadsModel.threadParams,
        query: ThreadsModel.listMessagesQuery,
        response: deps.responses({ 200: ThreadsModel.messageList, ...readErrors }),
        detail: {
          operationId: 'listMessages',
          summary: 'List the active messages of a thread, oldest first',
          tags: ['Messages'],
          description:
            'Ordered by `created_at`, then ID. A new message is never dated before its thread’s newest one, ' +
            'even when the server clock steps back, so the order is the order they were written in.',
        },
      },
    )
    .post(
      '/:threadId/messages',
      async ({ caller, params, body, request, status }) => {
        const outcome = await onceForJson(idempotencyDeps(deps), caller, request, 201, async () => {
          return await deps.conversation.send(caller, params.threadId, body)
        })
        return 'replay' in outcome ? outcome.replay : status(201, outcome.value)
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.threadParams,
        ...jsonBody(ThreadsModel.sendMessageBody),
        response: deps.responses({
          201: ThreadsModel.sendMessageResponse,
          400: error,
          401: error,
          403: t.Union([AuthModel.scopeError, error]),
          404: error,
          409: error,
          422: error,
        }),
        detail: {
          operationId: 'sendMessage',
          responses: answerStartLimits,
          summary: 'Send a user message and start the AI response',
          parameters: [idempotencyKeyParameter],
          tags: ['Messages'],
          description:
            'The thread must be `ready`, otherwise 409. Only the thread’s owner may send (403 `forbidden` for ' +
            `other members who can see it). \`attachment_ids\` (at most ${attachmentsPerMessage}) name files ` +
            'uploaded to this same thread, possibly by several uploads; the message’s `contents` is the text ' +
            'block, then one `image` or `document` block (PDFs and text files) per ID, in the order given. An ' +
            'unknown ID, another thread’s attachment or an ID listed twice gives 400 `invalid_request` naming the ' +
            'ID. A file may be attached to any number of messages.' +
            idempotencyNote,
        },
      },
    )
    .post(
      '/:threadId/messages/:messageId/regenerate',
      async ({ caller, params, body, request, status }) => {
        const outcome = await onceForJson(idempotencyDeps(deps), caller, request, 201, async () => {
          return await deps.conversation.regenerate(caller, params.threadId, params.messageId, body)
        })
        return 'replay' in outcome ? outcome.replay : status(201, outcome.value)
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.messageParams,
        ...optionalJsonBody(ThreadsModel.regenerateBody),
        response: deps.responses({
          201: ThreadsModel.regenerateResponse,
          ...ownerErrors,
          409: error,
          422: error,
        }),
        detail: {
          operationId: 'regenerateResponse',
          responses: answerStartLimits,
          summary: 'Generate the answer to a user message again',
          parameters: [idempotencyKeyParameter],
          tags: ['Messages'],
          description:
            'An addition to the specification. `message_id` must be a user message on the thread’s active path ' +
            '(one `GET …/messages` lists; 400 otherwise, 404 for an unknown one). A new answer to it is generated ' +
            'and becomes the active one: the earlier answer stays as a version (`GET …/versions` of it), and every ' +
            'later message leaves the active path. The thread moves to `waiting`, then on as after a send; the poll ' +
            'and the stream of `message_id` follow the new answer. Allowed when the thread is `ready` or `error`, ' +
            'otherwise 409: regenerating the failed answer is how a thread in `error` goes on (an extension of the ' +
            'state machine; sending a message to a thread in `error` stays 409). Of racing writes to the thread ' +
            '(sends, edits, regenerations) exactly one wins; the others get 409. Owner only (403 `forbidden` for ' +
            'other members). The optional body `{"model"}` names a model for this answer only (400 when the ' +
            'organization may not use it). Moves `updated_at`, so change feeds get `thread.updated`.' +
            idempotencyNote,
        },
      },
    )
    .post(
      '/:threadId/messages/:messageId/edit',
      async ({ caller, params, body, request, status }) => {
        const outcome = await onceForJson(idempotencyDeps(deps), caller, request, 201, async () => {
          return await deps.conversation.edit(caller, params.threadId, params.messageId, body)
        })
        return 'replay' in outcome ? outcome.replay : status(201, outcome.value)
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.messageParams,
        ...jsonBody(ThreadsModel.sendMessageBody),
        response: deps.responses({
          201: ThreadsModel.editResponse,
          ...ownerErrors,
          409: error,
          422: error,
        }),
        detail: {
          operationId: 'editMessage',
          responses: answerStartLimits,
          summary: 'Edit a user message: its new version is sent and answered',
          parameters: [idempotencyKeyParameter],
          tags: ['Messages'],
          description:
            'An addition to the specification. `message_id` must be a user message on the thread’s active path ' +
            '(400 otherwise, 404 for an unknown one). The body follows the send’s rules (`text`, and ' +
            '`attachment_ids` naming files of this thread). A new user message with the same parent becomes ' +
            'active in its place (the edited one stays as a version), every later message leaves the active path, ' +
            'and its answer starts: answers 201 with the new message’s ID, whose poll and stream give that answer. ' +
            'Allowed when the thread is `ready` or `error`, otherwise 409; of racing writes to the thread exactly ' +
            'one wins. Owner only. Moves `updated_at`.' +
            idempotencyNote,
        },
      },
    )
    .get(
      '/:threadId/messages/:messageId/versions',
      ({ caller, params }) => listVersions(deps.threads, caller, params.threadId, params.messageId, deps.links),
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        response: deps.responses({ 200: ThreadsModel.versionList, ...readErrors }),
        detail: {
          operationId: 'listMessageVersions',
          summary: 'List the versions of a message',
          tags: ['Messages'],
          description:
            'An addition to the specification. The messages that share the message’s parent and role (its ' +
            'edits, or the answers to the same user message), oldest first, all on one page, as Message objects; ' +
            '`active_id` is the one on the thread’s active path, or null when the message’s branch is not shown. ' +
            'A summary has no versions but itself. For anyone who can read the thread.',
        },
      },
    )
    .post(
      '/:threadId/messages/:messageId/activate',
      async ({ caller, params, set }) => {
        await deps.conversation.activate(caller, params.threadId, params.messageId)
        set.status = 204
      },
      {
        scope: 'threads:write',
        parse: 'none', // no body: whatever is sent is left unread
        params: ThreadsModel.messageParams,
        response: deps.responses({ ...ownerErrors, 409: error }),
        detail: {
          operationId: 'activateMessageVersion',
          summary: 'Show a version of a message: its branch becomes the active path (204, no content)',
          tags: ['Messages'],
          description:
            'An addition to the specification. The version (a user or assistant message) and, after it, each ' +
            'time the newest message that follows it become the thread’s active path in place of the version ' +
            'shown before and what followed it; `GET …/messages` lists that path from then on, and the poll and ' +
            'stream of a user message give its answer on it. The thread is then `error` when the path ends with ' +
            'an answer that failed (or a user message whose answer failed), else `ready`. Activating the version ' +
            'already shown changes nothing. 409 while an answer runs (the thread is not `ready` or `error`); 400 ' +
            'for a summary, for a message none of whose versions is shown, and for a version older than the ' +
            'summary that replaced the start of the thread. Owner only. Moves `updated_at`.',
          responses: noContent('Activated; no content'),
        },
      },
    )
    .get(
      '/:threadId/messages/:messageId/details',
      ({ caller, params }) => messageDetails(deps, caller, params.threadId, params.messageId),
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        response: deps.responses({ 200: ThreadsModel.messageDetails, ...readErrors }),
        detail: {
          operationId: 'getMessageDetails',
          summary: 'Where a message stands in the thread’s tree',
          tags: ['Messages'],
          description:
            'An addition to the specification: the message’s `parent_id`, `role`, the `model` that wrote an ' +
            'answer (null for other messages and for answers from before models were recorded), which `version` ' +
            'it is of how many `versions` (oldest first, from 1), and whether it is `active` (on the listed path); ' +
            'for an assistant message, `usage`: its input, output and cached input tokens (`estimated` when the ' +
            'provider reported none), its `cost` in `currency` from the model’s price (null without one), and ' +
            '`first_token_ms` and `total_ms`; null when none was recorded; and `tool_calls`: each call it made to ' +
            'a tool of the organization’s MCP servers, in order, with its arguments, outcome, result (as the model ' +
            'read it, cut at TOOLS_RESULT_MAX_CHARS), error, duration and who allowed or denied it. For anyone ' +
            'who can read the thread.',
        },
      },
    )
    .post(
      '/:threadId/messages/:messageId/feedback',
      async ({ caller, params, body, set }) => {
        await submitFeedback(deps.threads, caller, params.threadId, params.messageId, body, deps.clock.now())
        set.status = 204
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.messageParams,
        ...jsonBody(ThreadsModel.feedbackBody),
        response: deps.responses(readErrors),
        detail: {
          operationId: 'rateMessage',
          summary: 'Rate an assistant message (204, no content)',
          tags: ['Messages'],
          responses: noContent('Rated; no content'),
          description:
            'One rating per user per message; a repeat replaces it. Only assistant messages of threads the ' +
            'caller can see can be rated (400 for other messages).',
        },
      },
    )

export interface FeedRouteDeps extends AuthDeps {
  feed: ThreadFeed
  heartbeats: Heartbeats
  streams: OpenStreams
  responses: Responses
}

const keptDays = tombstoneKeepMs / dayMs

/** The thread change feed: an addition to the specification (feed.ts). */
export const threadFeedRoutes = (deps: FeedRouteDeps) =>
  new Elysia({ name: 'thread-feed', prefix: '/api/v1/threads' }).use(auth(deps)).get(
    '/events',
    async ({ caller, headers, request, set }) => {
      const allowed = stillAdmitted(deps, request, caller, 'threads:read')
      const attach = await deps.feed.open(caller, headers['last-event-id'], allowed)
      return sseResponse(set, deps.heartbeats, { streams: deps.streams, userId: caller.userId }, attach)
    },
    {
      scope: 'threads:read',
      response: deps.responses({ 400: error, 401: error, 403: AuthModel.scopeError }),
      detail: {
        operationId: 'streamThreadEvents',
        summary: 'Stream changes to the threads the caller can see, as server-sent events',
        tags: ['Threads'],
        description:
          'An addition to the specification. Events, each with `id:`, `event:` and `data:` lines: ' +
          '`thread.created` and `thread.updated` carry the thread object as `GET /api/v1/threads/{id}` returns it ' +
          '(a rename, a state change, archiving, a message: any write), `thread.deleted` and `thread.hidden` carry ' +
          '`{id}` (hidden: another person’s thread made private, which leaves the caller’s list). A thread shows as ' +
          'it is when the event is sent, so several writes in a row may arrive as one event with the latest state. ' +
          '`ready` `{}` says the stream has sent everything up to now; `reset` `{}` says the client must reload its ' +
          'list, because `Last-Event-ID` was older than the ' +
          `${keptDays} days deletions are remembered for, or not an event ID of this server. ` +
          'Event ids are places in one order of every change: reconnecting with `Last-Event-ID` resumes exactly ' +
          'after that event; without it the stream starts at the present, with no history. Changes reach open ' +
          'streams within about a second. Archived threads are included (with `archived: true`). A token with ' +
          'only `threads:read:own` sees only its user’s own threads. Every 10 s an open stream checks its token ' +
          'again: once it is revoked, expired or no longer allowed (a removed member, a narrower grant), the ' +
          'stream ends with an `error` event. Heartbeats, stream limits, the closing of a stream that falls too ' +
          'far behind (resume with `Last-Event-ID`) and the Authorization header work as for answer streams.',
        parameters: [
          {
            name: 'last-event-id',
            in: 'header',
            required: false,
            description: 'The id of the last event received: the stream resumes right after it.',
            schema: { type: 'string' },
          },
        ],
        responses: {
          200: {
            description:
              'Server-sent events: `ready`, `reset`, `thread.created`, `thread.updated`, ' +
              '`thread.deleted`, `thread.hidden`.',
            content: {
              'text/event-stream': { schema: { type: 'string', description: 'Events as described above, UTF-8.' } },
            },
          },
          429: {
            description:
              'Too many open streams (`too_many_streams`, per person or in all; close one first), or over the ' +
              'request rate limit (`rate_limited`). Retry after the seconds in `Retry-After`.',
            headers: {
              'Retry-After': {
                description: 'Seconds to wait before retrying.',
                schema: { type: 'integer', minimum: 1 },
              },
            },
            content: { 'application/json': { schema: AuthModel.error } },
          },
        },
      },
    },
  )

export interface SearchRouteDeps extends AuthDeps {
  threads: ThreadRepository
  links: Links
  responses: Responses
}

/** Search with each thread's best passage (listing.ts, searchThreads): an addition to the specification. */
export const searchRoutes = (deps: SearchRouteDeps) =>
  new Elysia({ name: 'thread-search', prefix: '/api/v1/search' })
    .use(auth(deps))
    .get('', ({ caller, query }) => searchThreads(deps.threads, caller, query, deps.links), {
      scope: 'threads:read',
      query: ThreadsModel.searchQuery,
      response: deps.responses({ 200: ThreadsModel.searchResults, ...readErrors }),
      detail: {
        operationId: 'searchThreads',
        summary: 'Search threads, with the passage each was found by',
        tags: ['Threads'],
        description:
          'An addition to the specification. The threads `GET /api/v1/threads?q=…` lists, with the same filters, ' +
          'order, `limit` and `after` (pass the previous page’s `last_id`, a thread ID), each with its best ' +
          'passage: `snippet`, up to 200 characters from the newest active message holding the most of ' +
          '`q`’s words (or from a file those messages attach: its text, then its name; or from the thread’s ' +
          'name), and `highlights`, where the words matched in it. `message_id` opens the thread at that message ' +
          '(the message’s `app_url` is the thread’s with `#message-{id}`). Passages are read from each thread’s ' +
          'newest 50 active messages (20,000 characters each, 50,000 in all) and the first 20 files they attach: a ' +
          'thread found by older text shows another passage, marked nowhere. A `q` without a word finds ' +
          'nothing. A token with only `threads:read:own` finds only its user’s own threads.',
      },
    })
