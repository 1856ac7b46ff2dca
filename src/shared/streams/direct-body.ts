// Response bodies Bun writes straight to the socket, bounded for a client that does not read: every SSE stream
// (sse.ts) and MCP's replies (boundedBody) go out through DirectBody.

/**
 * Thrown into a stream that fell too far behind: Bun then resets the connection, dropping what it held for it.
 * (Bun in development mode prints it; NODE_ENV=production, as the Docker image sets, does not.)
 */
const tooFarBehind = 'The stream fell too far behind its client; resume with Last-Event-ID'

/**
 * A response body Bun writes straight to the socket (a direct ReadableStream), which bounds what it holds for a
 * client that does not read. Once the kernel's socket buffer is full, Bun's `write` returns a promise and keeps
 * every further byte in memory, without limit, until the socket drains. So from the first promise to its
 * settling, bytes wait here instead, counted, and once `backlogBytes` are waiting, the next write closes the
 * stream: `close(error)` resets the connection, which frees what Bun and the kernel held for it too. Bun then holds
 * at most the one write that met the full buffer, and the kernel its socket buffer (docs/operations.md).
 * The chunks waiting are the encoded events themselves, which a change or token shares among all its streams.
 */
export class DirectBody {
  readonly type = 'direct'
  private sink: ReadableStreamDirectController | undefined
  /** What Bun has not been given yet: written before the body was first pulled, or while Bun holds a backlog. */
  private queue: Uint8Array[] = []
  private head = 0
  private queued = 0
  /** Bun answered the last write with a promise: the socket is full and Bun holds what it did not take. */
  private blocked = false
  /** `end` was called: the sink closes once the queue is out. */
  private ending = false
  private sinkClosed = false
  /** The client went away, or the stream was closed for falling behind: nothing more is written. */
  private stopped = false
  /** Why the stream was cut short, for a sink that arrives after. */
  private failure: Error | undefined
  private waiters: (() => void)[] | undefined

  constructor(private readonly backlogBytes: number) {}

  /** Bun.serve pulls once; a JavaScript reader (as in tests) pulls again for each read, which waits for writes. */
  pull(sink: ReadableStreamDirectController): void {
    if (this.sink) return
    this.sink = sink
    if (this.failure) sink.close(this.failure)
    else this.drain()
  }

  /** Hands bytes on, or queues them while Bun holds a backlog; false once the stream was closed for falling behind. */
  protected send(bytes: Uint8Array): boolean {
    if (this.stopped || this.ending) return !this.stopped
    if (this.sink && !this.blocked && this.empty) {
      this.give(this.sink, bytes)
      return true
    }
    // Before Bun first pulls, the socket has not been tried: a replay of a long answer then its end waits whole.
    // One write larger than the bound (such as that replay) still goes out: it alone is not a backlog yet.
    if (this.sink && this.queued > 0 && this.queued + bytes.length > this.backlogBytes) {
      this.overflow()
      return false
    }
    this.queue.push(bytes)
    this.queued += bytes.length
    return true
  }

  /** Ends the body once everything written has been handed to Bun. */
  protected finish(): void {
    if (this.ending || this.stopped) return
    this.ending = true
    if (this.sink && this.empty) {
      this.sinkClosed = true
      this.sink.close()
    }
  }

  /** Whether everything written was handed to Bun: the queue is empty. */
  private get empty(): boolean {
    return this.head === this.queue.length
  }

  /** Bun calls this when the client goes away: what waits for it is dropped. */
  cancel(): void {
    this.stop()
  }

  /** The stream fell too far behind: it is closed, and subclasses leave what they listen to. */
  protected overflow(): void {
    this.abort(new Error(tooFarBehind))
  }

  /** Resets the connection: what was written and not yet taken by the client is dropped. */
  protected abort(error: Error): void {
    if (this.stopped) return
    this.failure = error
    this.stop()
    this.sink?.close(error)
  }

  private stop(): void {
    this.stopped = true
    this.queue = []
    this.head = 0
    this.queued = 0
    this.wake()
  }

  drained(): Promise<void> {
    if (this.stopped || (this.sink && !this.blocked && this.queued === 0)) return Promise.resolve()
    this.waiters ??= []
    return new Promise((resolve) => this.waiters?.push(resolve))
  }

  private give(sink: ReadableStreamDirectController, bytes: Uint8Array): void {
    const taken = sink.write(bytes)
    if (typeof taken === 'number') return
    this.blocked = true
    // Settles (with false) when the client goes away too; then cancel() follows.
    taken.then(
      () => this.drain(),
      () => this.drain(),
    )
  }

  private drain(): void {
    this.blocked = false
    const sink = this.sink
    if (!sink || this.stopped) return
    while (!this.blocked && this.head < this.queue.length) {
      const bytes = this.queue[this.head] as Uint8Array
      this.queue[this.head++] = sent
      this.queued -= bytes.length
      this.give(sink, bytes)
    }
    if (!this.empty) return
    this.queue = []
    this.head = 0
    // Closed by finish() already if the queue was empty then; a drain may come after that.
    if (this.ending && !this.sinkClosed) {
      this.sinkClosed = true
      sink.close()
    }
    if (!this.blocked) this.wake()
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = undefined
    for (const resolve of waiters ?? []) resolve()
  }
}

/** Takes a sent chunk's place in the queue, so that the queue does not keep it. */
const sent = new Uint8Array(0)

/**
 * A body made elsewhere (the MCP SDK's response stream, which queues whatever its server sends, without limit),
 * relayed through a DirectBody: read as fast as it comes, so that what waits for a client that does not read is
 * counted and bounded here. `ended` runs once the body has ended, broken off, or been cancelled or closed.
 */
class RelayedBody extends DirectBody {
  private readonly reader

  /** `ended`, called at most once: a cancel and the end of the pump both get here. */
  private readonly ended: () => void

  constructor(body: ReadableStream<Uint8Array>, backlogBytes: number, ended: () => void) {
    super(backlogBytes)
    let called = false
    this.ended = () => {
      if (called) return
      called = true
      ended()
    }
    this.reader = body.getReader()
    void this.pump()
  }

  private async pump(): Promise<void> {
    try {
      while (true) {
        const { done, value } = await this.reader.read()
        if (done) {
          this.finish()
          break
        }
        // Closed for falling behind, or the client went away: the rest is not wanted.
        if (!this.send(value)) {
          await this.reader.cancel()
          break
        }
      }
    } catch (error) {
      this.abort(error instanceof Error ? error : new Error(String(error)))
    }
    this.ended()
  }

  override cancel(): void {
    super.cancel()
    // The SDK's stream is released here, not only once the server that feeds it closes.
    void this.reader.cancel().catch(() => {})
    this.ended()
  }
}

/** `body` as a response body bounded as every SSE stream is (DirectBody); `ended` as for RelayedBody. */
export function boundedBody(
  body: ReadableStream<Uint8Array>,
  backlogBytes: number,
  ended: () => void,
): ReadableStream<Uint8Array> {
  return new ReadableStream(new RelayedBody(body, backlogBytes, ended))
}
