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

/** What starts answers: the generation engine, told of a user message whose queue entry has just committed. */
export interface AnswerQueue {
  enqueue(messageId: string, threadId: string): void
}

export interface ConversationDeps {
  threads: ThreadRepository
  answers: AnswerQueue
  events: DomainEvents
  clock: Clock
  links: Links
  /** The attachments' names, which a continuation's extract quotes. */
  fileNames: FileNames
}

export type Conversation = ReturnType<typeof createConversation>

export function createConversation(deps: ConversationDeps) {
  const { threads, answers, events, clock } = deps
  return {
    /**
     * Creates a thread owned by the caller (threads.ts: createThread); with `text`, that is its first message and
     * its answer starts. `message_id` is null for a thread created empty.
     */
    async start(
      caller: Caller,
      body: ThreadsModel.createThreadBody,
    ): Promise<{ thread_id: string; message_id: string | null }> {
      const created = await createThread(threads, caller, body, clock.now())
      await events.emit({ type: 'thread.created', threadId: created.thread_id })
      if (created.message_id) answers.enqueue(created.message_id, created.thread_id)
      return created
    },

    /** Sends a user message to a `ready` thread (messages.ts: sendMessage) and starts its answer. */
    async send(caller: Caller, threadId: string, body: ThreadsModel.sendMessageBody): Promise<{ message_id: string }> {
      const sent = await sendMessage(threads, caller, threadId, body, clock.now())
      answers.enqueue(sent.message_id, threadId)
      return sent
    },

    /** Continues a thread in `error` in a new one (continuation.ts); no answer starts until a message is sent. */
    async continueThread(caller: Caller, threadId: string): Promise<{ thread_id: string; message_id: string }> {
      const continued = await continueThread(threads, deps.fileNames, caller, threadId, deps.links, clock.now())
      await events.emit({ type: 'thread.created', threadId: continued.thread_id })
      return continued
    },
  }
}
