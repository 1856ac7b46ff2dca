// Reading an answer: poll (GET …/response) or stream it as server-sent events (GET …/response/stream).
import { Elysia } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { AuthModel, type Caller } from '../auth/model'
import { notFound } from '../shared/errors'
import type { Responses } from '../shared/responses'
import { type Heartbeats, type Listener, type OpenStreams, type ResponseSet, sseResponse } from '../shared/streams/sse'
import { type Links, toMessage } from '../threads/links'
import { ThreadsModel } from '../threads/model'
import type { ThreadRepository } from '../threads/repository'
import { requireMessage } from '../threads/visibility'
import { GenerationModel } from './model'
import type { GenerationRecord, GenerationRepository } from './repository'
import type { AnswerEngine } from './service'
import { busyThreadStates } from './state'

export interface AnswerDeps extends AuthDeps {
  generations: GenerationRepository
  /** The replies an answer wrote and its thread's state (the threads feature's storage, read only). */
  threads: ThreadRepository
  /** Answers' hub and stops; answers start only through threads/conversation.ts. */
  engine: AnswerEngine
  links: Links
  heartbeats: Heartbeats
  streams: OpenStreams
  responses: Responses
}

/** The answer to a user message: its status and why it failed; 404 when the message asked for none. */
async function generationOf(generations: GenerationRepository, messageId: string): Promise<GenerationRecord> {
  const row = await generations.find(messageId)
  if (!row) throw notFound('Response')
  return row
}

/** Where an answer is, as the poll says: still on its way, or ended with its messages and, unless complete, why. */
export type PolledAnswer =
  | { status: 'processing' }
  | { status: 'complete'; messages: ThreadsModel.message[] }
  | { status: 'error' | 'interrupted'; messages: ThreadsModel.message[]; error: string }

/**
 * The answer to a user message, as the poll (GET …/response) and MCP's get_response tell it: `processing` while
 * it is queued or being written and while its thread is busy with a newer one, else how it ended. 404 when the
 * message asked for no answer. The caller has checked that the message may be read (requireMessage gives `thread`).
 */
export async function pollAnswer(
  deps: Pick<AnswerDeps, 'generations' | 'threads' | 'links'>,
  thread: { state: string },
  messageId: string,
): Promise<PolledAnswer> {
  const generation = await generationOf(deps.generations, messageId)
  if (generation.status === 'queued' || generation.status === 'running' || busyThreadStates.has(thread.state)) {
    return { status: 'processing' }
  }
  const messages = (await deps.threads.replies(messageId)).map((row) => toMessage(row, deps.links))
  if (generation.status === 'complete') return { status: 'complete', messages }
  return { status: generation.status, messages, error: generation.error ?? 'The response failed' }
}

/** `Last-Event-ID` is an offset into the answer's text; anything else means "from the start". */
function resumeOffset(header: string | undefined): number {
  const offset = Number(header)
  return Number.isSafeInteger(offset) && offset > 0 ? offset : 0
}

type StreamDeps = Pick<AnswerDeps, 'generations' | 'threads' | 'engine' | 'links' | 'heartbeats' | 'streams'>

/** An ended answer as its replay needs it: the stored text, how it ended, and the newer answer it waits for. */
interface Replay {
  text: string
  generation: GenerationRecord
  newer: string | null
  /** The thread's state when the replay was read. */
  state: string
}

async function replayOf(deps: StreamDeps, thread: { id: string; state: string }, messageId: string): Promise<Replay> {
  // The thread's state as it is now: the one read before the answer left the hub may predate its end.
  const state = (await deps.threads.state(thread.id)) ?? thread.state
  const generation = await generationOf(deps.generations, messageId)
  const text = (await deps.threads.replies(messageId))
    .flatMap((row) => row.contents)
    .map((block) => (block.type === 'text' ? block.text : ''))
    .join('')
  const newer = busyThreadStates.has(state) ? await deps.threads.pendingMessageId(thread.id) : null
  if (newer !== null) await deps.engine.watch(newer)
  return { text, generation, newer, state }
}

/**
 * The answer to a user message as server-sent events, live from the hub or replayed from the database once it
 * has ended; 404 when the thread or message is not there for the caller, or the message asked for no answer.
 * Shared by the API and the web pages; `set` is the route's, whose headers the response takes over (see sseResponse).
 *
 * `done` promises that the thread takes messages again (the specification's first rule for events). An ended
 * answer replayed while a newer one is queued or running therefore waits for that one to end, then says `done`
 * if the thread is `ready`, or `error` if that answer left it in `error`.
 */
