// The threads repository's dialect-neutral half (see repository.ts and db/dialect.ts): the column lists, the
// visibility rule as SQL, the pieces every list plan and the change feed share, and every method that is one
// statement. What differs by dialect stays in repository.sqlite.ts and repository.pg.ts, which build on this: the
// units of work (bun:sqlite cannot await inside a transaction; PostgreSQL takes row locks and the update clock), the
// list plans, and the statements prepared for the thread by ID.
import {
  and,
  asc,
  type Column,
  desc,
  eq,
  gt,
  inArray,
  isNull,
  lt,
  lte,
  ne,
  or,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm'
import type { attachments, attachmentTexts } from '../attachments/attachments.table.pg'
import type { users } from '../auth/auth.table.pg'
import type { AnyDb } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import type { generations } from '../generation/generations.table.pg'
import type {
  ContentBlock,
  MessageRole,
  MessageRow,
  NewMessageRow,
  ThreadChange,
  ThreadChanges,
  ThreadListQuery,
  ThreadRepository,
  ThreadRow,
  ThreadState,
  TreeMessageRow,
  TreeRefusal,
  TreeWrite,
  Viewer,
} from './repository'
import { searchableText } from './search'
import { type SnippetSource, searchSourceBounds } from './search-text'
import type * as threadTables from './threads.table.pg'

/** The tables the threads repository reads, its own and three other features': either dialect's (db/dialect.ts). */
export type ThreadTables = Pick<
  typeof threadTables,
  'threads' | 'messages' | 'feedback' | 'threadTombstones' | 'threadFeedHorizon'
> & {
  users: typeof users
  attachments: typeof attachments
  attachmentTexts: typeof attachmentTexts
  generations: typeof generations
}

/**
 * Columns of either dialect's tables, for the pieces the SQLite units of work and plans use with their own builder
 * (which the PostgreSQL types of ThreadTables would not fit).
 */
type Columns<K extends string> = Record<K, Column>
type ThreadColumns = {
  threads: Columns<
    'id' | 'organizationId' | 'ownerId' | 'isPrivate' | 'archived' | 'state' | 'createdAt' | 'updatedAt' | 'updateSeq'
  >
}

/** The columns the visibility rule reads: a thread's own, or a tombstone's copies of them. */
interface Seen {
  organizationId: SQLWrapper
  ownerId: SQLWrapper
  isPrivate: Column
}

/**
 * The visibility rule (see Viewer in repository.ts) as SQL, its one definition for every statement: with
 * `sees: 'own'`, only the viewer's own rows; otherwise rows of the viewer's organization that are public or theirs.
 * `who` holds values, or placeholders for statements prepared once. visibility.ts holds the same rule for rows
 * already read (mayView).
 */
export function visibleTo(sees: Viewer['sees'], who: { organizationId: unknown; userId: unknown }, rows: Seen): SQL {
  if (sees === 'own') return eq(rows.ownerId, who.userId)
  return and(
    eq(rows.organizationId, who.organizationId),
    or(eq(rows.isPrivate, false), eq(rows.ownerId, who.userId)),
  ) as SQL
}

/** The placeholders prepared statements write the viewer with, and their values. */
export const viewerPlaceholders = {
  organizationId: sql.placeholder('organizationId'),
  userId: sql.placeholder('userId'),
}
export const viewerValues = (viewer: Viewer) => ({ organizationId: viewer.organizationId, userId: viewer.userId })

/** A message's insert, every column a placeholder bound by messageValues: both dialects prepare it once. */
export const messagePlaceholders = {
  id: sql.placeholder('id'),
  threadId: sql.placeholder('threadId'),
  role: sql.placeholder('role'),
  contents: sql.placeholder('contents'),
  text: sql.placeholder('text'),
  replyTo: sql.placeholder('replyTo'),
  parentId: sql.placeholder('parentId'),
  model: sql.placeholder('model'),
  createdAt: sql.placeholder('createdAt'),
}

export const messageValues = (id: string, input: NewMessageRow, parentId: string | null, createdAt: number) => ({
  id,
  threadId: input.threadId,
  role: input.role,
  contents: input.contents,
  text: searchableText(input.contents),
  replyTo: input.replyTo ?? null,
  parentId,
  model: input.model ?? null,
  createdAt,
})

/**
 * The rows queuing a message's files for search (`pending` in attachment_texts, the file indexer's queue): inserted
 * with the message, in its transaction, so a crash loses no file; a file already queued or read keeps its row.
 */
export function pendingFileTexts(contents: ContentBlock[]): { attachmentId: string; state: 'pending' }[] {
  const ids = new Set(contents.flatMap((block) => ('attachment_id' in block ? [block.attachment_id] : [])))
  return [...ids].map((attachmentId) => ({ attachmentId, state: 'pending' }))
}

type ThreadField = 'id' | 'name' | 'state' | 'isPrivate' | 'archived' | 'ownerId' | 'createdAt' | 'updatedAt'

/** A ThreadRow's columns, by the row's field names. */
export function threadColumns<T extends Columns<ThreadField>, U extends Columns<'sub' | 'name'>>({
  threads,
  users,
}: {
  threads: T
  users: U
}): Pick<T, ThreadField> & { ownerSub: U['sub']; ownerName: U['name'] } {
  return {
    id: threads.id,
    name: threads.name,
    state: threads.state,
    isPrivate: threads.isPrivate,
    archived: threads.archived,
    ownerId: threads.ownerId,
    ownerSub: users.sub,
    ownerName: users.name,
    createdAt: threads.createdAt,
    updatedAt: threads.updatedAt,
  }
}

/** What a tombstone copies from its thread. */
type TombstoneField = 'id' | 'organizationId' | 'ownerId' | 'isPrivate'
export const tombstoneColumns = <T extends Columns<TombstoneField>>({
  threads,
}: {
  threads: T
}): Pick<T, TombstoneField> => ({
  id: threads.id,
  organizationId: threads.organizationId,
  ownerId: threads.ownerId,
  isPrivate: threads.isPrivate,
})

export type TombstoneOf = { id: string; organizationId: number; ownerId: number; isPrivate: boolean }

/** A tombstone's row at `updateSeq`. */
export const tombstoneRow = (thread: TombstoneOf, kind: 'deleted' | 'hidden', updateSeq: number, now: number) => ({
  updateSeq,
  threadId: thread.id,
  kind,
  organizationId: thread.organizationId,
  ownerId: thread.ownerId,
  isPrivate: thread.isPrivate,
  at: now,
})

/** A new thread's row. */
export const newThreadRow = (id: string, thread: Parameters<ThreadRepository['createThread']>[0]) => ({
  id,
  organizationId: thread.organizationId,
  ownerId: thread.ownerId,
  name: thread.name,
  state: thread.first?.role === 'user' ? ('waiting' as const) : ('ready' as const),
  isPrivate: thread.isPrivate,
  createdAt: thread.now,
  updatedAt: thread.now,
})

/** What updateThread writes: any change, even to the same value, moves `updated_at`. */
export const threadUpdate = (changes: ThreadChanges, now: number) => ({
  ...(changes.name !== undefined && { name: changes.name }),
  ...(changes.archived !== undefined && { archived: changes.archived }),
  ...(changes.isPrivate !== undefined && { isPrivate: changes.isPrivate }),
  updatedAt: now,
})

/** Idle threads (nothing queued or running) last updated before `before`: what retention may delete. */
export const idleSince = ({ threads }: ThreadColumns, before: number) =>
  and(inArray(threads.state, ['ready', 'error']), lt(threads.updatedAt, before))

/** Which filters a list page applies; the rest of its shape is each dialect's plan. */
export interface ListFilters {
  sees: Viewer['sees']
  owned: boolean | undefined
  private: boolean | undefined
  archived: boolean
}

export const listFiltersOf = (query: ThreadListQuery): ListFilters => ({
  sees: query.viewer.sees,
  owned: query.owned,
  private: query.private,
  archived: query.archived,
})

/**
 * The filters of a list page, with the viewer as placeholders. `unindexed` hides the owner and organization
 * columns' indexes from SQLite's planner with a unary + (for the plan that starts from few search matches).
 */
export function listConditions({ threads }: ThreadColumns, shape: ListFilters, unindexed = false) {
  const { userId } = viewerPlaceholders
  const owner: SQLWrapper = unindexed ? sql`+${threads.ownerId}` : threads.ownerId
  const organizationId: SQLWrapper = unindexed ? sql`+${threads.organizationId}` : threads.organizationId
  const conditions: (SQL | undefined)[] = [
    visibleTo(shape.sees, viewerPlaceholders, { organizationId, ownerId: owner, isPrivate: threads.isPrivate }),
  ]
  if (shape.owned === true) conditions.push(eq(owner, userId))
  if (shape.owned === false) conditions.push(ne(owner, userId))
  if (shape.private !== undefined) conditions.push(eq(threads.isPrivate, shape.private))
  if (!shape.archived) conditions.push(eq(threads.archived, false))
  return conditions
}

/** Strictly after the (created_at, id) key in the order asked for: a row comparison, which Drizzle does not build. */
export function afterKey({ threads }: ThreadColumns, descending: boolean, key: unknown, id: unknown) {
  return descending
    ? sql`(${threads.createdAt}, ${threads.id}) < (${key}, ${id})`
    : sql`(${threads.createdAt}, ${threads.id}) > (${key}, ${id})`
}

/** A list's order: the update order, or (created_at, id). */
export function listOrder({ threads }: ThreadColumns, sortBy: ThreadListQuery['sortBy'], descending: boolean) {
  if (sortBy === 'updated_at') return [descending ? desc(threads.updateSeq) : asc(threads.updateSeq)]
  return descending ? [desc(threads.createdAt), desc(threads.id)] : [asc(threads.createdAt), asc(threads.id)]
}

/** A row of the feed's one statement (the threads and the tombstones in one union), as both dialects read it. */
export interface ChangeRow {
  seq: number
  kind: string
  id: string
  organizationId: number
  ownerId: number
  isPrivate: boolean
  name: string | null
  state: ThreadState | null
  archived: boolean | null
  ownerSub: string | null
  ownerName: string | null
  createdAt: number | null
  updatedAt: number | null
  createdSeq: number
}

export function changeOf(row: ChangeRow): ThreadChange {
  const change = {
    seq: Number(row.seq),
    threadId: row.id,
    organizationId: row.organizationId,
    ownerId: row.ownerId,
    isPrivate: Boolean(row.isPrivate),
    createdSeq: Number(row.createdSeq),
  }
  if (row.kind === 'deleted' || row.kind === 'hidden') return { ...change, kind: row.kind, thread: null }
  const thread: ThreadRow = {
    id: row.id,
    name: row.name,
    state: row.state as ThreadState,
    isPrivate: Boolean(row.isPrivate),
    archived: Boolean(row.archived),
    ownerId: row.ownerId,
    ownerSub: row.ownerSub as string,
    ownerName: row.ownerName,
    createdAt: Number(row.createdAt),
    updatedAt: Number(row.updatedAt),
  }
  return { ...change, kind: 'thread', thread }
}

/**
 * The change feed's two sides, the threads and the tombstones at places in (after, upTo], as one row shape: each
 * dialect unites them in one statement (see ThreadRepository.changes), ordering and limiting them its own way. For a
 * viewer, only what it may see: visible threads, the deletions of threads it could see, and `hidden` for other
 * people's threads of its organization (none with `sees: 'own'`).
 */
export function changeSides(db: AnyDb, t: ThreadTables, query: Parameters<ThreadRepository['changes']>[0]) {
  const { threads, threadTombstones: gone, users } = t
  const { viewer } = query
  const upTo = query.upTo ?? Number.MAX_SAFE_INTEGER
  let threadFilter: SQL | undefined
  let tombstoneFilter: SQL | undefined
  if (viewer) {
    threadFilter = visibleTo(viewer.sees, viewer, threads)
    const deleted = and(eq(gone.kind, 'deleted'), visibleTo(viewer.sees, viewer, gone))
    tombstoneFilter =
      viewer.sees === 'own'
        ? deleted
        : and(
            // The organization first, for its index.
            eq(gone.organizationId, viewer.organizationId),
            or(deleted, and(eq(gone.kind, 'hidden'), ne(gone.ownerId, viewer.userId))),
          )
  }
  const current = db
    .select({
      seq: threads.updateSeq,
      kind: sql<string>`cast('thread' as text)`.as('kind'),
      id: threads.id,
      organizationId: threads.organizationId,
      ownerId: threads.ownerId,
      isPrivate: threads.isPrivate,
      name: threads.name,
      state: threads.state,
      archived: threads.archived,
      ownerSub: users.sub,
      ownerName: users.name,
      createdAt: threads.createdAt,
      updatedAt: threads.updatedAt,
      createdSeq: threads.createdSeq,
    })
    .from(threads)
    .innerJoin(users, eq(users.id, threads.ownerId))
    .where(and(gt(threads.updateSeq, query.after), lte(threads.updateSeq, upTo), threadFilter))
    .$dynamic()
  const tombstones = db
    .select({
      seq: gone.updateSeq,
      kind: gone.kind,
      id: gone.threadId,
      organizationId: gone.organizationId,
      ownerId: gone.ownerId,
      isPrivate: gone.isPrivate,
      name: sql<never>`null`,
      state: sql<never>`null`,
      archived: sql<never>`null`,
      ownerSub: sql<never>`null`,
      ownerName: sql<never>`null`,
      createdAt: sql<never>`null`,
      updatedAt: sql<never>`null`,
      createdSeq: sql<number>`cast(0 as bigint)`,
    })
    .from(gone)
    .where(and(gt(gone.updateSeq, query.after), lte(gone.updateSeq, upTo), tombstoneFilter))
    .$dynamic()
  return { current, tombstones }
}

const messageColumns = ({ messages }: Pick<ThreadTables, 'messages'>) => ({
  id: messages.id,
  threadId: messages.threadId,
  role: messages.role,
  contents: messages.contents,
  createdAt: messages.createdAt,
})

/** A message's columns with its place in the tree (TreeMessageRow). */
export const treeColumns = ({ messages }: Pick<ThreadTables, 'messages'>) => ({
  ...messageColumns({ messages }),
  parentId: messages.parentId,
  model: messages.model,
  active: messages.active,
})

/** Messages with this parent: null counts as equal (a thread's first messages and their edits). */
export const childrenOf = ({ messages }: Pick<ThreadTables, 'messages'>, parentId: string | null): SQL =>
  parentId === null ? (isNull(messages.parentId) as SQL) : eq(messages.parentId, parentId)

/** Messages listed after `message` (or from it on, `inclusive`) in the thread's order, (created_at, id). */
export const listedAfter = (
  { messages }: Pick<ThreadTables, 'messages'>,
  message: { createdAt: number; id: string },
  inclusive = false,
): SQL =>
  inclusive
    ? sql`(${messages.createdAt}, ${messages.id}) >= (${message.createdAt}, ${message.id})`
    : sql`(${messages.createdAt}, ${messages.id}) > (${message.createdAt}, ${message.id})`

/** The states a thread takes tree writes in: nothing queued or running. */
export const idleStates = ['ready', 'error'] as const

/** Thrown inside a tree write's transaction to roll it back; `refusedWrite` turns it into the method's answer. */
export class TreeRefused extends Error {
  constructor(readonly reason: TreeRefusal) {
    super(`tree write refused: ${reason}`)
  }
}

/** Runs a tree write, answering its refusal (TreeRefused, thrown to roll the unit back) as `{ refused }`. */
export async function refusedWrite<T>(write: () => T | Promise<T>): Promise<TreeWrite<T>> {
  try {
    return { ok: await write() }
  } catch (error) {
    if (error instanceof TreeRefused) return { refused: error.reason }
    throw error
  }
}

/**
 * What regenerate and edit require of their message (an active user message of the thread), read in their unit.
 * Throws TreeRefused otherwise.
 */
export function requireActiveUser(node: { role: MessageRole; active: boolean } | undefined): void {
  if (!node) throw new TreeRefused('missing')
  if (node.role !== 'user') throw new TreeRefused('role')
  if (!node.active) throw new TreeRefused('inactive')
}

/**
 * A thread's state once activate has chosen its path, from the path's last message and the latest run of the user
 * message it ends with (itself, or the one the answer at the end answers): `error` when that run failed and the path
 * ends with its user message (the run stored nothing) or with what it stored (an answer dated from the run on), else
 * `ready`.
 */
export function stateAfterActivate(
  end: { role: MessageRole; createdAt: number },
  run: { status: string; createdAt: number } | undefined,
): 'ready' | 'error' {
  if (run?.status !== 'error') return 'ready'
  if (end.role === 'user') return 'error'
  return end.role === 'assistant' && end.createdAt >= run.createdAt ? 'error' : 'ready'
}

/** The generation row a regenerate writes back to `queued` (generations belong to the engine; see regenerate). */
export const requeuedGeneration = (model: string | null, now: number) => ({
  status: 'queued' as const,
  attempts: 0,
  error: null,
  finishedAt: null,
  model,
  createdAt: now,
  // A new answer: its tool calls go under a new run, whatever an earlier one left.
  runId: null,
})

/** Groups sibling rows (TreeMessageRow subsets) by (parent, role): the versions of each. */
function versionKey(row: { parentId: string | null; role: MessageRole }): string {
  return `${row.role}:${row.parentId ?? ''}`
}

/** The methods that are one statement on either dialect. */
export type CommonThreadMethods = Pick<
  ThreadRepository,
  | 'state'
  | 'staleThreads'
  | 'updateSeqAt'
  | 'listCursor'
  | 'listMessages'
  | 'findMessage'
  | 'latestMessage'
  | 'activeMessages'
  | 'replies'
  | 'latestReply'
  | 'attachmentKinds'
  | 'pendingMessageId'
  | 'lastFailure'
  | 'rate'
  | 'ratingsBy'
  | 'messageNode'
  | 'versions'
  | 'versionsOf'
  | 'threadTree'
>

/**
 * Every method that is one statement, on either dialect. Those on the path of every list page, message send and
 * answer stream (a list's cursor, a message's role, its replies, the latest message) are prepared once per database
 * on both: building a Drizzle query costs more than running it (db/prepared.ts). None runs inside a transaction,
 * where PostgreSQL would run a statement prepared on the pool outside it.
 */
export function commonThreadRepository(db: AnyDb, t: ThreadTables): CommonThreadMethods {
  const { threads, messages, feedback, attachments, generations } = t
  const messageRow = messageColumns(t)
  const treeRow = treeColumns(t)
  const asTree = (rows: unknown[]) =>
    (rows as TreeMessageRow[]).map((row) => ({ ...row, active: Boolean(row.active) }) as TreeMessageRow)
  /** The placeholders of the prepared statements. */
  const bound = { threadId: sql.placeholder('threadId'), messageId: sql.placeholder('messageId') }
  /** Prepared on first use: the SQLite store may be built before its migrations have run. */
  const once = <T>(key: string, build: () => T): T => prepared(db as unknown as PgDb, `threads:${key}`, build)

  return {
    async state(threadId) {
      const [row] = await db.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId))
      return row?.state ?? null
    },

    async staleThreads(organizationId, before, limit) {
      const rows = await db
        .select({ id: threads.id })
        .from(threads)
        .where(and(eq(threads.organizationId, organizationId), idleSince(t, before)))
        .orderBy(asc(threads.updatedAt))
        .limit(limit)
      return rows.map(({ id }) => id)
    },

    async updateSeqAt(since) {
      // `updated_at` never decreases along the update sequence (the triggers hold it back), so "updated after
      // `since`" is exactly "update_seq after this"; on PostgreSQL sequences commit in order, so none below it is
      // still to come.
      const [row] = await once('seq-at', () =>
        db
          .select({ updateSeq: threads.updateSeq })
          .from(threads)
          .where(lte(threads.updatedAt, sql.placeholder('since')))
          .orderBy(desc(threads.updatedAt), desc(threads.updateSeq))
          .limit(1)
          .prepare('thread_seq_at'),
      ).execute({ since })
      return row?.updateSeq ?? 0
    },

    async listCursor(viewer, threadId, sortBy) {
      const [row] = await once(`cursor:${viewer.sees}:${sortBy}`, () => {
        // The scope repository.ts describes for listCursor.
        const scope =
          viewer.sees === 'own' || sortBy === 'updated_at'
            ? visibleTo(viewer.sees, viewerPlaceholders, threads)
            : eq(threads.organizationId, viewerPlaceholders.organizationId)
        return db
          .select({ updateSeq: threads.updateSeq, createdAt: threads.createdAt, id: threads.id })
          .from(threads)
          .where(and(eq(threads.id, bound.threadId), scope))
          .prepare('thread_cursor')
      }).execute({ ...viewerValues(viewer), threadId })
      return row
    },

    async listMessages(threadId, page) {
      const conditions: SQL[] = [eq(messages.threadId, threadId), eq(messages.active, true)]
      if (page.after !== undefined) {
        const [cursor] = await db
          .select({ createdAt: messages.createdAt, id: messages.id })
          .from(messages)
          .where(and(eq(messages.id, page.after), eq(messages.threadId, threadId)))
        if (!cursor) return null
        conditions.push(sql`(${messages.createdAt}, ${messages.id}) > (${cursor.createdAt}, ${cursor.id})`)
      }
      return (await db
        .select(messageRow)
        .from(messages)
        .where(and(...conditions))
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .limit(page.limit)) as MessageRow[]
    },

    async findMessage(threadId, messageId) {
      const [row] = await once('message-role', () =>
        db
          .select({ role: messages.role })
          .from(messages)
          .where(and(eq(messages.id, bound.messageId), eq(messages.threadId, bound.threadId)))
          .prepare('message_role'),
      ).execute({ threadId, messageId })
      return row
    },

    async latestMessage(threadId) {
      const [row] = await once('latest-message', () =>
        db
          .select({ id: messages.id, contents: messages.contents })
          .from(messages)
          .where(and(eq(messages.threadId, bound.threadId), eq(messages.active, true)))
          .orderBy(desc(messages.createdAt), desc(messages.id))
          .limit(1)
          .prepare('latest_message'),
      ).execute({ threadId })
      return row ? { id: row.id, contents: row.contents as ContentBlock[] } : null
    },

    async activeMessages(threadId) {
      return (await db
        .select({ role: messages.role, contents: messages.contents })
        .from(messages)
        .where(and(eq(messages.threadId, threadId), eq(messages.active, true)))
        .orderBy(asc(messages.createdAt), asc(messages.id))) as { role: MessageRole; contents: ContentBlock[] }[]
    },

    async replies(messageId) {
      const statement = once('replies', () =>
        db
          .select(messageRow)
          .from(messages)
          .where(eq(messages.replyTo, bound.messageId))
          .orderBy(asc(messages.createdAt), asc(messages.id))
          .prepare('replies'),
      )
      return (await statement.execute({ messageId })) as MessageRow[]
    },

    async latestReply(messageId) {
      const statement = once('latest-reply', () =>
        db
          .select(messageRow)
          .from(messages)
          .where(and(eq(messages.parentId, bound.messageId), eq(messages.role, 'assistant')))
          .orderBy(desc(messages.createdAt), desc(messages.id))
          .limit(1)
          .prepare('latest-reply'),
      )
      return ((await statement.execute({ messageId })) as MessageRow[])[0] ?? null
    },

    async attachmentKinds(threadId, attachmentIds) {
      if (attachmentIds.length === 0) return new Map()
      const rows = await db
        .select({ id: attachments.id, kind: attachments.kind })
        .from(attachments)
        .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, attachmentIds)))
      return new Map(rows.map(({ id, kind }) => [id, kind]))
    },

    async pendingMessageId(threadId) {
      const [row] = await db
        .select({ messageId: generations.messageId })
        .from(generations)
        .where(and(eq(generations.threadId, threadId), inArray(generations.status, ['queued', 'running'])))
        .orderBy(desc(generations.createdAt), desc(generations.messageId))
        .limit(1)
      return row?.messageId ?? null
    },

    async lastFailure(threadId) {
      const [row] = await db
        .select({ error: generations.error })
        .from(generations)
        .where(and(eq(generations.threadId, threadId), eq(generations.status, 'error')))
        .orderBy(desc(generations.createdAt), desc(generations.messageId))
        .limit(1)
      return row ?? null
    },

    async rate(rating) {
      const values = { positive: rating.positive, feedbackText: rating.text, updatedAt: rating.now }
      await db
        .insert(feedback)
        .values({ messageId: rating.messageId, userId: rating.userId, createdAt: rating.now, ...values })
        .onConflictDoUpdate({ target: [feedback.messageId, feedback.userId], set: values })
    },

    async ratingsBy(userId, messageIds) {
      if (messageIds.length === 0) return new Map()
      const rows = await db
        .select({ messageId: feedback.messageId, positive: feedback.positive, text: feedback.feedbackText })
        .from(feedback)
        .where(and(eq(feedback.userId, userId), inArray(feedback.messageId, messageIds)))
      return new Map(rows.map((row) => [row.messageId, { positive: row.positive, text: row.text }]))
    },

    async messageNode(threadId, messageId) {
      const rows = await db
        .select(treeRow)
        .from(messages)
        .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId)))
      return asTree(rows)[0]
    },

    async versions(threadId, messageId) {
      const [node] = asTree(
        await db
          .select(treeRow)
          .from(messages)
          .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId))),
      )
      if (!node) return null
      if (node.role === 'summary') return [node]
      return asTree(
        await db
          .select(treeRow)
          .from(messages)
          .where(and(eq(messages.threadId, threadId), eq(messages.role, node.role), childrenOf(t, node.parentId)))
          .orderBy(asc(messages.createdAt), asc(messages.id)),
      )
    },

    async versionsOf(threadId, messageIds) {
      const found = new Map<string, { versionIds: string[]; model: string | null }>()
      if (messageIds.length === 0) return found
      // The page's messages and every message that may be a version of one: the same parent, or none.
      const parents = db
        .select({ parentId: messages.parentId })
        .from(messages)
        .where(and(eq(messages.threadId, threadId), inArray(messages.id, messageIds)))
      const rows = await db
        .select({ id: messages.id, parentId: messages.parentId, role: messages.role, model: messages.model })
        .from(messages)
        .where(
          and(
            eq(messages.threadId, threadId),
            or(inArray(messages.id, messageIds), inArray(messages.parentId, parents), isNull(messages.parentId)),
          ),
        )
        .orderBy(asc(messages.createdAt), asc(messages.id))
      const groups = new Map<string, string[]>()
      for (const row of rows) {
        if (row.role === 'summary') continue
        const key = versionKey(row)
        const group = groups.get(key) ?? []
        group.push(row.id)
        groups.set(key, group)
      }
      const wanted = new Set(messageIds)
      for (const row of rows) {
        if (!wanted.has(row.id)) continue
        const versionIds = row.role === 'summary' ? [row.id] : (groups.get(versionKey(row)) ?? [row.id])
        found.set(row.id, { versionIds, model: row.model })
      }
      return found
    },

    async threadTree(threadId) {
      return asTree(
        await db
          .select(treeRow)
          .from(messages)
          .where(eq(messages.threadId, threadId))
          .orderBy(asc(messages.createdAt), asc(messages.id)),
      )
    },
  }
}

