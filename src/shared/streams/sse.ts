// Server-sent events: `id:`, `event:` and `data:` lines then a blank line. The answer streams (generation/), the
// change feed (threads/feed.ts) and the pages' own streams are all this one kind of stream.
// An answer's event ids are offsets into its text, so `Last-Event-ID` resumes without gaps or repeats.
import { AppError } from '../errors'
import { DirectBody } from './direct-body'

/** What an answer's stream is told (generation/hub.ts fans answers out to these). */
export interface Listener {
  /** `text` is what was appended; `end` is the answer's length after it (the SSE event id). */
  token(text: string, end: number): void
  done(end: number): void
  /** `resumable`: the answer will be generated again (a restart), so a client should come back for it. */
  error(message: string, end: number, resumable?: boolean): void
}

/** What a listener keeps to stop listening: the answer itself, so leaving costs no closure per listener. */
export interface Subscription {
  leave(listener: Listener): void
}

const encoder = new TextEncoder()

function encode(type: string, data: string, id: number, prefix = ''): Uint8Array {
  return encoder.encode(`${prefix}id: ${id}\nevent: ${type}\ndata: ${data}\n\n`)
}

/** One event's bytes, for streams other than answers' (the thread change feed); `data` is one line of JSON. */
export function sseEvent(type: string, data: unknown, id: number): Uint8Array {
  return encode(type, JSON.stringify(data), id)
}

/**
 * The last event of a stream also sets the client's reconnection delay to a day. The answer is over, yet an
 * EventSource that is not closed by its page reconnects after every end, by default within seconds, and would
 * fetch the whole answer again each time; a connection lost mid-answer still reconnects at the usual pace.
 */
export const finalRetryMs = 86_400_000
const finalRetry = `retry: ${finalRetryMs}\n`

// The hub hands one token to every listener of an answer in a row: the listeners after the first get
// the bytes already encoded (the same id and text always encode alike, and written chunks are never
// changed), so fan-out costs one encoding per token rather than one per stream.
let lastToken: { token: string; id: number; bytes: Uint8Array } | undefined

function encodeToken(token: string, id: number): Uint8Array {
  if (lastToken?.id === id && lastToken.token === token) return lastToken.bytes
  const bytes = encode('token', JSON.stringify({ token }), id)
  lastToken = { token, id, bytes }
  return bytes
}

const heartbeat = encoder.encode(': keep-alive\n\n')

/**
 * Keep-alive comments for streams that have been silent for the interval, from one timer for every open
 * stream. Streams that sent anything are left alone: writing thousands of comments in one go held busy
 * streams' tokens back by more than a tenth of a second. Thousands of streams that are all silent (answers
 * queued behind others) still get theirs in one go, when nothing is being said on them anyway.
 */
export class Heartbeats {
  private readonly streams = new Set<SseStream>()
  private timer: ReturnType<typeof setInterval> | undefined

  /** Streams are looked at every half interval: one that wrote nothing since the last look gets a comment. */
  constructor(private readonly intervalMs: number) {}

  add(stream: SseStream): void {
    this.streams.add(stream)
    this.timer ??= setInterval(() => this.beat(), this.intervalMs / 2)
    // Open streams belong to requests, which keep the server alive; the timer alone must not.
    this.timer.unref()
  }

  /** The timer's tick, which tests call themselves: a comment to every stream that wrote nothing since the last. */
  beat(): void {
    for (const stream of this.streams) {
      if (stream.spoke) {
        stream.spoke = false
        continue
      }
      try {
        stream.write(heartbeat)
      } catch {
        // A stream closed without telling us must not stop the others' heartbeats, nor keep its place.
        stream.cancel()
      }
    }
  }

  remove(stream: SseStream): void {
    this.streams.delete(stream)
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}

/** STREAM_BACKLOG_BYTES' default. */
const defaultBacklogBytes = 1_048_576

/** How long a refused stream is told to wait: a place frees up whenever any answer ends. */
const streamRetryAfterSeconds = 5

function tooManyStreams(message: string): AppError {
  return new AppError(429, 'too_many_streams', message, {}, { 'retry-after': String(streamRetryAfterSeconds) })
}

/**
 * Open answer streams, counted per person and in all. Each holds a socket and a place among its answer's
 * listeners, so one person with many tokens (or a script gone wrong) must not be able to hold them all.
 * A limit of 0 is no limit.
 */
export class OpenStreams {
  private readonly perUser = new Map<number, number>()
  private total = 0

  /** The most one stream may hold for a client that does not read (STREAM_BACKLOG_BYTES; see DirectBody). */
  readonly backlogBytes: number

  constructor(
    private readonly limits: {
      perUser: number
      total: number
      backlogBytes?: number
      /** Told of every stream refused for a limit (the operators' metrics). */
      refused?: () => void
    },
  ) {
    this.backlogBytes = limits.backlogBytes ?? defaultBacklogBytes
  }

