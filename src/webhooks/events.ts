// What happens that receivers hear of: a thread created, an answer completed, failed or interrupted. An event is
// queued right after the change commits (the committed write's domain event, shared/events.ts: the deliveries are
// inserted before the request or the answer's stream ends, durable from then on), one delivery per enabled endpoint
// of the thread's own organization that asked for the type. The change and the queueing are two units, not one: a
// process dying between them loses that event (never a thread or an answer), the price of keeping the generation
// engine's and the threads' repositories unaware of webhooks.
import type { DomainEvents, RecordedUsage } from '../shared/events'
import { newId } from '../shared/ids'
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import { toIso } from '../shared/time'
import { type Links, toMessage } from '../threads/links'
import type { ThreadRepository } from '../threads/repository'
import { toAnswerUsage } from '../usage/service'
import { type WebhookEventType, type WebhooksModel, webhookEventTypes } from './model'
import type { WebhookRepository } from './repository'

export { testEventType, type WebhookEventType, webhookEventTypes } from './model'

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (webhookEventTypes as readonly string[]).includes(value)
}

export type WebhookPayload = WebhooksModel.event

const answerEvents: Record<'complete' | 'error' | 'interrupted', WebhookEventType> = {
  complete: 'answer.completed',
  error: 'answer.failed',
  interrupted: 'answer.interrupted',
}

export interface EmitterDeps {
  webhooks: WebhookRepository
  threads: ThreadRepository
  links: Links
  clock: Clock
  log: Logger
  /** Told when deliveries were queued, so this instance's worker sends them at once. */
  queued?: () => void
}

export type WebhookEmitter = ReturnType<typeof createWebhookEmitter>

export function createWebhookEmitter(deps: EmitterDeps) {
  async function emit(
    type: WebhookEventType,
    threadId: string,
    messageId?: string,
    model?: string | null,
    usage?: RecordedUsage | null,
  ): Promise<void> {
    const targets = await deps.webhooks.threadTargets(threadId)
    const endpoints = targets?.endpoints.filter((endpoint) => endpoint.events?.includes(type) ?? true) ?? []
    if (!targets || endpoints.length === 0) return
    const now = deps.clock.now()
    const data: WebhookPayload['data'] = {
      thread_id: threadId,
      ...(messageId === undefined ? {} : { message_id: messageId }),
      // The model is named even for a private thread: it says which model answered, not what was said.
      ...(type === 'answer.completed' && model !== undefined ? { model } : {}),
      ...(type === 'answer.completed' && usage !== undefined ? { usage: usage && toAnswerUsage(usage) } : {}),
      state: targets.state,
      app_url: deps.links.threadUrl(threadId),
    }
    // A private thread is its owner's alone, admins included: its events say what happened, never what was said.
    if (type === 'answer.completed' && messageId !== undefined && !targets.isPrivate) {
      // The answer just stored, even if a regenerate has since made way for a new one (its reply_to cleared).
      const stored = await deps.threads.latestReply(messageId)
      data.messages = stored ? [toMessage(stored, deps.links)] : []
    }
    const payload = JSON.stringify({ type, timestamp: toIso(now), data } satisfies WebhookPayload)
    await deps.webhooks.enqueue(
      endpoints.map((endpoint) => ({ id: newId(), endpointId: endpoint.id, eventType: type, payload, threadId })),
      now,
    )
    deps.queued?.()
  }

  /** Queues the event; a failure is logged, never passed on: the change it reports has been made. */
  async function safely(
    type: WebhookEventType,
    threadId: string,
    messageId?: string,
    model?: string | null,
    usage?: RecordedUsage | null,
  ): Promise<void> {
    try {
      await emit(type, threadId, messageId, model, usage)
    } catch (error) {
      deps.log.error('could not queue a webhook event', { type, threadId, error: String(error) })
    }
  }

  return {
    threadCreated: (threadId: string) => safely('thread.created', threadId),
    answerEnded: (
      threadId: string,
      messageId: string,
      outcome: 'complete' | 'error' | 'interrupted',
      model: string | null = null,
      usage: RecordedUsage | null = null,
    ) => safely(answerEvents[outcome], threadId, messageId, model, usage),
    /** A deleted thread's deliveries go, sent or not; a failure is logged (the thread is deleted either way). */
    async forgetThread(threadId: string): Promise<void> {
      try {
        await deps.webhooks.forgetThread(threadId)
      } catch (error) {
        deps.log.error("could not remove a deleted thread's webhook deliveries", { threadId, error: String(error) })
      }
    },
  }
}

/**
 * Webhook events after the writes that make them: every thread created (API, MCP, web pages, continuations) and every
 * answer stored (by this engine, or ended here for another instance), whoever wrote it; a deleted thread's deliveries go.
 */
export function queueWebhookEvents(events: DomainEvents, emitter: WebhookEmitter): void {
  events.on('thread.created', (event) => emitter.threadCreated(event.threadId))
  events.on('answer.stored', (event) =>
    emitter.answerEnded(event.threadId, event.messageId, event.outcome, event.model, event.usage ?? null),
  )
  events.on('thread.deleted', (event) => emitter.forgetThread(event.threadId))
}
