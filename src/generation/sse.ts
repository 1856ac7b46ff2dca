// Server-sent events on a ReadableStream: `id:`, `event:` and `data:` lines then a blank line.
// Event ids are offsets into the answer's text, so `Last-Event-ID` resumes without gaps or repeats.

export type SseEvent = { type: 'token'; token: string } | { type: 'done' } | { type: 'error'; message: string }

const encoder = new TextEncoder()

function encode(event: SseEvent, id: number): Uint8Array {
  const data =
    event.type === 'token' ? { token: event.token } : event.type === 'error' ? { message: event.message } : {}
  return encoder.encode(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`)
}

// The hub hands one token to every listener of an answer in a row: the listeners after the first get
// the bytes already encoded (the same id and text always encode alike, and enqueued chunks are never
// written to), so fan-out costs one encoding per token rather than one per stream.
let lastToken: { token: string; id: number; bytes: Uint8Array } | undefined

export function encodeEvent(event: SseEvent, id: number): Uint8Array {
  if (event.type !== 'token') return encode(event, id)
  if (lastToken?.id === id && lastToken.token === event.token) return lastToken.bytes
  const bytes = encode(event, id)
  lastToken = { token: event.token, id, bytes }
  return bytes
}

const heartbeat = encoder.encode(': keep-alive\n\n')

/** One timer for every open stream, rather than one per stream. */
class Heartbeats {
  private readonly streams = new Set<ReadableStreamDefaultController<Uint8Array>>()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(private readonly intervalMs: number) {}

  add(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.streams.add(controller)
    this.timer ??= setInterval(() => {
      for (const stream of this.streams) {
        try {
          stream.enqueue(heartbeat)
        } catch {
          // A stream closed without telling us must not stop the others' heartbeats.
          this.remove(stream)
        }
      }
    }, this.intervalMs)
    // Open streams belong to requests, which keep the server alive; the timer alone must not.
    this.timer.unref()
  }

  remove(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.streams.delete(controller)
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}

export const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
}

export interface SseSink {
  send(event: SseEvent, id: number): void
  /** Sends a final event and closes the stream. */
  end(event: SseEvent, id: number): void
}

/**
 * Builds an SSE stream. `attach` is called once with a sink and returns a cleanup function that runs
 * when the stream ends or the client goes away.
 */
export function createSseStream(
  heartbeats: Heartbeats,
  attach: (sink: SseSink) => (() => void) | undefined,
): ReadableStream<Uint8Array> {
  let cleanup: (() => void) | undefined
  let open = true
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined
  const close = () => {
    if (!open) return
    open = false
    if (controllerRef) heartbeats.remove(controllerRef)
    cleanup?.()
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller
      heartbeats.add(controller)
      const sink: SseSink = {
        send: (event, id) => open && controller.enqueue(encodeEvent(event, id)),
        end: (event, id) => {
          if (!open) return
          controller.enqueue(encodeEvent(event, id))
          close()
          controller.close()
        },
      }
      cleanup = attach(sink)
      if (!open) cleanup?.()
    },
    cancel: close,
  })
}

export { Heartbeats }
