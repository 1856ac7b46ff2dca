// Live answers in memory, fanned out to any number of listeners. Tokens are kept as one growing string,
// so a listener joining mid-answer, or resuming from an offset, gets exactly what it missed.
import type { Listener, Subscription } from '../shared/streams/sse'

export class LiveAnswer implements Subscription {
  text = ''
  readonly listeners = new Set<Listener>()
  /**
   * Listeners that resumed past the end of the text so far, and where each is. After a restart the answer is
   * generated again from the start, and a client resuming at offset 5 must not get the first 5 characters twice.
   */
  readonly ahead = new Map<Listener, number>()

  leave(listener: Listener): void {
    this.listeners.delete(listener)
    this.ahead.delete(listener)
  }
}

export class Hub {
  private readonly live = new Map<string, LiveAnswer>()

  /** Starts buffering the answer to a user message (from the moment it is queued). */
  open(messageId: string): void {
    if (!this.live.has(messageId)) this.live.set(messageId, new LiveAnswer())
  }

  /** Whether the answer is queued or being written: once it has left the hub, it has ended for good. */
  isLive(messageId: string): boolean {
    return this.live.has(messageId)
  }

  /** How many listeners an answer has: a stream whose client left must not stay among them. */
  listenerCount(messageId: string): number {
    return this.live.get(messageId)?.listeners.size ?? 0
  }

  text(messageId: string): string {
    return this.live.get(messageId)?.text ?? ''
  }

  push(messageId: string, token: string): void {
    const answer = this.live.get(messageId)
    if (!answer || token === '') return
    answer.text += token
    const end = answer.text.length
    if (answer.ahead.size === 0) {
      for (const listener of answer.listeners) listener.token(token, end)
      return
    }
    for (const listener of answer.listeners) {
      const from = answer.ahead.get(listener)
      if (from === undefined) listener.token(token, end)
      else if (end > from) {
        answer.ahead.delete(listener)
        listener.token(answer.text.slice(from), end)
      }
    }
  }

  /**
   * Adds a listener and replays what it missed after `offset`. Returns the subscription to leave,
   * or null when the answer is not live (finished or never started).
   */
  subscribe(messageId: string, offset: number, listener: Listener): Subscription | null {
    const answer = this.live.get(messageId)
    if (!answer) return null
    if (offset < answer.text.length) listener.token(answer.text.slice(offset), answer.text.length)
    else if (offset > answer.text.length) answer.ahead.set(listener, offset)
    answer.listeners.add(listener)
    return answer
  }

  /**
   * The answer is generated again from its start (another instance took it over): its listeners keep their places,
   * and hear the new text only past what they already have, as a client resuming past the end does.
   */
  restart(messageId: string): void {
    const answer = this.live.get(messageId)
    if (!answer || answer.text === '') return
    for (const listener of answer.listeners) {
      answer.ahead.set(listener, Math.max(answer.ahead.get(listener) ?? 0, answer.text.length))
    }
    answer.text = ''
  }

  /**
   * A new answer to a message whose previous answer is still being stored (a regenerate that came in between): new
   * listeners join the new one at once, and the previous one, returned, is ended by its own job (`end`), so nobody
   * who asked after the regenerate hears the earlier answer.
   */
  replace(messageId: string): LiveAnswer | undefined {
    const previous = this.live.get(messageId)
    this.live.set(messageId, new LiveAnswer())
    return previous
  }

  finish(messageId: string, outcome: { error: string; resumable?: boolean } | null): void {
    const answer = this.live.get(messageId)
    if (!answer) return
    this.live.delete(messageId)
    this.end(answer, outcome)
  }

  /** Tells an answer's listeners how it ended; for one `replace` took out of the hub, the only way it ends. */
  end(answer: LiveAnswer, outcome: { error: string; resumable?: boolean } | null): void {
    for (const listener of answer.listeners) {
      if (outcome) listener.error(outcome.error, answer.text.length, outcome.resumable)
      else listener.done(answer.text.length)
    }
  }
}
