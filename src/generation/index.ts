// Reading an answer: poll (GET …/response) or stream it as server-sent events (GET …/response/stream).
import { eq, sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { auth } from '../auth'
import { AuthModel } from '../auth/model'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { notFound } from '../shared/errors'
import { documented, type Responses } from '../shared/responses'
import type { Clock } from '../shared/time'
import { ThreadsModel } from '../threads/model'
import { type Links, listReplies, requireMessage } from '../threads/service'
import { generations } from './generations.table'
import { GenerationModel } from './model'
import type { GenerationEngine } from './service'
import { type Heartbeats, type ResponseSet, sseResponse } from './sse'

export interface ResponseDeps {
  db: Db
  clock: Clock
  publicUrl: string
  engine: GenerationEngine
  links: Links
  heartbeats: Heartbeats
  responses: Responses
}

function generationOf(db: Db, messageId: string) {
  const row = prepared(db, 'generation:byMessage', () =>
    db
      .select({ status: generations.status, error: generations.error })
      .from(generations)
      .where(eq(generations.messageId, sql.placeholder('messageId')))
      .prepare(),
  ).get({ messageId })
  if (!row) throw notFound('Response')
  return row
}

/** `Last-Event-ID` is an offset into the answer's text; anything else means "from the start". */
function resumeOffset(header: string | undefined): number {
  const offset = Number(header)
  return Number.isSafeInteger(offset) && offset > 0 ? offset : 0
}

/**
 * The answer to a user message as server-sent events, live from the hub or replayed from the database once it
 * has ended; 404 when the message asked for no answer. The caller has checked that the message may be read.
 * Shared by the API and the web pages; `set` is the route's, whose headers the response takes over (see sseResponse).
 */
export function answerStream(
  deps: Pick<ResponseDeps, 'db' | 'engine' | 'links' | 'heartbeats'>,
  set: ResponseSet,
  messageId: string,
  lastEventId: string | undefined,
): Response {
  generationOf(deps.db, messageId) // 404 before any stream starts
  const from = resumeOffset(lastEventId)
  return sseResponse(set, deps.heartbeats, (stream) => {
    const live = deps.engine.hub.subscribe(messageId, from, stream)
    if (live) return live
    // The answer has ended: replay it from the database.
    const settled = generationOf(deps.db, messageId)
    const text = listReplies(deps.db, messageId, deps.links)
      .flatMap((message) => message.contents)
      .map((block) => (block.type === 'text' ? block.text : ''))
      .join('')
    if (from < text.length) stream.token(text.slice(from), text.length)
    if (settled.status === 'complete') stream.done(text.length)
    else stream.error(settled.error ?? 'The response failed', text.length)
    return null
  })
}

const errors = { 400: AuthModel.error, 401: AuthModel.error, 403: AuthModel.scopeError, 404: AuthModel.error }

export const responses = (deps: ResponseDeps) =>
  new Elysia({ name: 'responses', prefix: '/api/v1/threads/:threadId/messages/:messageId' })
    .use(auth(deps))
    .get(
      '/response',
      ({ caller, params, status }) => {
        requireMessage(deps.db, caller, params.threadId, params.messageId)
        const generation = generationOf(deps.db, params.messageId)
        if (generation.status === 'queued' || generation.status === 'running') {
          return status(202, { status: 'processing' as const })
        }
        return { status: generation.status, messages: listReplies(deps.db, params.messageId, deps.links) }
      },
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        response: deps.responses({ 200: GenerationModel.finished, 202: GenerationModel.processing, ...errors }),
        detail: {
          summary: 'Poll for the AI response to a user message',
          tags: ['Messages'],
          description:
            '202 while the answer is queued or being generated; 200 once it has ended. 404 when no response ' +
            'exists for the message (unknown message, or a message that asked for no answer). A question that a ' +
            'summary has since replaced in the thread’s list still gives its answer here and in the stream.',
        },
      },
    )
    .get(
      '/response/stream',
      ({ caller, params, headers, set }) => {
        requireMessage(deps.db, caller, params.threadId, params.messageId)
        return answerStream(deps, set, params.messageId, headers['last-event-id'])
      },
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        // Other query parameters are ignored: EventSource polyfills and cache busters add their own.
        query: t.Object(AuthModel.accessTokenQuery, { additionalProperties: true }),
        response: deps.responses(errors),
        detail: {
          summary: 'Stream the AI response as server-sent events',
          tags: ['Messages'],
          description:
            'Events: `token` `{token}`, `error` `{message}`, `done` `{}`; each is `id:`, `event:` and `data:` ' +
            'lines then a blank line. Concatenated `token` data equal the stored answer text. `done` comes only ' +
            'after the thread is back in `ready`; the stream closes after `done` or `error`. A client joining ' +
            'mid-answer first receives everything so far in one `token` event. Event ids are offsets into the ' +
            'answer; reconnecting with `Last-Event-ID` resumes exactly after that event. A comment line ' +
            '(`: keep-alive`) is sent whenever the stream has been silent for 7.5–15 s. The access token may ' +
            'also be given as the `access_token` query parameter for clients such as EventSource that cannot ' +
            'set headers; other query parameters (polyfills’ and cache busters’) are ignored.',
          responses: documented(
            { 200: { description: 'Server-sent events', content: { 'text/event-stream': {} } } },
            errors,
          ),
        },
      },
    )
