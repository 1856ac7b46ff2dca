// Threads themselves: starting one, reading it, changing it, stopping its answer and deleting it.

import { keysOf } from '../attachments/keys'
import type { Caller } from '../auth/model'
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import { conflict, notFound } from '../shared/errors'
import type { DomainEvents } from '../shared/events'
import type { Logger } from '../shared/log'
import type { BlobStore } from '../storage/blobs'
import { titleFromMarkdown } from '../web/markdown'
import { type Links, toThread } from './links'
import type { ThreadsModel } from './model'
import type { ThreadRepository } from './repository'
import { requireOwnedThread, requireVisibleThread } from './visibility'

export async function getThread(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  links: Links,
): Promise<ThreadsModel.thread> {
  return toThread(await requireVisibleThread(threads, caller, threadId), links)
}

/** How long a name taken from a message may be: a sidebar line's worth. */
export const derivedNameMaxLength = 80

/**
 * The name a thread started without one takes from its first message, wherever it was sent from (the web, the API,
 * MCP): the words as a reader sees them, not the Markdown (a first line "```js" names nothing), cut at a word.
 */
export function nameFromMessage(text: string): string | null {
  return titleFromMarkdown(text, derivedNameMaxLength)
}

/**
 * Creates a thread owned by the caller. With `text`, that is its first message: the thread starts `waiting`, and
 * its answer is queued (conversation.ts starts it). Without a name, it is named after that message.
 */
export async function createThread(
  threads: ThreadRepository,
  caller: Caller,
  body: ThreadsModel.createThreadBody,
  now: number,
): Promise<{ thread_id: string; message_id: string | null }> {
  const created = await threads.createThread({
    organizationId: caller.organizationId,
    ownerId: caller.userId,
    name: body.name ?? (body.text === undefined ? null : nameFromMessage(body.text)),
    isPrivate: body.is_private ?? false,
    first: body.text === undefined ? undefined : { role: 'user', contents: [{ type: 'text', text: body.text }] },
    now,
  })
  return { thread_id: created.threadId, message_id: created.messageId }
}

/** Renames a thread, archives or unarchives it, or changes its privacy: owner only, and any change is an update. */
export async function updateThread(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  changes: ThreadsModel.updateThreadBody,
  links: Links,
  now: number,
): Promise<ThreadsModel.thread> {
  await requireOwnedThread(threads, caller, threadId, 'change it')
  await threads.updateThread(
    threadId,
    { name: changes.name, archived: changes.archived, isPrivate: changes.is_private },
    now,
  )
  return await getThread(threads, caller, threadId, links)
}

/** What stopping needs from the generation engine. */
export interface Interrupter {
  interrupt(threadId: string): Promise<boolean>
}

/**
 * Stops the answer a thread is producing or waiting for: owner only, 409 when there is none. The thread is
 * `interrupted` until the generator lets go, then `ready` with the partial answer kept.
 */
export async function stopThread(
  threads: ThreadRepository,
  engine: Interrupter,
  caller: Caller,
  threadId: string,
  links: Links,
): Promise<ThreadsModel.thread> {
  await requireOwnedThread(threads, caller, threadId, 'stop its answer')
  if (!(await engine.interrupt(threadId))) throw conflict('The thread has no answer running or queued')
  return await getThread(threads, caller, threadId, links)
}

/**
 * Deletes a thread for good: owner only. An answer running or queued is stopped first, so that no generator is
 * left writing to it; the rows go in one unit, then the attachments' files. A file that cannot be removed now is
 * logged and left to the hourly sweep of files no row names.
 */
export async function deleteThread(
  deps: {
    threads: ThreadRepository
    engine: Interrupter
    events: Pick<DomainEvents, 'emit'>
    blobs: Pick<BlobStore, 'delete'>
    log: Logger
  },
  caller: Caller,
  threadId: string,
  now: number,
  origin: AuditOrigin,
): Promise<void> {
  const thread = await requireOwnedThread(deps.threads, caller, threadId, 'delete it')
  await deps.engine.interrupt(threadId)
  const audit = auditEntry(origin, now, {
    organizationId: caller.organizationId,
    action: 'thread.deleted',
    target: target('thread', threadId),
    detail: { owner_id: caller.userId, private: thread.isPrivate, reason: 'owner' },
  })
  const files = await deps.threads.deleteThread(threadId, now, audit)
  if (files === null) throw notFound('Thread')
  await deps.events.emit({ type: 'thread.deleted', threadId })
  await removeFiles(deps, threadId, files)
}

/**
 * Removes the files of a thread whose rows are gone. One that cannot be removed now is logged and left to the hourly
 * sweep of files no row names: the thread is deleted either way.
 */
export async function removeFiles(
  deps: { blobs: Pick<BlobStore, 'delete'>; log: Logger },
  threadId: string,
  files: { id: string; resized: boolean }[],
): Promise<void> {
  const removals = await Promise.allSettled(files.flatMap(keysOf).map((key) => deps.blobs.delete(key)))
  const failed = removals.filter((removal) => removal.status === 'rejected')
  if (failed.length > 0) {
    deps.log.warn('could not remove the files of a deleted thread; the hourly sweep will', {
      threadId,
      files: failed.length,
      error: String(failed[0]?.reason),
    })
  }
}
