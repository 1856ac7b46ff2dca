// What the MCP tools do, as plain functions of (deps, caller, arguments): each goes through the same services
// as the API (visibility, ownership, thread states, limits), and answers with the API's objects. Waiting for an
// answer listens to the generation engine's hub, as the API's stream does (following an answer that another instance
// is generating into this one's hub first).

import {
  checkFormFiles,
  discardCheckedFiles,
  requireRoomForUpload,
  storeFormFiles,
  type UploadDeps,
} from '../attachments/service'
import type { AuthDeps } from '../auth'
import type { Caller } from '../auth/model'
import { pollAnswer } from '../generation'
import type { GenerationRepository } from '../generation/repository'
import type { AnswerEngine } from '../generation/service'
import {
  getThreadSettings,
  listModels,
  type ModelsDeps,
  modelChoice,
  type ToolNames,
  threadModel,
  updateThreadSettings,
} from '../models/service'
import { AppError, conflict, invalidRequest } from '../shared/errors'
import type { Listener, OpenStreams } from '../shared/streams/sse'
import type { Conversation } from '../threads/conversation'
import { submitFeedback } from '../threads/feedback'
import type { Links } from '../threads/links'
import { searchThreads as findThreads, listThreads } from '../threads/listing'
import { listMessages } from '../threads/messages'
import type { ThreadsModel } from '../threads/model'
import { getThread } from '../threads/threads'
import { requireMessage } from '../threads/visibility'
import type { McpModel } from './model'

export interface McpDeps extends UploadDeps, AuthDeps, ModelsDeps {
  /** The tools a thread's settings may name (thread settings are changed with the API's rules). */
  toolNames: ToolNames
  /** Answers' status, read while a tool waits on one. */
  generations: GenerationRepository
  /** Answers' hub, to wait on them (sending goes through `conversation`). */
  engine: AnswerEngine
  conversation: Conversation
  /** A wait holds a connection and a place among the answer's listeners, as a stream does, and counts as one. */
  streams: OpenStreams
  links: Links
}

/** How a tool waits for an answer: for at most `ms`, until the call is cancelled, telling `onText` what arrives. */
export interface AnswerWait {
  ms: number
  signal: AbortSignal
  /** Each piece of the answer as it arrives, and the answer's length after it. */
  onText?: (text: string, end: number) => void
}

// ---------------------------------------------------------------------------------------------------------
// Reading

export async function searchThreads(
  deps: McpDeps,
  caller: Caller,
  input: { q: string; limit?: number; after?: string; archived?: boolean },
): Promise<McpModel.searchResults> {
  const query = { q: input.q, limit: input.limit ?? 20, after: input.after, archived: input.archived }
  const page = await findThreads(deps.threads, caller, query, deps.links)
  return {
    ...page,
    data: page.data.map(({ thread, ...match }) => ({ ...thread, match })),
  }
}

export async function listThreadPage(
  deps: McpDeps,
  caller: Caller,
  input: { limit?: number; after?: string; owned?: boolean; archived?: boolean },
): Promise<ThreadsModel.threadList> {
  const query = { limit: input.limit ?? 20, after: input.after, owned: input.owned, archived: input.archived }
  return await listThreads(deps.threads, caller, query, deps.links)
}

export async function readThread(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; limit?: number; after?: string },
): Promise<{ thread: ThreadsModel.thread; messages: ThreadsModel.messageList; model: { id: string; name: string } }> {
  const thread = await getThread(deps.threads, caller, input.thread_id, deps.links)
  const query = { limit: input.limit ?? 50, after: input.after }
  const messages = await listMessages(deps.threads, caller, input.thread_id, query, deps.links)
  const { id, name } = await threadModel(deps, caller.organizationId, input.thread_id)
  return { thread, messages, model: { id, name } }
}

/** The models the person's organization may use (the API's GET /models). */
export async function modelsFor(deps: McpDeps, caller: Caller) {
  return await listModels(deps, caller.organizationId)
}

export async function threadNow(deps: McpDeps, caller: Caller, threadId: string): Promise<ThreadsModel.thread> {
  return await getThread(deps.threads, caller, threadId, deps.links)
}

/** Where the answer to a user message is now: the API's poll (GET …/response), with the thread's link. */
export async function answerOf(
  deps: McpDeps,
  caller: Caller,
  threadId: string,
  messageId: string,
): Promise<McpModel.answer> {
  const thread = await requireMessage(deps.threads, caller, threadId, messageId)
  const answer = await pollAnswer(deps, thread, messageId)
  const base = { thread_id: threadId, message_id: messageId, app_url: deps.links.threadUrl(threadId) }
  return answer.status === 'processing' ? { ...base, status: 'processing', messages: [] } : { ...base, ...answer }
}

