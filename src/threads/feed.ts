// The thread change feed (GET /api/v1/threads/events): server-sent events telling a client every change to the
// threads it can see, so it keeps a thread list current without polling. An event's ID is its place in the update
// order (`update_seq`, which every thread write and every tombstone takes in turn, and which on PostgreSQL commits
// in order), so "everything after N" misses nothing and `Last-Event-ID` resumes exactly. A thread shows as it is
// now: a client resuming after several writes to it gets one event with its latest state.
//
// One reader per instance polls the database for changes after the last it saw (one indexed statement, whatever
// the number of open feeds) and shares them out in memory to each feed that may see them. A feed resuming from an
// earlier place first reads what it missed, filtered for its viewer in SQL, up to where the shared reader stands.
import type { Caller } from '../auth/model'
import type { Logger } from '../shared/log'
import { type Listener, type SseSink, type Subscription, sseEvent } from '../shared/streams/sse'
import type { Clock } from '../shared/time'
import { dayMs } from '../shared/time'
import { type Links, toThread } from './links'
import type { ThreadChange, ThreadRepository, Viewer } from './repository'
import { mayView } from './visibility'

/** How often the shared reader looks for changes while any feed is open: the feed's latency, at most. */
export const feedPollMs = 1000

/**
 * How often an open feed asks again whether its token still admits it: a revoked token, a removed member or a
 * narrowed grant ends the stream within this, without a lookup a second per open feed.
 */
export const feedAccessCheckMs = 10_000
/** Changes read per statement. */
const pageSize = 200
/** Tombstones are kept this long: a feed resuming from before the oldest swept one is told to reload (`reset`). */
export const tombstoneKeepMs = 7 * dayMs

export type FeedEventType = 'thread.created' | 'thread.updated' | 'thread.deleted' | 'thread.hidden'

/**
 * Whether a viewer may hear of a change: the SQL filters of ThreadRepository.changes (repository.common.ts,
 * changeSides), in memory. A thread or its deletion as the visibility rule has it; `hidden` to the other members
 * of the thread's organization, who can no longer see it.
 */
export function canSee(viewer: Viewer, change: ThreadChange): boolean {
  if (change.kind !== 'hidden') return mayView(viewer, change)
  return viewer.sees !== 'own' && change.organizationId === viewer.organizationId && change.ownerId !== viewer.userId
}

/** One open feed: a stream, who reads it, and the last place it has told. */
class FeedReader implements Subscription {
  /** Set while the feed reads what it missed; changes shared out meanwhile wait here. */
  private waiting: ThreadChange[] | null = []

  /** When access was last confirmed (the feed's clock), and whether a check is under way. */
  private checking = false

  constructor(
    readonly viewer: Viewer,
    private readonly sink: SseSink,
    private readonly feed: ThreadFeed,
    public position: number,
    private readonly allowed: () => Promise<boolean>,
    private checkedAt: number,
  ) {}

  /** Asks again whether the caller may read this feed, once per `feedAccessCheckMs`; ends it when not. */
  checkAccess(now: number): Promise<void> {
    if (this.checking || now - this.checkedAt < feedAccessCheckMs) return Promise.resolve()
    this.checking = true
    return this.allowed().then(
      (allowed) => {
        this.checking = false
        this.checkedAt = now
        if (!allowed) this.sink.error('Your access to these threads has ended', this.position)
      },
      () => {
        // A failed lookup proves nothing either way: asked again at the next tick.
        this.checking = false
      },
    )
  }

  leave(_listener: Listener): void {
    this.feed.remove(this)
  }

  /**
   * Sends the changes past this feed's place that its viewer may see. A thread first written after where the
   * client's list stood before these changes is `thread.created` to it.
   */
  tell(changes: ThreadChange[]): void {
    if (this.waiting) {
      this.waiting.push(...changes)
      return
    }
    const since = this.position
    for (const change of changes) {
      if (change.seq <= this.position) continue
      this.position = change.seq
      if (!canSee(this.viewer, change)) continue
      this.sink.write(this.feed.encode(change, since))
    }
  }

  /** Caught up: the `ready` event, then whatever was shared out meanwhile. */
  ready(): void {
    this.sink.write(sseEvent('ready', {}, this.position))
    const waiting = this.waiting ?? []
    this.waiting = null
    this.tell(waiting)
  }

  /** A change read for this feed alone (catching up), already filtered for its viewer. */
  write(bytes: Uint8Array, seq: number): void {
    this.position = seq
    this.sink.write(bytes)
  }

  reset(): void {
    this.sink.write(sseEvent('reset', {}, this.position))
  }

  /** Settles once the client has taken what it was sent (or the stream closed). */
  drained(): Promise<void> {
    return this.sink.drained()
  }

  fail(): void {
    this.sink.error('The change feed could not be read; reconnect with Last-Event-ID', this.position, true)
  }
}

/** How a feed starts: from a resume point, or `now` (none given, or one that cannot be honoured: `reset`). */
function resumePoint(header: string | undefined): number | null {
  if (header === undefined || header.trim() === '') return null
  const position = Number(header)
  return Number.isSafeInteger(position) && position >= 0 ? position : -1
}

export interface FeedDeps {
  threads: ThreadRepository
  links: Links
  log: Logger
  clock: Clock
}

