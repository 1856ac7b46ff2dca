// Threads, messages and feedback routes: HTTP in, HTTP out; behaviour lives in service.ts.
import { Elysia, t } from 'elysia'
import { auth } from '../auth'
import { AuthModel } from '../auth/model'
import type { Db } from '../db/client'
import type { GenerationEngine } from '../generation/service'
import type { Responses } from '../shared/responses'
import type { Clock } from '../shared/time'
import { ThreadsModel } from './model'
import { createThread, getThread, type Links, listMessages, listThreads, sendMessage, submitFeedback } from './service'

export interface ThreadsDeps {
  db: Db
  clock: Clock
  engine: GenerationEngine
  links: Links
  responses: Responses
}

const error = AuthModel.error
const readErrors = { 400: error, 401: error, 403: AuthModel.scopeError, 404: error }

export const threadRoutes = (deps: ThreadsDeps) =>
  new Elysia({ name: 'threads', prefix: '/api/v1/threads' })
    .use(auth(deps))
    .get('', ({ caller, query }) => listThreads(deps.db, caller, query, deps.links), {
      scope: 'threads:read',
      query: ThreadsModel.listThreadsQuery,
      response: deps.responses({ 200: ThreadsModel.threadList, ...readErrors }),
      detail: {
        summary: 'List threads visible to the caller',
        tags: ['Threads'],
        description:
          'Keyset pagination: pass the previous page’s `last_id` as `after`, with the same `sort_by`, ' +
          '`sort_dir` and filters. `limit` above 200 is clamped to 200. `q` matches threads whose name or ' +
          'any message contains every word of `q`; results keep the requested sort order. A token with only ' +
          '`threads:read:own` lists only its user’s own threads.',
      },
    })
    .post(
      '',
      ({ caller, body, status }) => {
        const created = createThread(deps.db, caller, body, deps.clock.now())
        if (created.message_id) deps.engine.enqueue(created.message_id, created.thread_id)
        return status(201, created)
      },
      {
        scope: 'threads:write',
        body: ThreadsModel.createThreadBody,
        response: deps.responses({
          201: ThreadsModel.createThreadResponse,
          400: error,
          401: error,
          403: AuthModel.scopeError,
        }),
        detail: {
          summary: 'Create a thread',
          tags: ['Threads'],
          description:
            'With `text`, the thread starts in `waiting` and an answer is generated at once. Without it, the ' +
            'thread is created `ready` and empty, and `message_id` is null. Threadhouse never answers 409 here: ' +
            'every valid request creates a new thread.',
        },
      },
    )
    .get('/:threadId', ({ caller, params }) => getThread(deps.db, caller, params.threadId, deps.links), {
      scope: 'threads:read',
      params: ThreadsModel.threadParams,
      response: deps.responses({ 200: ThreadsModel.thread, ...readErrors }),
      detail: { summary: 'Get a thread', tags: ['Threads'], description: '404 for threads the caller cannot see.' },
    })
    .get(
      '/:threadId/messages',
      ({ caller, params, query }) => listMessages(deps.db, caller, params.threadId, query, deps.links),
      {
        scope: 'threads:read',
        params: ThreadsModel.threadParams,
        query: ThreadsModel.listMessagesQuery,
        response: deps.responses({ 200: ThreadsModel.messageList, ...readErrors }),
        detail: { summary: 'List the active messages of a thread, oldest first', tags: ['Messages'] },
      },
    )
    .post(
      '/:threadId/messages',
      ({ caller, params, body, status }) => {
        const sent = sendMessage(deps.db, caller, params.threadId, body, deps.clock.now())
        deps.engine.enqueue(sent.message_id, params.threadId)
        return status(201, sent)
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.threadParams,
        body: ThreadsModel.sendMessageBody,
        response: deps.responses({
          201: ThreadsModel.sendMessageResponse,
          400: error,
          401: error,
          403: t.Union([AuthModel.scopeError, error]),
          404: error,
          409: error,
        }),
        detail: {
          summary: 'Send a user message and start the AI response',
          tags: ['Messages'],
          description:
            'The thread must be `ready`, otherwise 409. Only the thread’s owner may send (403 `forbidden` for ' +
            'other members who can see it).',
        },
      },
    )
    .post(
      '/:threadId/messages/:messageId/feedback',
      ({ caller, params, body, set }) => {
        submitFeedback(deps.db, caller, params.threadId, params.messageId, body, deps.clock.now())
        set.status = 204
      },
      {
        scope: 'threads:write',
        params: ThreadsModel.messageParams,
        body: ThreadsModel.feedbackBody,
        response: deps.responses({ 400: error, 401: error, 403: AuthModel.scopeError, 404: error }),
        detail: {
          summary: 'Rate an assistant message (204, no content)',
          tags: ['Messages'],
          description:
            'One rating per user per message; a repeat replaces it. Only assistant messages of threads the ' +
            'caller can see can be rated (400 for other messages).',
        },
      },
    )