/**
 * A message's content blocks as rows `j(key, value)` (`key` the block's place in the message) and a block's
 * attachment ID: the JSON functions are each dialect's own (SQLite's json_each, PostgreSQL's json_array_elements).
 */
export interface ContentBlocks {
  rows: (contents: Column) => SQL
  attachmentId: SQL
}

/** A message as `searchSources` reads it: `text` already cut where its thread's characters run out. */
export interface NewestMessage {
  id: string
  text: string
  /** Whether its contents may name a file (`fileBlockPattern`). */
  hasFiles: boolean
}

/** Each thread's name and newest active messages, newest first, within `searchSourceBounds`. */
export interface NewestMessages {
  /** Each thread found, with its name; threads that do not exist are left out. */
  names: Map<string, string | null>
  messages: Map<string, NewestMessage[]>
}

/**
 * LIKE's pattern for contents that may name a file: only those messages' files are looked for in the database (the
 * JSON is read there, never here). `_` is LIKE's any character: a superset, which the files statement narrows.
 */
export const fileBlockPattern = '%"attachment_id"%'

/**
 * `searchSources` (see repository.ts) on either dialect: each thread's name and newest messages (`newestMessages`,
 * each dialect's own), then, only when a message read names a file, the files in one statement. Raw SQL fragments
 * where Drizzle has no builder: the window functions that rank each thread's files and share its characters out,
 * and the JSON table function.
 */