/** Every open feed of this instance, and the one reader that shares changes out to them. */
export class ThreadFeed {
  private readonly readers = new Set<FeedReader>()
  /** Each shared-out change's event bytes, by type (see encode). */
  private readonly encoded = new WeakMap<ThreadChange, Map<FeedEventType, Uint8Array>>()
  /** The last place the shared reader has read through; null while no feed is open. */
  private cursor: number | null = null
  private polling: Promise<void> | null = null
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly deps: FeedDeps,
    /** How often the shared reader looks for changes; null: only when `poll()` is called (tests that step it). */
    private readonly pollMs: number | null = feedPollMs,
  ) {}

  /**
   * The change as its event. A change shared out is told to every open feed: its bytes are built once per type a
   * feed may see it as (created or updated, which depends on the feed's place), not once per feed.
   */
  encode(change: ThreadChange, since: number): Uint8Array {
    const type: FeedEventType =
      change.kind === 'thread'
        ? change.createdSeq > since
          ? 'thread.created'
          : 'thread.updated'
        : change.kind === 'deleted'
          ? 'thread.deleted'
          : 'thread.hidden'
    const encoded = this.encoded.get(change) ?? new Map<FeedEventType, Uint8Array>()
    this.encoded.set(change, encoded)
    let bytes = encoded.get(type)
    if (!bytes) {
      const data =
        change.kind === 'thread' && change.thread ? toThread(change.thread, this.deps.links) : { id: change.threadId }
      bytes = sseEvent(type, data, change.seq)
      encoded.set(type, bytes)
    }
    return bytes
  }

  /** How many feeds are open on this instance. */
  get size(): number {
    return this.readers.size
  }

  /**
   * Where the shared reader stands, starting it at `head` (the database's latest place) if no feed was open. Feeds
   * start there, synchronously as they join, so none is told a change twice or misses one between its own read and
   * the shared reader's.
   */
  private startAt(head: number): number {
    if (this.cursor === null) {
      this.cursor = head
      if (this.pollMs !== null) {
        this.timer = setInterval(() => void this.poll(), this.pollMs)
        // Open feeds belong to requests, which keep the server alive; the timer alone must not.
        this.timer.unref()
      }
    }
    return this.cursor
  }

  /**
   * Reads the changes since the last look and shares them out: the timer's tick, which tests may call themselves.
   * One look at a time; a call during a look waits for it.
   */
  poll(): Promise<void> {
    this.polling ??= Promise.all([this.look(), this.checkAccess()])
      .then(() => undefined)
      .finally(() => {
        this.polling = null
      })
    return this.polling
  }

  /** Each open feed asks again, now and then, whether its caller may still read it. */
  private async checkAccess(): Promise<void> {
    const now = this.deps.clock.now()
    await Promise.all([...this.readers].map((reader) => reader.checkAccess(now)))
  }

  private async look(): Promise<void> {
    try {
      while (this.cursor !== null) {
        const changes = await this.deps.threads.changes({ after: this.cursor, limit: pageSize })
        if (this.cursor === null || changes.length === 0) return
        this.cursor = changes[changes.length - 1]?.seq ?? this.cursor
        for (const reader of this.readers) reader.tell(changes)
        if (changes.length < pageSize) return
      }
    } catch (error) {
      this.deps.log.error('the thread change feed could not be read; trying again', { error: String(error) })
    }
  }

  remove(reader: FeedReader): void {
    this.readers.delete(reader)
    if (this.readers.size > 0) return
    clearInterval(this.timer)
    this.timer = undefined
    this.cursor = null
  }

  /**
   * Prepares a feed for this caller from `Last-Event-ID`: the attach function for sseResponse. A resume point
   * before the horizon (a deletion since may have been swept), past the latest place (another database), or not a
   * place at all, starts the feed `now` with a `reset` event: the client reloads its list.
   */
  async open(
    caller: Caller,
    lastEventId: string | undefined,
    allowed: () => Promise<boolean>,
  ): Promise<(sink: SseSink) => Subscription> {
    const viewer: Viewer = { sees: caller.sees, organizationId: caller.organizationId, userId: caller.userId }
    const from = resumePoint(lastEventId)
    const { horizon, head } = await this.deps.threads.feedBounds()
    return (sink) => {
      // The shared reader may stand behind `head` (it looks once a second): this feed starts from `head` then, and
      // skips what the shared reader hands it up to there.
      const now = Math.max(head, this.startAt(head))
      const resumable = from !== null && from >= horizon && from <= now
      const reader = new FeedReader(viewer, sink, this, resumable ? from : now, allowed, this.deps.clock.now())
      this.readers.add(reader)
      if (from !== null && !resumable) reader.reset()
      void this.catchUp(reader, now).then(
        () => reader.ready(),
        (error) => {
          this.deps.log.error('a change feed could not read what it missed', { error: String(error) })
          reader.fail()
        },
      )
      return reader
    }
  }

  /**
   * Sends a resuming feed what it missed up to `start`; from there, the shared reader's changes. Each change waits
   * until the client has taken what came before: a long catch-up on a slow link is paced by the client, rather
   * than piling up past the stream's backlog bound and being closed, again at every reconnection.
   */
  private async catchUp(reader: FeedReader, start: number): Promise<void> {
    const since = reader.position
    while (reader.position < start) {
      const changes = await this.deps.threads.changes({
        viewer: reader.viewer,
        after: reader.position,
        upTo: start,
        limit: pageSize,
      })
      for (const change of changes) {
        await reader.drained()
        if (!this.readers.has(reader)) return
        reader.write(this.encode(change, since), change.seq)
      }
      if (changes.length < pageSize) break
    }
    if (reader.position < start) reader.position = start
  }
}
