// The threads feature's storage contract: threads, their messages and each person's feedback, as plain data in
// and out. Services hold the rules (who gets 404 or 403, pages, validation) and call these methods. Each method is
// one unit of work: where it must be atomic, its guarantee is written here and holds however many callers race,
// on a pooled database under READ COMMITTED as on SQLite. repository.common.ts implements what both dialects share
// (the columns, the visibility rule, every single statement); repository.sqlite.ts and repository.pg.ts the rest.

import type { Caller } from '../auth/model'
import type { AuditEntry } from '../shared/audit'
import type { ThreadsModel } from './model'
import type { SnippetSource, Term } from './search-text'

export type ThreadState = ThreadsModel.thread['state']
export type MessageRole = ThreadsModel.message['role']
export type ContentBlock = ThreadsModel.contentBlock

/**
 * Who is looking, as far as the threads they may see go. The visibility rule: a viewer sees the threads of their own
 * organization that are public or theirs, never another organization's; with `sees: 'own'`, only their own. Written
 * once as SQL (visibleTo, repository.common.ts) and once for rows already read (mayView, visibility.ts).
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

/**
 * A message as a unit of work inserts it (repository.sqlite.ts, repository.pg.ts: insertMessageRow). Without
 * `parentId`, a user message follows the thread's last active message, an answer the message it replies to, and a
 * summary stands alone.
 */
export interface NewMessageRow {
  threadId: string
  role: MessageRole
  contents: ContentBlock[]
  replyTo?: string
  parentId?: string | null
  /** For an answer: the configured model that wrote it. */
  model?: string | null
  /** Where it lists (a summary takes the place of what it replaces); at the thread's end when omitted. */
  placedAt?: number
}

export interface MessageRow {
  id: string
  threadId: string
  role: MessageRole
  /** Exactly as they were stored: the same blocks with their fields in the same order. */
  contents: ContentBlock[]
  createdAt: number
}

/** A message with its place in the thread's tree (see NewMessageRow), for versions, details and the JSON export. */
export interface TreeMessageRow extends MessageRow {
  parentId: string | null
  /** For an answer: the configured model that wrote it; null when none was recorded. */
  model: string | null
  /** On the thread's active path (listed), or not: an earlier version, a branch left, or replaced by a summary. */
  active: boolean
}

/**
 * Why a write to the thread's tree (regenerate, edit, activate) wrote nothing: the thread is not `ready` or `error`
 * (`busy`), the message is not one of the thread's (`missing`), not of a role the write takes (`role`: a user message
 * for regenerate and edit, not a summary for activate), not on the active path (`inactive`; for activate: no version
 * of it is), or older than the summary that now stands for the thread's beginning (`summarized`, activate only).
 */
export type TreeRefusal = 'busy' | 'missing' | 'role' | 'inactive' | 'summarized'

export type TreeWrite<T> = { ok: T } | { refused: TreeRefusal }

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
   * Only threads whose document (search.ts: its name, active messages and their files) holds every one of these
   * terms (search-text.ts, parseQuery), each in any part of it. The index holds no positions: a phrase matches where
   * its tokens are all in the document, and the caller checks the phrase itself (searchSources). A search sees every
   * write committed before it starts, and lists exactly the threads (and in exactly the order) that the same query
   * without terms would, less those that do not match; only a rebuild a migration left under way hides the threads
   * it has not reached yet (docs/architecture.md, "Search").
   */
  search?: Term[]
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

/**
 * A change to one thread at one place in the update order, as the change feed (feed.ts) tells it: the thread as it
 * is now (`thread`), or a tombstone (`deleted`, or `hidden`: made private, so gone from everyone's list but its
 * owner's). Each carries who may see it: the thread's organization, owner and privacy.
 */
export interface ThreadChange {
  seq: number
  kind: 'thread' | 'deleted' | 'hidden'
  threadId: string
  organizationId: number
  ownerId: number
  isPrivate: boolean
  /** For `thread`: the thread now, and its first place in the update order (0 for threads older than the feed). */
  thread: ThreadRow | null
  createdSeq: number
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

  /**
   * Applies the changes to the thread; any change, even to the same value, is a write that moves `updated_at`. A
   * public thread made private also gets a `hidden` tombstone at the next place, in the same unit.
   */
  updateThread(threadId: string, changes: ThreadChanges, now: number): Promise<void>

  /** The last place in the update order written at or before `since` (a time), or 0 when none was. */
  updateSeqAt(since: number): Promise<number>

  /**
   * Deletes the thread and everything that hangs on it (messages, feedback, attachments' rows, queued or running
   * answers, its search document) and writes its `deleted` tombstone at the next place in the update order, in one
   * unit. Returns the attachments it had, whose files the caller removes; null when there was no such thread. With
   * `idleBefore`, only if the thread is still idle (`ready` or `error`) and last updated before that time, judged in
   * the same unit: a message sent meanwhile keeps it (retention). `audit` is recorded in the unit when it deleted.
   */
  deleteThread(
    threadId: string,
    now: number,
    audit: AuditEntry,
    idleBefore?: number,
  ): Promise<{ id: string; resized: boolean }[] | null>