/** The answer of a message just sent, for a token that may not read it back: only where to find it later. */
export function unreadAnswer(deps: McpDeps, threadId: string, messageId: string): McpModel.answer {
  const base = { thread_id: threadId, message_id: messageId, app_url: deps.links.threadUrl(threadId) }
  return { ...base, status: 'processing', messages: [] }
}

/**
 * Resolves once the answer to `messageId` has ended (it is then stored), `wait.ms` have passed, or the call was
 * cancelled. Tokens already produced are passed to `onText` first, as a stream joining mid-answer gets them.
 */
async function answerEnded(engine: McpDeps['engine'], messageId: string, wait: AnswerWait): Promise<void> {
  if (wait.ms <= 0 || wait.signal.aborted) return
  // Running on another instance: followed into this one's hub.
  await engine.watch(messageId)
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const end = (): void => {
      clearTimeout(timer)
      wait.signal.removeEventListener('abort', end)
      subscription?.leave(listener)
      resolve()
    }
    const listener: Listener = { token: (text, length) => wait.onText?.(text, length), done: end, error: end }
    const subscription = engine.hub.subscribe(messageId, 0, listener)
    // Not live here: already ended. The poll says how.
    if (!subscription) return resolve()
    timer = setTimeout(end, wait.ms)
    wait.signal.addEventListener('abort', end, { once: true })
  })
}

/**
 * A place among the caller's open streams for a wait, or false when the stream limit refuses one: the message is
 * stored by then, so the call still succeeds, with the answer as it stands (`processing`) instead of a wait.
 */
function takeStream(deps: McpDeps, caller: Caller): boolean {
  try {
    deps.streams.take(caller.userId)
    return true
  } catch (error) {
    if (error instanceof AppError && error.status === 429) return false
    throw error
  }
}

/** Waits for the answer to a message as `wait` allows (if a stream is free), then says where it is. */
export async function awaitAnswer(
  deps: McpDeps,
  caller: Caller,
  threadId: string,
  messageId: string,
  wait: AnswerWait,
): Promise<McpModel.answer> {
  if (wait.ms > 0 && !wait.signal.aborted && takeStream(deps, caller)) {
    try {
      await answerEnded(deps.engine, messageId, wait)
    } finally {
      deps.streams.release(caller.userId)
    }
  }
  return await answerOf(deps, caller, threadId, messageId)
}

// ---------------------------------------------------------------------------------------------------------
// Writing

export async function startThread(
  deps: McpDeps,
  caller: Caller,
  input: { name?: string; is_private?: boolean; text?: string; model?: string },
): Promise<{ thread_id: string; message_id: string | null; app_url: string }> {
  if (input.model === undefined) {
    const created = await deps.conversation.start(caller, {
      name: input.name,
      is_private: input.is_private,
      text: input.text,
    })
    return { ...created, app_url: deps.links.threadUrl(created.thread_id) }
  }
  // The thread's model must be set before its first answer is queued: an unusable model is refused before anything
  // is made, then the thread is made empty, given its model, and sent its first message (which names it, as a
  // thread started with text is named).
  await requireUsable(deps, caller, input.model)
  // With text an answer starts: refused over a budget before the thread is made.
  if (input.text !== undefined) await deps.conversation.requireQuota(caller)
  const created = await deps.conversation.start(caller, { name: input.name, is_private: input.is_private })
  await updateThreadSettings(deps, caller, created.thread_id, { model: input.model })
  const message_id =
    input.text === undefined
      ? null
      : (await deps.conversation.send(caller, created.thread_id, { text: input.text })).message_id
  return { thread_id: created.thread_id, message_id, app_url: deps.links.threadUrl(created.thread_id) }
}

async function requireUsable(deps: McpDeps, caller: Caller, model: string): Promise<void> {
  if (await modelChoice(deps).mayUse(caller.organizationId, model)) return
  throw invalidRequest(`The model "${model}" is not available to your organization: list_models names those that are`)
}

