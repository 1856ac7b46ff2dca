// What happened, told after it committed: the one way a feature reacts to another's write in this process (webhooks
// queue their deliveries this way). The use case or engine that made the write emits the event once its unit of work
// has committed, and waits for every subscriber, in the order they subscribed, before it answers: a webhook delivery
// is queued before the request that made its event returns, or the answer's stream ends. The write and what follows
// it are two units: a process dying between them loses the reaction, never the write.
//
// Derived rows that must never be lost are not reactions: the search queue (`search_pending`), the change feed's
// place (`update_seq`) and tombstones are written inside the write's own transaction (triggers and statements in the
// repositories), so they commit with it on every instance, and their readers poll the database.
import type { Logger } from './log'

export type DomainEvent =
  /** A thread was created (with or without a first message). */
  | { type: 'thread.created'; threadId: string }
  /** A thread and its rows were deleted by its owner. */
  | { type: 'thread.deleted'; threadId: string }
  /** An answer ended and was stored (by this instance: the one that holds it, or stopped it while queued). */
  | {
      type: 'answer.stored'
      threadId: string
      messageId: string
      outcome: 'complete' | 'error' | 'interrupted'
      /** The configured model that wrote the answer; null when none was asked (stopped before it ran). */
      model: string | null
      /** What it used, as recorded with it (usage/repository.ts AnswerUsage); absent when it never ran. */
      usage?: RecordedUsage
    }

/** An answer's usage as the generation engine recorded it (the shape of usage/repository.ts AnswerUsage). */
export interface RecordedUsage {
  inputTokens: number
  outputTokens: number
  cachedInputTokens: number
  estimated: boolean
  costMicros: number | null
  currency: string | null
  firstTokenMs: number | null
  totalMs: number | null
}

export type DomainEventType = DomainEvent['type']
type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>
type Handler<T extends DomainEventType> = (event: EventOf<T>) => Promise<void> | void

/** Emits events to the handlers subscribed to their type. */
export class DomainEvents {
  /** By type: `on` files each handler under the type its events have. */
  private readonly handlers = new Map<DomainEventType, ((event: DomainEvent) => Promise<void> | void)[]>()

  constructor(private readonly log: Logger) {}

  /** Calls `handler` after every committed write of this type, from now on. */
  on<T extends DomainEventType>(type: T, handler: Handler<T>): void {
    const list = this.handlers.get(type) ?? []
    list.push(handler as (event: DomainEvent) => Promise<void> | void)
    this.handlers.set(type, list)
  }

  /**
   * Tells every subscriber, one after another; settles once they all have. A subscriber's failure is logged and
   * never passed on: the write it reacts to has been made.
   */
  async emit(event: DomainEvent): Promise<void> {
    for (const handler of this.handlers.get(event.type) ?? []) {
      try {
        await handler(event)
      } catch (error) {
        this.log.error('a reaction to a committed write failed', { event: event.type, error: String(error) })
      }
    }
  }
}