  /**
   * The changes at places in (after, upTo], in update order, at most `limit`, read in one statement (so none that
   * commits meanwhile is skipped: on PostgreSQL places commit in order). For a viewer, only what it may see: its
   * visible threads, the deletions of threads it could see, and `hidden` for other people's threads of its
   * organization made private (none with `sees: 'own'`). Without a viewer, every change, for the feed to share out.
   */
  changes(query: { viewer?: Viewer; after: number; upTo?: number; limit: number }): Promise<ThreadChange[]>

  /**
   * The feed's bounds: `head`, the last place in the update order committed (threads and tombstones), and
   * `horizon`, the newest place whose tombstone was swept (a feed resuming before it may have missed a deletion).
   */
  feedBounds(): Promise<{ head: number; horizon: number }>

  /**
   * Removes tombstones written before `before`, except the newest of all (it holds the update order's place on
   * SQLite), and raises the horizon to the newest removed, in one unit. Returns how many went.
   */
  sweepTombstones(before: number): Promise<number>

  /**
   * Up to `limit` threads of the organization that are idle (`ready` or `error`) and were last updated before
   * `before`, oldest first: what its retention period lets go.
   */
  staleThreads(organizationId: number, before: number, limit: number): Promise<string[]>

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
   * What a snippet of each thread may come from (search-text.ts, buildSnippet), in the order it prefers them: the
   * active messages' text, newest first; the text of the files those messages attach (those read for search); the
   * files' names; the thread's name. Empty texts are left out. Bounded per thread (`searchSourceBounds`,
   * repository.common.ts): the newest 50 active messages, each up to 20,000 characters, sharing 50,000 (the newer
   * take theirs first); the first 20 files they attach, whose texts share another 50,000. Threads that do not exist
   * are left out; whether the caller may see the others is the caller's to decide.
   */
  searchSources(threadIds: string[]): Promise<Map<string, SnippetSource[]>>

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

  /**
   * The newest answer written to a user message, current or not: what its latest run stored, even once a regenerate
   * that committed since has taken the current answer's place (its `answer.completed` webhook reads it).
   */
  latestReply(messageId: string): Promise<MessageRow | null>

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

  /**
   * Regenerates the answer to user message `messageId`, in one unit: moves a `ready` or `error` thread to `waiting`
   * (the conditional update is the lock: of racing writes to the thread, sends included, exactly one wins), checks that
   * the message is an active user message of the thread, deactivates every active message listed after it (its answer
   * and everything later), clears `reply_to` on its earlier answers (they stay versions through `parent_id`), and
   * queues its answer again: its generation row back to `queued` with no attempts, error, end or lease, `model` as
   * given (null: the thread's, else the organization's) and dated `now`. Moves `updated_at`. Nothing is written when
   * it is refused. The caller hands the message ID to the generation engine once this resolves.
   */
  regenerate(threadId: string, messageId: string, model: string | null, now: number): Promise<TreeWrite<true>>

  /**
   * Edits user message `messageId`, in one unit, under the same lock and checks as regenerate: deactivates it and
   * every active message listed after it, appends the new user message with the same parent (its version) at the end
   * of the thread, queues its answer, moves the thread to `waiting` and `updated_at`. Returns the new message's ID.
   */
  edit(threadId: string, messageId: string, contents: ContentBlock[], now: number): Promise<TreeWrite<string>>

  /**
   * Makes `messageId` (a user or assistant message) the active version among its siblings, in one unit, only while
   * the thread is `ready` or `error` (its row locked for the unit): the active sibling and every active message listed
   * after it leave the path; the message, then repeatedly its newest child, join it; an answer that joins takes
   * `reply_to` from its siblings. The thread is then `error` when the path ends with a user message whose latest
   * answer failed (or with that failed answer itself), else `ready`, and `updated_at` moves. Activating the version
   * already active writes nothing. `inactive` when no version of it is active; `summarized` when it is older than the
   * thread's active summary (compaction replaced what it belongs to).
   */
  activate(threadId: string, messageId: string, now: number): Promise<TreeWrite<true>>

  /** The message with its place in the tree, if it is a message of this thread (active or not). */
  messageNode(threadId: string, messageId: string): Promise<TreeMessageRow | undefined>

  /**
   * The message's versions: the thread's messages with the same parent (null counts as equal) and role, oldest first
   * by (created_at, id), the message among them; a summary has none but itself. Null when it is not a message of this
   * thread. Two reads: a write committed between them may show in the second.
   */
  versions(threadId: string, messageId: string): Promise<TreeMessageRow[] | null>

  /**
   * For each of the thread's messages among `messageIds`, in one statement: its versions' IDs, oldest first (itself
   * alone for a summary), and its own model. Messages not of this thread are left out.
   */
  versionsOf(
    threadId: string,
    messageIds: string[],
  ): Promise<Map<string, { versionIds: string[]; model: string | null }>>

  /** Every message of the thread, active or not, oldest first by (created_at, id): its whole tree, for the export. */
  threadTree(threadId: string): Promise<TreeMessageRow[]>

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