export async function answerStream(
  deps: StreamDeps,
  set: ResponseSet,
  request: { caller: Caller; threadId: string; messageId: string; lastEventId?: string },
): Promise<Response> {
  const { caller, messageId } = request
  const thread = await requireMessage(deps.threads, caller, request.threadId, messageId)
  const generation = await generationOf(deps.generations, messageId) // 404 before any stream starts
  const from = resumeOffset(request.lastEventId)
  // Running on another instance: followed into this one's hub.
  await deps.engine.watch(messageId, generation)
  // An answer that has left the hub has ended for good, and was stored before it left: its replay is read now.
  // A live one is subscribed to with no wait in between, so it cannot end unseen.
  const replay = deps.engine.hub.isLive(messageId) ? null : await replayOf(deps, thread, messageId)
  return sseResponse(set, deps.heartbeats, { streams: deps.streams, userId: caller.userId }, (stream) => {
    if (!replay) return deps.engine.hub.subscribe(messageId, from, stream)
    const { text, generation, newer, state } = replay
    if (from < text.length) stream.token(text.slice(from), text.length)
    if (generation.status !== 'complete') {
      stream.error(generation.error ?? 'The response failed', text.length)
      return null
    }
    if (newer === null) {
      if (state === 'ready') stream.done(text.length)
      else stream.error(laterAnswerFailed, text.length)
      return null
    }
    // Tokens of the newer answer are not this stream's; only its end matters. The stream stays open (with its
    // heartbeats) until the thread's state is read.
    const settle = (): void => {
      deps.threads.state(thread.id).then(
        (state) => (state === 'ready' ? stream.done(text.length) : stream.error(laterAnswerFailed, text.length)),
        () => stream.error(laterAnswerFailed, text.length),
      )
    }
    const follower: Listener = { token() {}, done: settle, error: settle }
    const following = deps.engine.hub.subscribe(newer, deps.engine.hub.text(newer).length, follower)
    if (!following) {
      settle()
      return null
    }
    return { leave: () => following.leave(follower) }
  })
}

const laterAnswerFailed = 'A later answer in this thread did not complete, so the thread does not take messages now'

const errors = { 400: AuthModel.error, 401: AuthModel.error, 403: AuthModel.scopeError, 404: AuthModel.error }

export const answerRoutes = (deps: AnswerDeps) =>
  new Elysia({ name: 'answers', prefix: '/api/v1/threads/:threadId/messages/:messageId' })
    .use(auth(deps))
    .get(
      '/response',
      async ({ caller, params, status }) => {
        const thread = await requireMessage(deps.threads, caller, params.threadId, params.messageId)
        const answer = await pollAnswer(deps, thread, params.messageId)
        if (answer.status === 'processing') return status(202, answer)
        // The API's object says no more than its status and messages.
        return { status: answer.status, messages: answer.messages }
      },
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        response: deps.responses({ 200: GenerationModel.finished, 202: GenerationModel.processing, ...errors }),
        detail: {
          operationId: 'getResponse',
          summary: 'Poll for the AI response to a user message',
          tags: ['Messages'],
          description:
            '202 while the answer is queued or being generated, and while the thread is `waiting` or `active` (a ' +
            'newer answer is on its way); 200 once it has ended and the thread is no longer busy. 404 when no response ' +
            'exists for the message (unknown message, or a message that asked for no answer). A question that a ' +
            'summary has since replaced in the thread’s list still gives its answer here and in the stream.',
        },
      },
    )
    .get(
      '/response/stream',
      ({ caller, params, headers, set }) =>
        answerStream(deps, set, { caller, ...params, lastEventId: headers['last-event-id'] }),
      {
        scope: 'threads:read',
        params: ThreadsModel.messageParams,
        response: deps.responses(errors),
        detail: {
          operationId: 'streamResponse',
          summary: 'Stream the AI response as server-sent events',
          tags: ['Messages'],
          description:
            'Events: `token` `{token}`, `error` `{message}`, `done` `{}`; each is `id:`, `event:` and `data:` ' +
            'lines then a blank line. Concatenated `token` data equal the stored answer text. `done` comes only ' +
            'when the thread is back in `ready`: the stream of an older answer, opened while a newer one is queued ' +
            'or running, sends its text and then waits for that answer to end (`error` if it left the thread in ' +
            '`error`). The stream closes after `done` or `error`, whose event also carries `retry: 86400000`: an ' +
            'EventSource left open then waits a day before fetching the ended answer again. A client joining ' +
            'mid-answer first receives everything so far in one `token` event. Event ids are offsets into the ' +
            'answer; reconnecting with `Last-Event-ID` resumes exactly after that event. A comment line ' +
            '(`: keep-alive`) is sent whenever the stream has been silent for 7.5–15 s. The token goes in the ' +
            'Authorization header only (`access_token` in the query string is refused with 401); other query ' +
            'parameters are ignored. Open streams are limited per person (STREAM_LIMIT_PER_USER, default 64) and ' +
            'per process (STREAM_LIMIT_TOTAL, default 10000). The server closes a stream that falls too far ' +
            'behind (STREAM_BACKLOG_BYTES, default 1 MiB, waiting for a client that does not read); resume with ' +
            '`Last-Event-ID`.',
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
              description: 'The answer as server-sent events: `token`, then `done` or `error`.',
              content: {
                'text/event-stream': {
                  schema: { type: 'string', description: 'Events as described above, UTF-8.' },
                },
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
