// Answers generated on another instance, fed into this instance's hub so that its streams hear them as if they
// were generated here. Notifications carry the text as it is published; the database's chunks fill any gap (a
// stream joining late, a notification lost with its connection, one too long to carry its text); a slow poll of
// every followed answer catches the rest, and the answer's end is read from the database.
import type { Logger } from '../shared/log'
import type { Hub } from './hub'
import type { AnswerRelay, Progress, RelayEvent } from './relay'

interface Followed {
  /** The lease whose text the hub holds; null until one is seen. Lease IDs are UUIDv7s: a later claim sorts later. */
  lease: string | null
  /** A database read is under way; `again` asks for one more when it ends. */
  busy: boolean
  again: boolean
}

export class RemoteAnswers {
  private readonly followed = new Map<string, Followed>()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly hub: Hub,
    private readonly relay: AnswerRelay,
    private readonly log: Logger,
    private readonly pollMs: number,
  ) {}

  get size(): number {
    return this.followed.size
  }

  has(messageId: string): boolean {
    return this.followed.has(messageId)
  }

  /** Feeds the hub with an answer generated elsewhere, from what it already holds, until the answer ends. */
  follow(messageId: string): void {
    if (this.followed.has(messageId)) return
    this.hub.open(messageId)
    this.followed.set(messageId, { lease: null, busy: false, again: false })
    this.timer ??= setInterval(() => this.pollAll(), this.pollMs)
    this.timer.unref()
    this.catchUp(messageId)
  }

  /** This instance generates the answer now: the hub is fed locally. */
  unfollow(messageId: string): void {
    this.followed.delete(messageId)
    if (this.followed.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }

  hear(event: RelayEvent): void {
    switch (event.kind) {
      case 'chunk':
        this.apply(event.messageId, event.lease, event.start, event.end, event.text)
        return
      case 'claimed':
        this.adopt(event.messageId, event.lease)
        return
      case 'ended':
        this.catchUp(event.messageId)
        return
    }
  }

  /** Reads every followed answer's progress again: after a lost connection, and as the slow safety net. */
  pollAll(): void {
    const ids = [...this.followed.keys()]
    if (ids.length === 0) return
    this.relay.progress(ids).then(
      (rows) => {
        const found = new Map(rows.map((row) => [row.messageId, row]))
        for (const messageId of ids) this.settle(messageId, found.get(messageId) ?? null)
      },
      (error) => this.log.warn('could not read the progress of answers on other instances', { error: String(error) }),
    )
  }

  /** Ends every followed answer's listeners (shutdown); they are told to come back. */
  close(message: string): void {
    for (const messageId of this.followed.keys()) this.hub.finish(messageId, { error: message, resumable: true })
    this.followed.clear()
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** A newer lease's text replaces what the hub holds; an older one's is stale. False for a stale lease. */
  private adopt(messageId: string, lease: string): boolean {
    const followed = this.followed.get(messageId)
    if (!followed) return false
    if (followed.lease !== null && lease < followed.lease) return false
    if (lease !== followed.lease) {
      this.hub.restart(messageId)
      followed.lease = lease
    }
    return true
  }

  /** A chunk heard in a notification: appended, or, when it leaves a gap or carries no text, read from the chunks. */
  private apply(messageId: string, lease: string, start: number, end: number, text: string | undefined): void {
    if (!this.adopt(messageId, lease)) return
    const have = this.hub.text(messageId).length
    if (end <= have) return
    if (start > have || text === undefined) this.catchUp(messageId)
    else this.hub.push(messageId, text.slice(have - start))
  }

  private catchUp(messageId: string): void {
    if (!this.followed.has(messageId)) return
    this.settle(messageId, undefined)
  }

  /** Brings one answer up to date from `progress`, or from a fresh read when it is undefined; one read at a time. */
  private settle(messageId: string, progress: Progress | null | undefined): void {
    const followed = this.followed.get(messageId)
    if (!followed) return
    if (followed.busy) {
      followed.again = true
      return
    }
    followed.busy = true
    void (async () => {
      let next = progress
      do {
        followed.again = false
        if (next === undefined) next = (await this.relay.progress([messageId]))[0] ?? null
        await this.bringUp(messageId, next)
        next = undefined
      } while (followed.again && this.followed.has(messageId))
    })()
      .catch((error) =>
        this.log.warn('could not read an answer from another instance', { messageId, error: String(error) }),
      )
      .finally(() => {
        followed.busy = false
      })
  }

  private async bringUp(messageId: string, progress: Progress | null): Promise<void> {
    if (!this.followed.has(messageId)) return
    if (progress === null) return this.end(messageId, { error: 'The response is no longer available' })
    const { status, lease } = progress
    if (status !== 'queued' && status !== 'running') {
      // Its end: the stored text completes what the notifications brought.
      const text = await this.relay.storedText(messageId)
      const have = this.hub.text(messageId).length
      if (text.length > have) this.hub.push(messageId, text.slice(have))
      return this.end(messageId, status === 'complete' ? null : { error: progress.error ?? 'The response failed' })
    }
    if (lease === null || !this.adopt(messageId, lease)) return
    if (progress.length <= this.hub.text(messageId).length) return
    for (const chunk of await this.relay.chunks(messageId, lease, this.hub.text(messageId).length)) {
      if (!this.adopt(messageId, chunk.lease)) return
      const have = this.hub.text(messageId).length
      // A chunk its publisher could not store leaves a gap that only the stored answer fills, at its end.
      if (chunk.start > have) return
      if (chunk.end > have) this.hub.push(messageId, chunk.text.slice(have - chunk.start))
    }
  }

  private end(messageId: string, outcome: { error: string } | null): void {
    this.unfollow(messageId)
    this.hub.finish(messageId, outcome)
  }
}
