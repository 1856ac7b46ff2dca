// The thread's tree: messages with the same parent and role are versions of each other (an edit, a regenerated
// answer), and the thread lists one path through them. Here are the rules of the writes that make and switch versions
// (regenerate, edit, activate: conversation.ts starts the answers they queue) and the reads that show them (a
// message's versions and details, the places of a page of messages for the thread page). The writes are the
// repository's units of work, conditional on the thread's state as sending is.
import type { Caller } from '../auth/model'
import type { ToolCallRepository } from '../generation/tool-calls.repository'
import { conflict, invalidRequest, notFound } from '../shared/errors'
import type { UsageRepository } from '../usage/repository'
import { answerUsages } from '../usage/service'
import { type Links, toMessage } from './links'
import { attachmentBlocks } from './messages'
import type { ThreadsModel } from './model'
import type { ThreadRepository, TreeMessageRow, TreeRefusal, TreeWrite } from './repository'
import { toolCallsOf } from './tool-calls'
import { requireOwnedThread, requireVisibleThread } from './visibility'

/** Where a message stands among its versions, for the thread page's `‹ 2/3 ›`. */
export interface VersionPlace {
  /** From 1, oldest first. */
  version: number
  versions: number
  previousId: string | null
  nextId: string | null
  /** The model that wrote an answer; null for other messages and when not recorded. */
  model: string | null
}

type Write = 'regenerate' | 'edit' | 'activate'

const inactiveMessage =
  'The message is not on the thread’s active path (an earlier version, or replaced by a summary): only the ' +
  'messages GET …/messages lists can be regenerated or edited'

/** The API's answer to a refused tree write. */
async function refusal(threads: ThreadRepository, threadId: string, write: Write, reason: TreeRefusal) {
  switch (reason) {
    case 'busy': {
      const state = (await threads.state(threadId)) ?? 'gone'
      return conflict(
        write === 'activate'
          ? `The thread is ${state}; versions can be switched only while no answer runs (ready or error)`
          : `The thread is ${state}; a message can be ${write === 'edit' ? 'edited' : 'regenerated'} only in ready or error`,
      )
    }
    case 'missing':
      return notFound('Message')
    case 'role':
      return invalidRequest(
        write === 'activate'
          ? 'A summary has no versions to activate'
          : `Only a user message can be ${write === 'edit' ? 'edited' : 'regenerated'}`,
      )
    case 'inactive':
      return invalidRequest(
        write === 'activate' ? 'No version of this message is on the thread’s active path' : inactiveMessage,
      )
    case 'summarized':
      return invalidRequest('This version is older than the summary that now stands for the start of the thread')
  }
}

async function settled<T>(threads: ThreadRepository, threadId: string, write: Write, result: TreeWrite<T>) {
  if ('ok' in result) return result.ok
  throw await refusal(threads, threadId, write, result.refused)
}

/**
 * The owner's message to regenerate or edit: 404 when the thread or message is not there for the caller, 403 for
 * other members, 400 unless it is a user message on the active path. The unit of work checks again (and the state).
 */
async function requireActiveUserMessage(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
  write: 'regenerate' | 'edit',
): Promise<TreeMessageRow> {
  await requireOwnedThread(threads, caller, threadId, `${write} its messages`)
  const node = await threads.messageNode(threadId, messageId)
  if (!node) throw notFound('Message')
  if (node.role !== 'user') throw await refusal(threads, threadId, write, 'role')
  if (!node.active) throw await refusal(threads, threadId, write, 'inactive')
  return node
}

/** What decides whether a model may answer for an organization (the models feature; conversation.ts's port). */
export type MayUseModel = (organizationId: number, modelId: string) => Promise<boolean>

/**
 * Regenerates the answer to a user message on the active path: its later messages leave the path, its earlier
 * answers stay as versions, and its answer is queued again (conversation.ts starts it). `ready` or `error` only (409
 * otherwise): regenerating is how a thread in `error` goes on. A `model` the organization may not use is 400.
 */