export async function send(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; text: string; attachment_ids?: string[]; model?: string },
): Promise<{ message_id: string }> {
  const body = { text: input.text, attachment_ids: input.attachment_ids }
  if (input.model === undefined) return await deps.conversation.send(caller, input.thread_id, body)
  // The model is the thread's from this message on, set before the message so that its answer already uses it; a
  // thread that refuses the message (busy, or another message won a race) keeps the model it had.
  const thread = await getThread(deps.threads, caller, input.thread_id, deps.links)
  if (thread.state !== 'ready') throw conflict(`The thread is ${thread.state}; a new message is accepted only in ready`)
  await requireUsable(deps, caller, input.model)
  // Before the thread's model changes: refused over a budget, the thread keeps it as it was.
  await deps.conversation.requireQuota(caller)
  const before = await getThreadSettings(deps, caller, input.thread_id)
  await updateThreadSettings(deps, caller, input.thread_id, { model: input.model })
  try {
    return await deps.conversation.send(caller, input.thread_id, body)
  } catch (error) {
    await updateThreadSettings(deps, caller, input.thread_id, { model: before.model })
    throw error
  }
}

/** A new answer to one of the person's messages (the API's regenerate); the earlier answer stays as a version. */
export async function regenerate(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; message_id: string; model?: string },
): Promise<{ message_id: string }> {
  return await deps.conversation.regenerate(caller, input.thread_id, input.message_id, { model: input.model })
}

type ChoiceBlock = Extract<ThreadsModel.contentBlock, { type: 'user_get_choice' }>

/**
 * The question a message asks, if it is still open: the web page offers its choices only on the thread's latest
 * message, and the answer is the person's next message, as there.
 */
async function openQuestion(deps: McpDeps, caller: Caller, threadId: string, messageId: string): Promise<ChoiceBlock> {
  await requireMessage(deps.threads, caller, threadId, messageId)
  const latest = await deps.threads.latestMessage(threadId)
  if (latest?.id !== messageId) {
    throw conflict('This question is no longer open: the thread has moved on since it was asked (see get_thread)')
  }
  const question = latest.contents.find((block): block is ChoiceBlock => block.type === 'user_get_choice')
  if (!question) throw invalidRequest('This message asks no question to choose from; reply with send_message')
  return question
}

/** Answers a `user_get_choice` question with one of its choices: a user message, as the web page's buttons send. */
export async function answerChoice(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; message_id: string; choice: string },
): Promise<{ message_id: string }> {
  const question = await openQuestion(deps, caller, input.thread_id, input.message_id)
  const wanted = input.choice.trim().toLowerCase()
  const choice = question.choices.find((option) => option.trim().toLowerCase() === wanted)
  if (choice === undefined) {
    const options = question.choices.map((option) => JSON.stringify(option)).join(', ')
    throw invalidRequest(`choice must be one of ${options}; to answer in other words, use send_message`)
  }
  return await send(deps, caller, { thread_id: input.thread_id, text: choice })
}

/** Standard or URL-safe base64, padded or not, whitespace ignored; anything else is refused rather than guessed. */
function decodeBase64(text: string): Uint8Array {
  const compact = text.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
    throw invalidRequest('content_base64 is not valid base64')
  }
  return Buffer.from(compact.replaceAll('-', '+').replaceAll('_', '/'), 'base64')
}

/**
 * Stores one file in a thread its caller owns, by the upload's rules: checked by its bytes in the inspect process
 * like a form's files, within the thread's quota.
 */
export async function attachFile(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; filename: string; content_base64: string; media_type?: string },
): Promise<{ thread_id: string; attachment: { id: string; filename: string }; app_url: string }> {
  // Refused before the bytes are decoded or inspected, as the upload route refuses before reading its body.
  await requireRoomForUpload(deps, caller, input.thread_id)
  const bytes = decodeBase64(input.content_base64)
  const file = new File([bytes], input.filename, { type: input.media_type ?? '' })
  const checked = await checkFormFiles(deps, [file])
  try {
    const [attachment] = await storeFormFiles(deps, caller, input.thread_id, checked)
    if (!attachment) throw invalidRequest('The file is empty')
    return { thread_id: input.thread_id, attachment, app_url: deps.links.threadUrl(input.thread_id) }
  } finally {
    // Stored files have left their temporary names: this removes only what was checked and never stored.
    await discardCheckedFiles(checked)
  }
}

export async function rate(
  deps: McpDeps,
  caller: Caller,
  input: { thread_id: string; message_id: string; positive: boolean; feedback_text?: string },
): Promise<{
  thread_id: string
  message_id: string
  positive: boolean
  feedback_text: string | null
  app_url: string
}> {
  const body = { positive: input.positive, feedback_text: input.feedback_text }
  await submitFeedback(deps.threads, caller, input.thread_id, input.message_id, body, deps.clock.now())
  return {
    thread_id: input.thread_id,
    message_id: input.message_id,
    positive: input.positive,
    feedback_text: input.feedback_text ?? null,
    app_url: deps.links.messageUrl(input.thread_id, input.message_id),
  }
}
