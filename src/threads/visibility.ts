// Who sees which thread, and who may act on it. A thread exists for a caller only as the visibility rule has it
// (Viewer in repository.ts); anything else is 404, so that IDs reveal nothing. Actions only the owner may take are
// 403 for the other members who see the thread.
import type { Caller } from '../auth/model'
import { forbidden, notFound } from '../shared/errors'
import type { ThreadRepository, ThreadRow, Viewer } from './repository'

/**
 * The visibility rule for a thread already read (the change feed's shared reader): the same rule as the SQL every
 * statement uses (visibleTo in repository.common.ts).
 */
export function mayView(
  viewer: Viewer,
  thread: { organizationId: number; ownerId: number; isPrivate: boolean },
): boolean {
  if (viewer.sees === 'own') return thread.ownerId === viewer.userId
  return thread.organizationId === viewer.organizationId && (!thread.isPrivate || thread.ownerId === viewer.userId)
}

/** The thread, or 404 when it does not exist for this caller (private, other organization, or unknown). */
export async function requireVisibleThread(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
): Promise<ThreadRow> {
  const row = await threads.findVisible(caller, threadId)
  if (!row) throw notFound('Thread')
  return row
}

/** The thread, for an action only its owner may take: 404 when invisible, 403 for other members who see it. */
export async function requireOwnedThread(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  action: string,
): Promise<ThreadRow> {
  const row = await requireVisibleThread(threads, caller, threadId)
  if (row.ownerId !== caller.userId) throw forbidden(`Only the owner of a thread can ${action}`)
  return row
}

/** The message's thread, or 404 when either is not there for this caller. */
export async function requireMessage(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
): Promise<ThreadRow> {
  const thread = await requireVisibleThread(threads, caller, threadId)
  if (!(await threads.findMessage(threadId, messageId))) throw notFound('Message')
  return thread
}