  /** Takes a place for one more stream of this person's, or refuses with 429 and Retry-After. */
  take(userId: number): void {
    const mine = this.perUser.get(userId) ?? 0
    if (this.limits.total > 0 && this.total >= this.limits.total) {
      this.limits.refused?.()
      throw tooManyStreams('The server has as many answer streams open as it allows; try again shortly')
    }
    if (this.limits.perUser > 0 && mine >= this.limits.perUser) {
      this.limits.refused?.()
      throw tooManyStreams(`You have ${mine} answer streams open, the most one person may; close one first`)
    }
    this.perUser.set(userId, mine + 1)
    this.total++
  }

  release(userId: number): void {
    const mine = (this.perUser.get(userId) ?? 1) - 1
    if (mine > 0) this.perUser.set(userId, mine)
    else this.perUser.delete(userId)
    this.total--
  }

  /** How many are open: all of them, or one person's. */
  count(userId?: number): number {
    return userId === undefined ? this.total : (this.perUser.get(userId) ?? 0)
  }
}

const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
}

/**
 * Called as the response is built: either subscribes the stream to a live answer (returning the
 * subscription, left when the client goes away) or replays the ended answer and ends the stream.
 */
export type Attach = (stream: SseSink) => Subscription | null

/** What attaching gets: an answer's listener, which also takes events already encoded (sseEvent). */
export interface SseSink extends Listener {
  write(bytes: Uint8Array): void
  /**
   * Settles once the client has taken what was written so far (or the stream has closed): a writer that can wait,
   * such as a feed catching up, waits here between pages rather than filling the backlog.
   */
  drained(): Promise<void>
}

/**
 * One SSE response body. A busy server holds thousands of these, so a held stream is this one object (the
 * body's source, the hub's listener and a heartbeat target at once, with no closure of its own) and a
 * direct ReadableStream, which Bun writes straight to the socket with no reader or promise per chunk, and no queue
 * unless the client falls behind.
 */
class SseStream extends DirectBody implements SseSink {
  private subscription: Subscription | null
  private closed = false
  /** Whether anything was written since the heartbeats last looked; the response's headers count. */
  spoke = true

  /** Subscribes at once, as the response is built, so nothing sent from then on is missed. */
  constructor(
    private readonly heartbeats: Heartbeats,
    private readonly place: { streams: OpenStreams; userId: number },
    attach: Attach,
  ) {
    super(place.streams.backlogBytes)
    place.streams.take(place.userId)
    try {
      this.subscription = attach(this)
    } catch (error) {
      place.streams.release(place.userId)
      throw error
    }
    // A replay has ended already; only a live answer's stream waits, and needs heartbeats meanwhile.
    if (!this.closed) heartbeats.add(this)
  }

  /** The client went away; the answer goes on without it. */
  override cancel(): void {
    super.cancel()
    this.close()
  }

  write(bytes: Uint8Array): void {
    if (this.closed) return
    this.spoke = true
    this.send(bytes)
  }

  token(text: string, end: number): void {
    this.write(encodeToken(text, end))
  }

  done(end: number): void {
    this.end(encode('done', '{}', end, finalRetry))
  }

  /** A restart's error keeps the usual reconnection delay: the answer will be generated again, worth coming back for. */
  error(message: string, end: number, resumable = false): void {
    this.end(encode('error', JSON.stringify({ message }), end, resumable ? '' : finalRetry))
  }

  protected override overflow(): void {
    super.overflow()
    this.close()
  }

  private end(bytes: Uint8Array): void {
    if (this.closed) return
    this.write(bytes)
    this.close()
    this.finish()
  }

  private close(): void {
    if (this.closed) return
    this.closed = true
    this.place.streams.release(this.place.userId)
    this.heartbeats.remove(this)
    this.subscription?.leave(this)
    this.subscription = null
  }
}

/** Elysia's `set`: the headers hooks gave this request so far (security headers, request ID, CORS). */
export interface ResponseSet {
  headers: Record<string, string | number>
}

/**
 * The SSE response, which Elysia hands to Bun as it is. Elysia copies a returned Response into a new one
 * whenever `set.headers` holds anything, as it does on every request, and a held stream would keep that
 * copy's Headers object for as long as it is open. So the headers set so far move into this response and
 * `set.headers` is left empty; whatever a later hook adds is still merged by Elysia as usual.
 */
export function sseResponse(
  set: ResponseSet,
  heartbeats: Heartbeats,
  place: { streams: OpenStreams; userId: number },
  attach: Attach,
): Response {
  // Built before the headers move, so that a refusal (429) leaves them for the error response.
  const source = new SseStream(heartbeats, place, attach)
  const headers = Object.assign(set.headers, sseHeaders) as Record<string, string>
  set.headers = {}
  return new Response(new ReadableStream(source), { headers })
}