export async function regenerateAnswer(
  threads: ThreadRepository,
  mayUse: MayUseModel,
  caller: Caller,
  threadId: string,
  messageId: string,
  body: ThreadsModel.regenerateBody,
  now: number,
): Promise<{ message_id: string }> {
  await requireActiveUserMessage(threads, caller, threadId, messageId, 'regenerate')
  if (body.model !== undefined && !(await mayUse(caller.organizationId, body.model))) {
    throw invalidRequest(`Unknown model ${body.model}, or not one this organization may use`)
  }
  await settled(threads, threadId, 'regenerate', await threads.regenerate(threadId, messageId, body.model ?? null, now))
  return { message_id: messageId }
}

/**
 * Edits a user message on the active path: a new user message beside it (the same parent) becomes active, with the
 * send body's rules, and its answer is queued (conversation.ts starts it). `ready` or `error` only (409 otherwise).
 */
export async function editMessage(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
  body: ThreadsModel.sendMessageBody,
  now: number,
): Promise<{ message_id: string }> {
  await requireActiveUserMessage(threads, caller, threadId, messageId, 'edit')
  const blocks = await attachmentBlocks(threads, threadId, body.attachment_ids)
  const contents: ThreadsModel.contentBlock[] = [{ type: 'text', text: body.text }, ...blocks]
  const edited = await threads.edit(threadId, messageId, contents, now)
  return { message_id: await settled(threads, threadId, 'edit', edited) }
}

/**
 * Makes a version (a user or assistant message) and its latest descendants the thread's active path. Owner only;
 * 409 while an answer runs; activating the active version changes nothing.
 */
export async function activateVersion(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
  now: number,
): Promise<void> {
  await requireOwnedThread(threads, caller, threadId, 'switch its versions')
  await settled(threads, threadId, 'activate', await threads.activate(threadId, messageId, now))
}

/** A message's versions (the list envelope, every one, oldest first) and which of them is active. */
export async function listVersions(
  threads: ThreadRepository,
  caller: Caller,
  threadId: string,
  messageId: string,
  links: Links,
): Promise<ThreadsModel.versionList> {
  await requireVisibleThread(threads, caller, threadId)
  const rows = await threads.versions(threadId, messageId)
  if (!rows) throw notFound('Message')
  return {
    data: rows.map((row) => toMessage(row, links)),
    first_id: rows[0]?.id ?? null,
    last_id: rows.at(-1)?.id ?? null,
    has_more: false,
    active_id: rows.find((row) => row.active)?.id ?? null,
  }
}

/**
 * A message's place in the tree: its parent, the model that wrote it, which version it is, and whether it is listed;
 * for an answer, what it used (null when none was recorded) and the tools it called.
 */
export async function messageDetails(
  { threads, usage, toolCalls }: { threads: ThreadRepository; usage: UsageRepository; toolCalls: ToolCallRepository },
  caller: Caller,
  threadId: string,
  messageId: string,
): Promise<ThreadsModel.messageDetails> {
  await requireVisibleThread(threads, caller, threadId)
  const rows = await threads.versions(threadId, messageId)
  const at = rows?.findIndex((row) => row.id === messageId) ?? -1
  const row = rows?.[at]
  if (!rows || !row) throw notFound('Message')
  return {
    id: row.id,
    parent_id: row.parentId,
    role: row.role,
    model: row.model,
    version: at + 1,
    versions: rows.length,
    active: row.active,
    ...(row.role === 'assistant'
      ? {
          usage: (await answerUsages(usage, [row.id])).get(row.id) ?? null,
          tool_calls: (await toolCallsOf(toolCalls, [row.id])).get(row.id) ?? [],
        }
      : {}),
  }
}

/**
 * Where each of a page of the thread's messages stands among its versions, read in one statement for the page. The
 * caller has checked that the thread may be read; messages not of the thread are left out.
 */
export async function versionsOf(
  threads: ThreadRepository,
  threadId: string,
  messageIds: string[],
): Promise<Map<string, VersionPlace>> {
  const places = new Map<string, VersionPlace>()
  for (const [id, { versionIds, model }] of await threads.versionsOf(threadId, messageIds)) {
    const at = versionIds.indexOf(id)
    places.set(id, {
      version: at + 1,
      versions: versionIds.length,
      previousId: versionIds[at - 1] ?? null,
      nextId: versionIds[at + 1] ?? null,
      model,
    })
  }
  return places
}
