// The conversation use case: the one way a message is sent and its answer started, whoever sends it (the API, the
// web pages, MCP). A user message is stored with its queue entry in one unit (the repository), then handed to the
// generation engine, which runs it; a thread created here is told to what follows a committed write (webhooks).
// Nothing else calls the engine's `enqueue` (test/conversation-use-case.test.ts checks the source): a new way to ask
// for an answer (editing a message, regenerating one) is a method here, not another copy of the pairing.
import type { Caller } from '../auth/model'
import type { DomainEvents } from '../shared/events'
import type { Clock } from '../shared/time'
import { continueThread, type FileNames } from './continuation'
import type { Links } from './links'
import { sendMessage } from './messages'
import type { ThreadsModel } from './model'
import type { ThreadRepository } from './repository'
import { createThread } from './threads'
import { activateVersion, editMessage, regenerateAnswer } from './versions'

/** What starts answers: the generation engine, told of a user message whose queue entry has just committed. */
export interface AnswerQueue {
  enqueue(messageId: string, threadId: string): void
}

/**
 * Which models an organization may ask for: the models feature (src/models/) implements it; app.ts composes it. A
 * regenerate's `model` is checked with it (400 when false).
 */
export interface ModelChoice {
  mayUse(organizationId: number, modelId: string): Promise<boolean>
}

/**
 * Whether a person may start another answer this month: the quotas feature (src/quotas/) implements it; app.ts
 * composes it. `require` throws the 429 `quota_exceeded` AppError (with Retry-After) when their organization's or
 * their own monthly budget is used up. Called before anything is stored, so a refused request leaves the thread as
 * it was (`ready`); an answer already running is never checked again, so it is never cut off.
 */
export interface QuotaCheck {
  require(caller: Caller): Promise<void>
}

export interface ConversationDeps {
  threads: ThreadRepository
  answers: AnswerQueue
  events: DomainEvents
  clock: Clock
  links: Links
  /** The attachments' names, which a continuation's extract quotes. */
  fileNames: FileNames
  models: ModelChoice
  quotas: QuotaCheck
}

export type Conversation = ReturnType<typeof createConversation>

export function createConversation(deps: ConversationDeps) {
  const { threads, answers, events, clock, quotas } = deps
  return {
    /**
     * The quota check alone, for callers that store something of their own before they send (the pages store a new
     * thread and its files first, MCP a thread's model): refused here, they store nothing. Every method below that
     * starts an answer checks again.
     */
    async requireQuota(caller: Caller): Promise<void> {
      await quotas.require(caller)
    },

    /**
     * Creates a thread owned by the caller (threads.ts: createThread); with `text`, that is its first message and
     * its answer starts. `message_id` is null for a thread created empty.
     */
    async start(
      caller: Caller,
      body: ThreadsModel.createThreadBody,
    ): Promise<{ thread_id: string; message_id: string | null }> {
      if (body.text !== undefined) await quotas.require(caller)
      const created = await createThread(threads, caller, body, clock.now())
      await events.emit({ type: 'thread.created', threadId: created.thread_id })
      if (created.message_id) answers.enqueue(created.message_id, created.thread_id)
      return created
    },

    /** Sends a user message to a `ready` thread (messages.ts: sendMessage) and starts its answer. */
    async send(caller: Caller, threadId: string, body: ThreadsModel.sendMessageBody): Promise<{ message_id: string }> {
      await quotas.require(caller)
      const sent = await sendMessage(threads, caller, threadId, body, clock.now())
      answers.enqueue(sent.message_id, threadId)
      return sent
    },

    /**
     * Regenerates the answer to a user message on the active path (versions.ts: regenerateAnswer) and starts it. The
     * poll and stream of `message_id` follow the new answer. `ready` or `error` only: how a thread in error goes on.
     */
    async regenerate(
      caller: Caller,
      threadId: string,
      messageId: string,
      body: { model?: string },
    ): Promise<{ message_id: string }> {
      await quotas.require(caller)
      const mayUse = (organizationId: number, modelId: string) => deps.models.mayUse(organizationId, modelId)
      const queued = await regenerateAnswer(threads, mayUse, caller, threadId, messageId, body, clock.now())
      answers.enqueue(messageId, threadId)
      return queued
    },

    /** Edits a user message on the active path (versions.ts: editMessage): its new version's answer starts. */
    async edit(
      caller: Caller,
      threadId: string,
      messageId: string,
      body: ThreadsModel.sendMessageBody,
    ): Promise<{ message_id: string }> {
      await quotas.require(caller)
      const edited = await editMessage(threads, caller, threadId, messageId, body, clock.now())
      answers.enqueue(edited.message_id, threadId)
      return edited
    },

    /** Switches the thread's active path to a version and its latest descendants (versions.ts: activateVersion). */
    async activate(caller: Caller, threadId: string, messageId: string): Promise<void> {
      await activateVersion(threads, caller, threadId, messageId, clock.now())
    },

    /** Continues a thread in `error` in a new one (continuation.ts); no answer starts until a message is sent. */
    async continueThread(caller: Caller, threadId: string): Promise<{ thread_id: string; message_id: string }> {
      const continued = await continueThread(threads, deps.fileNames, caller, threadId, deps.links, clock.now())
      await events.emit({ type: 'thread.created', threadId: continued.thread_id })
      return continued
    },
  }
}