export function searchSourcesReader(
  db: AnyDb,
  t: ThreadTables,
  blocks: ContentBlocks,
  newestMessages: (threadIds: string[]) => Promise<NewestMessages>,
) {
  const { messages, attachments, attachmentTexts } = t
  const bounds = searchSourceBounds
  const newestFirst = sql`${messages.createdAt} desc, ${messages.id} desc`
  return async function searchSources(threadIds: string[]): Promise<Map<string, SnippetSource[]>> {
    const found = new Map<string, SnippetSource[]>()
    if (threadIds.length === 0) return found
    const { names, messages: newest } = await newestMessages(threadIds)
    const fileSources = new Map<string, { texts: SnippetSource[]; names: SnippetSource[] }>()
    const withFiles: string[] = []
    for (const threadId of names.keys()) {
      const sources: SnippetSource[] = []
      found.set(threadId, sources)
      for (const message of newest.get(threadId) ?? []) {
        if (message.text) sources.push({ messageId: message.id, attachmentId: null, text: message.text })
        if (message.hasFiles) withFiles.push(message.id)
      }
    }
    if (withFiles.length > 0) {
      const j = sql.raw('j')
      const fileText = sql`case when ${attachmentTexts.state} = 'indexed' then ${attachmentTexts.text} end`
      const order = sql`partition by ${messages.threadId} order by ${newestFirst}, ${j}.key`
      const files = db
        .select({
          threadId: sql<string>`${messages.threadId}`.as('thread_id'),
          messageId: sql<string>`${messages.id}`.as('message_id'),
          attachmentId: sql<string>`${attachments.id}`.as('attachment_id'),
          filename: sql<string>`${attachments.filename}`.as('filename'),
          text: sql<string | null>`${fileText}`.as('file_text'),
          rank: sql<number>`row_number() over (${order})`.as('rank'),
          before: sql<number>`coalesce(sum(length(${fileText})) over (${order}
            rows between unbounded preceding and 1 preceding), 0)`.as('before'),
        })
        .from(messages)
        .innerJoin(blocks.rows(messages.contents), sql`true`)
        // The thread's own files only: a block cannot name another thread's file, but the check costs nothing.
        .innerJoin(
          attachments,
          and(eq(attachments.id, blocks.attachmentId), eq(attachments.threadId, messages.threadId)),
        )
        .leftJoin(attachmentTexts, eq(attachmentTexts.attachmentId, attachments.id))
        .where(inArray(messages.id, withFiles))
        .as('files')
      const fileRows = await db
        .select({
          threadId: files.threadId,
          messageId: files.messageId,
          attachmentId: files.attachmentId,
          filename: files.filename,
          text: sql<string | null>`case when ${files.before} < ${bounds.fileChars}
            then substr(${files.text}, 1, cast(${bounds.fileChars} - ${files.before} as integer)) end`,
        })
        .from(files)
        .where(lte(files.rank, bounds.files))
        .orderBy(files.threadId, files.rank)
      const seen = new Set<string>()
      for (const row of fileRows) {
        // A file two messages attach counts once, for the newer.
        if (seen.has(row.attachmentId)) continue
        seen.add(row.attachmentId)
        const ids = { messageId: row.messageId, attachmentId: row.attachmentId }
        const thread = fileSources.get(row.threadId) ?? { texts: [], names: [] }
        fileSources.set(row.threadId, thread)
        if (row.text) thread.texts.push({ ...ids, text: row.text })
        thread.names.push({ ...ids, text: row.filename })
      }
    }
    for (const [threadId, sources] of found) {
      const files = fileSources.get(threadId)
      if (files) sources.push(...files.texts, ...files.names)
      const name = names.get(threadId)
      if (name) sources.push({ messageId: null, attachmentId: null, text: name })
    }
    return found
  }
}
