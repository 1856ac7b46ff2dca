// The threads feature's storage contract: threads, their messages and each person's feedback, as plain data in
// and out. Services hold the rules (who gets 404 or 403, pages, validation) and call these methods. Each method is
// one unit of work: where it must be atomic, its guarantee is written here and holds however many callers race,
// on a pooled database under READ COMMITTED as on SQLite. The SQLite implementation is repository.sqlite.ts.
import type { Caller } from '../auth/model'
import type { ThreadsModel } from './model'

export type ThreadState = ThreadsModel.thread['state']
export type MessageRole = ThreadsModel.message['role']
export type ContentBlock = ThreadsModel.contentBlock

/**
 * Who is looking, as far as the threads they may see go: never another organization's; private ones only their
 * owner's; with `sees: 'own'`, only their own.
 */
export type Viewer = Pick<Caller, 'sees' | 'organizationId' | 'userId'>

export interface ThreadRow {
  id: string
  name: string | null
  state: ThreadState
  isPrivate: boolean
  archived: boolean
  ownerId: number
  /** The owner's public ID, as the API shows it. */
  ownerSub: string
  ownerName: string | null
  /** Milliseconds since the epoch, as are all times here. */
  createdAt: number
  updatedAt: number
}

export interface MessageRow {
  id: string
  threadId: string
  role: MessageRole
  /** Exactly as they were stored: the same blocks with their fields in the same order. */
  contents: ContentBlock[]
  createdAt: number
}

/**
 * A thread's place in a list. Every write to a thread moves it to the end of the update order: `updateSeq` is its
 * place there, unique and growing with each write, and `updatedAt` never decreases along it, so the `updated_at`
 * order and its cursors never reorder on ties or clock steps.
 */
export interface ListCursor {
  id: string
  createdAt: number
  updateSeq: number
}

/** One page of a thread list: the viewer's visible threads that pass every filter, in the order asked for. */
export interface ThreadListQuery {
  viewer: Viewer
  sortBy: 'created_at' | 'updated_at'
  descending: boolean
  /** Only the viewer's own threads (true), or only other people's (false). */
  owned?: boolean
  private?: boolean
  /** Whether archived threads are listed too. */
  archived: boolean
  /**
   * Only threads whose name and active messages together hold every one of these words, as search.ts splits
   * them. A search sees every write committed before it starts, and lists exactly the threads (and in exactly
   * the order) that the same query without words would, less those that do not match.
   */
  words?: string[]
  /** Only threads whose place in the update order is at least this (0: from the start). */
  seqFrom: number
  /** `updated_at` order only: no thread whose place in the update order is beyond this (absent: no end). */
  seqTo?: number
  /** `created_at` order only: only threads strictly after this (created_at, id) key in the order asked for. */
  after?: { createdAt: number; id: string }
  limit: number
}

export interface NewThread {
  organizationId: number
  ownerId: number
  name: string | null
  isPrivate: boolean
  /**
   * Its first message, if any. A `user` message starts the thread `waiting` with the message's answer queued; a
   * `summary` (a continuation's seed) or none leaves it `ready`.
   */
  first?: { role: 'user' | 'summary'; contents: ContentBlock[] }
  now: number
}

export interface ThreadChanges {
  name?: string | null
  archived?: boolean
  isPrivate?: boolean
}

export interface Rating {
  positive: boolean
  text: string | null
}

export interface ThreadRepository {
  /**
   * The thread, if it exists for this viewer (see Viewer). One indexed lookup: it runs on nearly every request.
   */
  findVisible(viewer: Viewer, threadId: string): Promise<ThreadRow | undefined>

  /** The thread's state now, whoever asks; null once it is gone. */
  state(threadId: string): Promise<ThreadState | null>

  /** Inserts a thread owned by `ownerId` and its first message, if any, all or nothing. */
  createThread(thread: NewThread): Promise<{ threadId: string; messageId: string | null }>

  /** Applies the changes to the thread; any change, even to the same value, is a write that moves `updated_at`. */
  updateThread(threadId: string, changes: ThreadChanges, now: number): Promise<void>

  /** The last place in the update order written at or before `since` (a time), or 0 when none was. */
  updateSeqAt(since: number): Promise<number>

  /**
   * Deletes the thread and everything that hangs on it (messages, feedback, attachments' rows, queued or running
   * answers, its search document) in one unit. Returns the attachments it had, whose files the caller removes; null
   * when there was no such thread.
   */
  deleteThread(threadId: string): Promise<{ id: string; resized: boolean }[] | null>

  /**
   * Where a list continues after `threadId`, or undefined when it cannot: cursors do not expire, so in
   * `created_at` order any thread of the viewer's organization marks the place (its ID already tells when it was
   * made), and in `updated_at` order, where the place tells when it was last written to, only a visible one.
   * A viewer with `sees: 'own'` continues only after their own threads.
   */
  listCursor(viewer: Viewer, threadId: string, sortBy: ThreadListQuery['sortBy']): Promise<ListCursor | undefined>

  /** Up to `limit` threads of the list `query` describes, in its order (see ThreadListQuery). */
  listThreads(query: ThreadListQuery): Promise<ThreadRow[]>

  /**
   * Up to `limit` of the thread's active messages, oldest first by (created_at, id), strictly after the message
   * `after` when given; null when `after` is not a message of this thread.
   */
  listMessages(threadId: string, page: { after?: string; limit: number }): Promise<MessageRow[] | null>

  /** The message's role, if it is a message of this thread (active or not). */
  findMessage(threadId: string, messageId: string): Promise<{ role: MessageRole } | undefined>

  /** The thread's latest active message, or null when it has none. */
  latestMessage(threadId: string): Promise<{ id: string; contents: ContentBlock[] } | null>

  /** Every active message of the thread, oldest first, for a continuation's extract. */
  activeMessages(threadId: string): Promise<{ role: MessageRole; contents: ContentBlock[] }[]>

  /**
   * The messages that answer a user message, oldest first, active or not: a poll and a replay still show an answer
   * a summary has since replaced in the thread's list.
   */
  replies(messageId: string): Promise<MessageRow[]>

  /** The kinds of the files among `attachmentIds` that were uploaded to this thread, by ID; others are left out. */
  attachmentKinds(threadId: string, attachmentIds: string[]): Promise<Map<string, 'image' | 'pdf' | 'text'>>

  /**
   * Sends a user message: moves a `ready` thread to `waiting`, appends the message and queues its answer, all or
   * nothing. A message is dated no earlier than its thread's newest, even when the clock steps back, so that
   * messages list, and reach the model, in the order they were written. Null, with nothing written, when the
   * thread is not `ready`. Of any number of concurrent sends to a ready thread, exactly one gets a message ID.
   * The caller hands the message ID to the generation engine once this resolves.
   */
  sendUserMessage(threadId: string, contents: ContentBlock[], now: number): Promise<string | null>

  /** The user message whose answer is queued or running in this thread, newest first, if any. */
  pendingMessageId(threadId: string): Promise<string | null>

  /** The thread's latest failed answer, with its stored reason (null when none was stored), if any failed. */
  lastFailure(threadId: string): Promise<{ error: string | null } | null>

  /** Stores the person's rating of a message: one per person per message, a repeat replaces it (an upsert). */
  rate(rating: {
    messageId: string
    userId: number
    positive: boolean
    text: string | null
    now: number
  }): Promise<void>

  /** One person's ratings of the given messages, by message ID. */
  ratingsBy(userId: number, messageIds: string[]): Promise<Map<string, Rating>>
}
