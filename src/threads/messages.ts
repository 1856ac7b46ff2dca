// Messages: reading a thread's messages, sending one (which queues its answer), and where the thread's answers
// stand. The content blocks are stored and returned exactly as sent.
import type { Caller } from '../auth/model'
import { conflict, invalidRequest } from '../shared/errors'
import { type Links, toMessage } from './links'
import { clampLimit, envelope } from './listing'
import type { ThreadsModel } from './model'
import type { ContentBlock, ThreadRepository } from './repository'
import { nameFromMessage } from './threads'
import { requireOwnedThread, requireVisibleThread } from './visibility'

export async function listMessages(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  query: { limit?: number; after?: string },
  links: Links,
): Promise<ThreadsModel.messageList> {
  await requireVisibleThread(threads, caller, threadId)
  const limit = clampLimit(query.limit)
  const rows = await threads.listMessages(threadId, { after: query.after, limit: limit + 1 })
  if (!rows) throw invalidRequest('after does not name a message of this thread')
  const page = envelope(rows, limit)
  return { ...page, data: page.data.map((row) => toMessage(row, links)) }
}

/** Every message the thread lists, oldest first, read a page at a time: for the thread page and exports. */
export async function allMessages(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  links: Links,
): Promise<ThreadsModel.message[]> {
  const all: ThreadsModel.message[] = []
  let after: string | undefined
  for (;;) {
    const page = await listMessages(threads, caller, threadId, { limit: 200, after }, links)
    all.push(...page.data)
    if (!page.has_more || page.last_id === null) return all
    after = page.last_id
  }
}

/** The attachment IDs a message's `image` and `document` blocks name, in order. */
export function attachmentIdsOf(contents: ContentBlock[]): string[] {
  return contents.flatMap((block) => ('attachment_id' in block ? [block.attachment_id] : []))
}

/**
 * The content blocks for the files a message references, in the order given. Each ID must name a file uploaded
 * to this same thread: an unknown ID and another thread's ID get the same 400, so IDs reveal nothing.
 */
export async function attachmentBlocks(
  threads: ThreadRepository,
  threadId: string,
  ids: string[] | undefined,
): Promise<ContentBlock[]> {
  if (!ids || ids.length === 0) return []
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
  if (repeated) throw invalidRequest(`Attachment ${repeated} is listed more than once`)
  const kinds = await threads.attachmentKinds(threadId, ids)
  return ids.map((id) => {
    const kind = kinds.get(id)
    if (!kind) throw invalidRequest(`Unknown attachment ${id}: attach only files uploaded to this thread`)
    return { type: kind === 'image' ? 'image' : 'document', attachment_id: id }
  })
}

/**
 * Sends a user message: owner only, and only to a `ready` thread. Of two concurrent sends to a ready thread exactly
 * one is stored; the other gets 409. Its answer is queued with it (conversation.ts starts it).
 */
export async function sendMessage(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  body: ThreadsModel.sendMessageBody,
  now: number,
): Promise<{ message_id: string }> {
  const thread = await requireOwnedThread(threads, caller, threadId, 'send messages to it')
  const blocks = await attachmentBlocks(threads, threadId, body.attachment_ids)
  // A thread created empty and without a name (files first, through the API) is named by its first message.
  const naming = thread.name === null && (await threads.latestMessage(threadId)) === null
  const messageId = await threads.sendUserMessage(threadId, [{ type: 'text', text: body.text }, ...blocks], now)
  if (!messageId) throw conflict(`The thread is ${thread.state}; a new message is accepted only in ready`)
  const name = naming ? nameFromMessage(body.text) : null
  if (name !== null) await threads.updateThread(threadId, { name }, now)
  return { message_id: messageId }
}

/** Why the thread's latest failed answer failed, as the stream's `error` event said it. */
export async function lastFailure(threads: ThreadRepository, threadId: string): Promise<string | null> {
  const failure = await threads.lastFailure(threadId)
  return failure ? (failure.error ?? 'The response failed') : null
}
