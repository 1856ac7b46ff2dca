// Threads, messages and feedback as plain functions of (db, caller, input). Controllers stay thin.
import { and, asc, between, desc, eq, gte, inArray, lte, max, ne, or, type SQL, sql } from 'drizzle-orm'
import { attachments } from '../attachments/attachments.table'
import { users } from '../auth/auth.table'
import type { Caller } from '../auth/model'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { generations } from '../generation/generations.table'
import { conflict, forbidden, invalidRequest, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { toIso } from '../shared/time'
import { feedbackTextMaxChars, type ThreadsModel } from './model'
import {
  documentOrder,
  documentsMatching,
  documentThread,
  flushSearchIndex,
  inMatches,
  keyMask,
  keyRange,
  ownedBy,
  probeMatches,
  type SearchPlan,
  searchPlan,
  searchTable,
  toFtsQuery,
} from './search'
import { feedback, messages, threads } from './threads.table'

export const maxPageSize = 200

export interface Links {
  threadUrl(threadId: string): string
  messageUrl(threadId: string, messageId: string): string
}

export function linksFor(publicUrl: string): Links {
  return {
    threadUrl: (threadId) => `${publicUrl}/threads/${threadId}`,
    messageUrl: (threadId, messageId) => `${publicUrl}/threads/${threadId}#message-${messageId}`,
  }
}

/**
 * The threads a caller may see: never another organization's; private ones only their owner's. Written
 * with the placeholders `organizationId` and `userId` so the statements using it are prepared once.
 */
function visibleTo(sees: Caller['sees'], indexed = true): SQL {
  const userId = sql.placeholder('userId')
  // A unary + keeps SQLite from using the column's index (see search.ts, the `matches` plan).
  const owner = indexed ? sql`${threads.ownerId}` : sql`+${threads.ownerId}`
  const organization = indexed ? sql`${threads.organizationId}` : sql`+${threads.organizationId}`
  if (sees === 'own') return eq(owner, userId)
  return and(
    eq(organization, sql.placeholder('organizationId')),
    or(eq(threads.isPrivate, false), eq(threads.ownerId, userId)),
  ) as SQL
}

const callerValues = (caller: Caller) => ({ organizationId: caller.organizationId, userId: caller.userId })

// threadRowOf reads these by position: keep its order in step.
const threadColumns = {
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

type ThreadRow = {
  id: string
  name: string | null
  state: ThreadsModel.thread['state']
  isPrivate: boolean
  archived: boolean
  ownerId: number
  ownerSub: string
  ownerName: string | null
  createdAt: number
  updatedAt: number
}

function toThread(row: ThreadRow, links: Links): ThreadsModel.thread {
  return {
    id: row.id,
    name: row.name,
    state: row.state,
    is_private: row.isPrivate,
    archived: row.archived,
    owner: { id: row.ownerSub, name: row.ownerName },
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    app_url: links.threadUrl(row.id),
  }
}

type MessageRow = typeof messages.$inferSelect

function toMessage(row: MessageRow, links: Links): ThreadsModel.message {
  return {
    id: row.id,
    thread_id: row.threadId,
    role: row.role,
    contents: row.contents as ThreadsModel.contentBlock[],
    created_at: toIso(row.createdAt),
    app_url: links.messageUrl(row.threadId, row.id),
  }
}

function findVisibleThread(db: Db, caller: Caller, threadId: string): ThreadRow | undefined {
  const statement = prepared(db, `thread:${caller.sees}`, () =>
    db
      .select(threadColumns)
      .from(threads)
      .innerJoin(users, eq(users.id, threads.ownerId))
      .where(and(eq(threads.id, sql.placeholder('threadId')), visibleTo(caller.sees)))
      .prepare(),
  )
  const values = statement.values({ threadId, ...callerValues(caller) })[0]
  return values && threadRowOf(values)
}

/**
 * A row of `threadColumns` from Drizzle's positional `.values()`, in that object's order. The by-id lookup
 * runs on nearly every API request, and Drizzle's generic row mapping cost it about a quarter of its time;
 * a list page maps up to 201 rows.
 */
function threadRowOf(values: unknown[]): ThreadRow {
  return {
    id: values[0] as string,
    name: values[1] as string | null,
    state: values[2] as ThreadRow['state'],
    isPrivate: values[3] === 1,
    archived: values[4] === 1,
    ownerId: values[5] as number,
    ownerSub: values[6] as string,
    ownerName: values[7] as string | null,
    createdAt: values[8] as number,
    updatedAt: values[9] as number,
  }
}

/** The thread, or 404 when it does not exist for this caller (private, other organization, or unknown). */
export function requireVisibleThread(db: Db, caller: Caller, threadId: string): ThreadRow {
  const row = findVisibleThread(db, caller, threadId)
  if (!row) throw notFound('Thread')
  return row
}

/** The thread, for an action only its owner may take: 404 when invisible, 403 for other members who see it. */
export function requireOwnedThread(db: Db, caller: Caller, threadId: string, action: string): ThreadRow {
  const row = requireVisibleThread(db, caller, threadId)
  if (row.ownerId !== caller.userId) throw forbidden(`Only the owner of a thread can ${action}`)
  return row
}

export function getThread(db: Db, caller: Caller, threadId: string, links: Links): ThreadsModel.thread {
  return toThread(requireVisibleThread(db, caller, threadId), links)
}

function envelope<T extends { id: string }>(rows: T[], limit: number) {
  const hasMore = rows.length > limit
  const data = hasMore ? rows.slice(0, limit) : rows
  return {
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
    limit,
  }
}

export function clampLimit(limit: number | undefined): number {
  return Math.min(limit ?? 50, maxPageSize)
}

/** Which statement a list request needs; every value that varies within a shape is a placeholder. */
interface ListShape {
  sees: Caller['sees']
  sortBy: 'created_at' | 'updated_at'
  descending: boolean
  owned: boolean | undefined
  private: boolean | undefined
  archived: boolean
  /** `created_at` only: `updated_at` bounds the update sequence instead. */
  since: boolean
  /** `index`: the search index in update order; the plans serve `created_at` (see search.ts). */
  search: 'index' | SearchPlan | undefined
  /** `created_at` only: `updated_at` cursors are bounds on the update sequence. */
  cursor: boolean
}

/** The biggest update sequence a key can hold (search.ts): the open end of a range. */
const lastSeq = keyMask

function prepareList(db: Db, shape: ListShape) {
  const userId = sql.placeholder('userId')
  // With few search matches, SQLite must start from them, not from the organization's or owner's index.
  const indexed = shape.search !== 'matches'
  const owner = indexed ? sql`${threads.ownerId}` : sql`+${threads.ownerId}`
  const conditions: (SQL | undefined)[] = [visibleTo(shape.sees, indexed)]
  if (shape.owned === true) conditions.push(eq(owner, userId))
  if (shape.owned === false) conditions.push(ne(owner, userId))
  if (shape.private !== undefined) conditions.push(eq(threads.isPrivate, shape.private))
  if (!shape.archived) conditions.push(eq(threads.archived, false))
  const seqLo = sql.placeholder('seqLo')
  const seqHi = sql.placeholder('seqHi')
  if (shape.sortBy === 'updated_at') {
    if (shape.search === 'index') {
      // FTS5 reads the organization's key range in the page's order; the rest are checks on each row.
      const fts = sql.placeholder('fts')
      const organizationId = sql.placeholder('organizationId')
      return (
        db
          .select(threadColumns)
          .from(searchTable)
          // CROSS JOIN fixes the order: SQLite must not start from the threads.
          .crossJoin(threads)
          .crossJoin(users)
          .where(
            and(
              documentsMatching(fts),
              keyRange(organizationId, seqLo, seqHi),
              documentThread,
              eq(users.id, threads.ownerId),
              ...conditions,
            ),
          )
          .orderBy(documentOrder(shape.descending))
          .limit(sql.placeholder('limit'))
          .prepare()
      )
    }
    conditions.push(between(threads.updateSeq, seqLo, seqHi))
  } else {
    if (shape.since) conditions.push(gte(threads.updateSeq, seqLo))
    if (shape.search === 'matches')
      conditions.push(inMatches(sql.placeholder('fts'), sql.placeholder('organizationId')))
    if (shape.search === 'walk') conditions.push(probeMatches(sql.placeholder('fts')))
    if (shape.cursor) {
      const key = sql.placeholder('cursorKey')
      const id = sql.placeholder('cursorId')
      conditions.push(
        shape.descending
          ? sql`(${threads.createdAt}, ${threads.id}) < (${key}, ${id})`
          : sql`(${threads.createdAt}, ${threads.id}) > (${key}, ${id})`,
      )
    }
  }
  const order =
    shape.sortBy === 'updated_at'
      ? [shape.descending ? desc(threads.updateSeq) : asc(threads.updateSeq)]
      : shape.descending
        ? [desc(threads.createdAt), desc(threads.id)]
        : [asc(threads.createdAt), asc(threads.id)]
  return db
    .select(threadColumns)
    .from(threads)
    .innerJoin(users, eq(users.id, threads.ownerId))
    .where(and(...conditions))
    .orderBy(...order)
    .limit(sql.placeholder('limit'))
    .prepare()
}

/**
 * The `after` thread's sort key. Cursors do not expire (spec): in `created_at` order a thread its owner made
 * private since the page was read still marks the place, which its UUIDv7 ID already tells. In `updated_at`
 * order its place would tell when it was last written to, so there the cursor must still be visible.
 */
function prepareCursor(db: Db, sees: Caller['sees'], sortBy: 'created_at' | 'updated_at') {
  const scope =
    sees === 'own' || sortBy === 'updated_at'
      ? visibleTo(sees)
      : eq(threads.organizationId, sql.placeholder('organizationId'))
  return db
    .select({ updateSeq: threads.updateSeq, createdAt: threads.createdAt, id: threads.id })
    .from(threads)
    .where(and(eq(threads.id, sql.placeholder('threadId')), scope))
    .prepare()
}

/**
 * The last update sequence written at or before `since`. `updated_at` never decreases along the update
 * sequence (the triggers hold it back), so "updated after `since`" is exactly "update_seq after this".
 */
function seqAt(db: Db, since: number): number {
  const row = prepared(db, 'thread:seq-at', () =>
    db
      .select({ updateSeq: threads.updateSeq })
      .from(threads)
      .where(lte(threads.updatedAt, sql.placeholder('since')))
      .orderBy(desc(threads.updatedAt), desc(threads.updateSeq))
      .limit(1)
      .prepare(),
  ).get({ since })
  return row?.updateSeq ?? 0
}

/** `updated_since` as a time; a day that does not exist is 400, where Date.parse would roll it into the next month. */
function parseSince(value: string): number {
  const since = Date.parse(value)
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day))
  if (Number.isNaN(since) || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw invalidRequest('updated_since must be an RFC 3339 time or date that exists')
  }
  return since
}

/**
 * Keyset pagination: the page starts strictly after the `after` thread's current sort key, compared
 * over a covering index (the update sequence, or (created_at, id)). See README, "Pagination guarantees".
 */
export function listThreads(
  db: Db,
  caller: Caller,
  query: ThreadsModel.listThreadsQuery,
  links: Links,
): ThreadsModel.threadList {
  const limit = clampLimit(query.limit)
  const sortBy = query.sort_by === 'created_at' ? 'created_at' : 'updated_at'
  const descending = query.sort_dir !== 'asc'
  let seqLo = 0
  let seqHi = lastSeq
  if (query.updated_since !== undefined) {
    seqLo = seqAt(db, parseSince(query.updated_since)) + 1
  }
  let fts: string | undefined
  if (query.q !== undefined && query.q.trim() !== '') {
    const parsed = toFtsQuery(query.q)
    if (parsed === null) return envelope([], limit)
    // Only the owner's token narrows the index; the other filters are checks on the rows it yields.
    const ownOnly = caller.sees === 'own' || query.owned === true || query.private === true
    fts = ownOnly ? ownedBy(parsed, caller.userId) : parsed
  }
  let cursor: { updateSeq: number; createdAt: number; id: string } | undefined
  if (query.after !== undefined) {
    const statement = prepared(db, `cursor:${caller.sees}:${sortBy}`, () => prepareCursor(db, caller.sees, sortBy))
    cursor = statement.get({ threadId: query.after, ...callerValues(caller) })
    if (!cursor) throw invalidRequest('after does not name a thread you can list')
    if (sortBy === 'updated_at') {
      if (descending) seqHi = cursor.updateSeq - 1
      else seqLo = Math.max(seqLo, cursor.updateSeq + 1)
    }
  }
  let search: ListShape['search']
  if (fts !== undefined) {
    // Writes leave documents pending (see search.ts): a search first brings the index up to date.
    flushSearchIndex(db)
    search = sortBy === 'updated_at' ? 'index' : searchPlan(db, fts, caller.organizationId)
  }
  const shape: ListShape = {
    sees: caller.sees,
    sortBy,
    descending,
    owned: query.owned,
    private: query.private,
    archived: query.archived === true,
    since: sortBy === 'created_at' && seqLo > 0,
    search,
    cursor: sortBy === 'created_at' && cursor !== undefined,
  }
  const key = `list:${shape.sees}:${sortBy}:${shape.descending}:${shape.owned}:${shape.private}:${shape.archived}:${shape.since}:${shape.search}:${shape.cursor}`
  const rows = prepared(db, key, () => prepareList(db, shape)).values({
    ...callerValues(caller),
    seqLo,
    seqHi,
    fts,
    cursorKey: cursor?.createdAt,
    cursorId: cursor?.id,
    limit: limit + 1,
  })
  const page = envelope(rows.map(threadRowOf), limit)
  return { ...page, data: page.data.map((row) => toThread(row, links)) }
}

export function listMessages(
  db: Db,
  caller: Caller,
  threadId: string,
  query: { limit?: number; after?: string },
  links: Links,
): ThreadsModel.messageList {
  requireVisibleThread(db, caller, threadId)
  const limit = clampLimit(query.limit)
  const conditions: SQL[] = [eq(messages.threadId, threadId), eq(messages.active, true)]
  if (query.after !== undefined) {
    const cursor = db
      .select({ createdAt: messages.createdAt, id: messages.id })
      .from(messages)
      .where(and(eq(messages.id, query.after), eq(messages.threadId, threadId)))
      .get()
    if (!cursor) throw invalidRequest('after does not name a message of this thread')
    conditions.push(sql`(${messages.createdAt}, ${messages.id}) > (${cursor.createdAt}, ${cursor.id})`)
  }
  const rows = db
    .select()
    .from(messages)
    .where(and(...conditions))
    .orderBy(asc(messages.createdAt), asc(messages.id))
    .limit(limit + 1)
    .all()
  const page = envelope(rows, limit)
  return { ...page, data: page.data.map((row) => toMessage(row, links)) }
}

/** The attachment IDs a message's `image` and `document` blocks name, in order. */
export function attachmentIdsOf(contents: ThreadsModel.contentBlock[]): string[] {
  return contents.flatMap((block) => ('attachment_id' in block ? [block.attachment_id] : []))
}

/** Text of the blocks a message holds, for full-text search. */
function searchableText(contents: ThreadsModel.contentBlock[]): string {
  return contents
    .map((block) => (block.type === 'text' ? block.text : block.type === 'user_get_choice' ? block.question : ''))
    .filter(Boolean)
    .join('\n')
}

/**
 * A new message's time: the clock's, or just after the thread's newest message if the clock has stepped back,
 * so that messages list, and reach the model, in the order they were written. (Equal times fall back to the
 * UUIDv7 IDs, which a clock step back, across a restart, could put out of order.)
 */
function appendedAt(db: Db, threadId: string, now: number): number {
  const newest = prepared(db, 'message:newest', () =>
    db
      .select({ createdAt: max(messages.createdAt) })
      .from(messages)
      .where(eq(messages.threadId, sql.placeholder('threadId')))
      .prepare(),
  ).get({ threadId })?.createdAt
  return newest == null || now >= newest ? now : newest + 1
}

/**
 * Inserts a message at the end of its thread, or at `placedAt` (a summary takes the place of the messages it
 * replaces). Inside a transaction, pass the same `db` (see src/db/prepared.ts).
 */
export function insertMessage(
  db: Db,
  input: {
    threadId: string
    role: MessageRow['role']
    contents: ThreadsModel.contentBlock[]
    replyTo?: string
    placedAt?: number
  },
  now: number,
): string {
  const id = newId()
  prepared(db, 'message:insert', () =>
    db
      .insert(messages)
      .values({
        id: sql.placeholder('id'),
        threadId: sql.placeholder('threadId'),
        role: sql.placeholder('role'),
        contents: sql.placeholder('contents'),
        text: sql.placeholder('text'),
        replyTo: sql.placeholder('replyTo'),
        createdAt: sql.placeholder('createdAt'),
      })
      .prepare(),
  ).run({
    id,
    threadId: input.threadId,
    role: input.role,
    contents: input.contents,
    text: searchableText(input.contents),
    replyTo: input.replyTo ?? null,
    createdAt: input.placedAt ?? appendedAt(db, input.threadId, now),
  })
  return id
}

/** Stores a user message and queues its answer; the caller must enqueue `messageId` after commit. */
function insertUserMessage(db: Db, threadId: string, contents: ThreadsModel.contentBlock[], now: number): string {
  const messageId = insertMessage(db, { threadId, role: 'user', contents }, now)
  prepared(db, 'generation:insert', () =>
    db
      .insert(generations)
      .values({
        messageId: sql.placeholder('messageId'),
        threadId: sql.placeholder('threadId'),
        status: 'queued',
        createdAt: sql.placeholder('createdAt'),
      })
      .prepare(),
  ).run({ messageId, threadId, createdAt: now })
  return messageId
}

/**
 * The content blocks for the files a message references, in the order given. Each ID must name a file uploaded
 * to this same thread: an unknown ID and another thread's ID get the same 400, so IDs reveal nothing.
 */
function attachmentBlocks(db: Db, threadId: string, ids: string[] | undefined): ThreadsModel.contentBlock[] {
  if (!ids || ids.length === 0) return []
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
  if (repeated) throw invalidRequest(`Attachment ${repeated} is listed more than once`)
  const kinds = new Map(
    db
      .select({ id: attachments.id, kind: attachments.kind })
      .from(attachments)
      .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, ids)))
      .all()
      .map(({ id, kind }) => [id, kind]),
  )
  return ids.map((id) => {
    const kind = kinds.get(id)
    if (!kind) throw invalidRequest(`Unknown attachment ${id}: attach only files uploaded to this thread`)
    return { type: kind === 'image' ? 'image' : 'document', attachment_id: id }
  })
}

/**
 * Inserts a thread owned by the caller and returns its ID. The insert marks the thread's search document
 * pending; it is written later from the committed rows.
 */
export function insertThread(
  db: Db,
  caller: Caller,
  thread: { name: string | null; state: 'ready' | 'waiting'; isPrivate: boolean },
  now: number,
): string {
  const id = newId()
  db.insert(threads)
    .values({
      id,
      organizationId: caller.organizationId,
      ownerId: caller.userId,
      ...thread,
      createdAt: now,
      updatedAt: now,
    })
    .run()
  return id
}

export function createThread(
  db: Db,
  caller: Caller,
  body: ThreadsModel.createThreadBody,
  now: number,
): { thread_id: string; message_id: string | null } {
  return db.transaction(() => {
    const state = body.text === undefined ? 'ready' : 'waiting'
    const threadId = insertThread(
      db,
      caller,
      { name: body.name ?? null, state, isPrivate: body.is_private ?? false },
      now,
    )
    const messageId =
      body.text === undefined ? null : insertUserMessage(db, threadId, [{ type: 'text', text: body.text }], now)
    return { thread_id: threadId, message_id: messageId }
  })
}

/**
 * Sends a user message. The conditional state update is the lock: of two concurrent sends to a ready
 * thread exactly one moves it to `waiting`; the other gets 409.
 */
export function sendMessage(
  db: Db,
  caller: Caller,
  threadId: string,
  body: ThreadsModel.sendMessageBody,
  now: number,
): { message_id: string } {
  // Prepared statements run on the transaction's connection (see src/db/prepared.ts).
  return db.transaction(() => {
    const thread = requireOwnedThread(db, caller, threadId, 'send messages to it')
    const blocks = attachmentBlocks(db, threadId, body.attachment_ids)
    const moved = prepared(db, 'thread:claim', () =>
      db
        .update(threads)
        .set({ state: 'waiting', updatedAt: sql`${sql.placeholder('now')}` })
        .where(and(eq(threads.id, sql.placeholder('threadId')), eq(threads.state, 'ready')))
        .returning({ id: threads.id })
        .prepare(),
    ).get({ threadId, now })
    if (!moved) throw conflict(`The thread is ${thread.state}; a new message is accepted only in ready`)
    return { message_id: insertUserMessage(db, threadId, [{ type: 'text', text: body.text }, ...blocks], now) }
  })
}

export function submitFeedback(
  db: Db,
  caller: Caller,
  threadId: string,
  messageId: string,
  body: ThreadsModel.feedbackBody,
  now: number,
): void {
  if (body.feedback_text !== undefined && [...body.feedback_text].length > feedbackTextMaxChars) {
    throw invalidRequest(`feedback_text may have at most ${feedbackTextMaxChars} characters`)
  }
  requireVisibleThread(db, caller, threadId)
  const message = db
    .select({ role: messages.role })
    .from(messages)
    .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId)))
    .get()
  if (!message) throw notFound('Message')
  if (message.role !== 'assistant') throw invalidRequest('Feedback can be given only on assistant messages')
  const values = { positive: body.positive, feedbackText: body.feedback_text ?? null, updatedAt: now }
  db.insert(feedback)
    .values({ messageId, userId: caller.userId, createdAt: now, ...values })
    .onConflictDoUpdate({ target: [feedback.messageId, feedback.userId], set: values })
    .run()
}

/** 404 unless the message exists in a thread the caller can see. */
/** The message's thread, or 404 when either is not there for this caller. */
export function requireMessage(db: Db, caller: Caller, threadId: string, messageId: string): ThreadRow {
  const thread = requireVisibleThread(db, caller, threadId)
  // Only existence matters to the callers (poll and stream): the contents stay unread.
  const row = prepared(db, 'message:exists', () =>
    db
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.id, sql.placeholder('messageId')), eq(messages.threadId, sql.placeholder('threadId'))))
      .prepare(),
  ).get({ messageId, threadId })
  if (!row) throw notFound('Message')
  return thread
}

/**
 * The thread's latest message in its list (a summary's replaced messages aside), or null when it has none. The
 * caller has checked that the thread may be read.
 */
export function latestMessage(db: Db, threadId: string): { id: string; contents: ThreadsModel.contentBlock[] } | null {
  const row = prepared(db, 'message:latest', () =>
    db
      .select({ id: messages.id, contents: messages.contents })
      .from(messages)
      .where(and(eq(messages.threadId, sql.placeholder('threadId')), eq(messages.active, true)))
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(1)
      .prepare(),
  ).get({ threadId })
  return row ? { id: row.id, contents: row.contents as ThreadsModel.contentBlock[] } : null
}

/**
 * The messages that answer a user message, oldest first: for its poll and stream replay, which still show an
 * answer that a summary has since replaced in the thread's list.
 */
export function listReplies(db: Db, messageId: string, links: Links): ThreadsModel.message[] {
  return prepared(db, 'message:replies', () =>
    db
      .select()
      .from(messages)
      .where(eq(messages.replyTo, sql.placeholder('messageId')))
      .orderBy(asc(messages.createdAt), asc(messages.id))
      .prepare(),
  )
    .all({ messageId })
    .map((row) => toMessage(row, links))
}

/** Renames a thread, archives or unarchives it, or changes its privacy: owner only, and any change is an update. */
export function updateThread(
  db: Db,
  caller: Caller,
  threadId: string,
  changes: ThreadsModel.updateThreadBody,
  links: Links,
  now: number,
): ThreadsModel.thread {
  requireOwnedThread(db, caller, threadId, 'change it')
  db.update(threads)
    .set({
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.archived !== undefined && { archived: changes.archived }),
      ...(changes.is_private !== undefined && { isPrivate: changes.is_private }),
      updatedAt: now,
    })
    .where(eq(threads.id, threadId))
    .run()
  return getThread(db, caller, threadId, links)
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
  db: Db,
  engine: Interrupter,
  caller: Caller,
  threadId: string,
  links: Links,
): Promise<ThreadsModel.thread> {
  requireOwnedThread(db, caller, threadId, 'stop its answer')
  if (!(await engine.interrupt(threadId))) throw conflict('The thread has no answer running or queued')
  return getThread(db, caller, threadId, links)
}

/** The thread's state now, whoever asks; null once it is gone. */
export function threadState(db: Db, threadId: string): ThreadsModel.thread['state'] | null {
  return db.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId)).get()?.state ?? null
}

/** The user message whose answer is queued or running in this thread, if any. */
export function pendingMessageId(db: Db, threadId: string): string | null {
  const row = db
    .select({ messageId: generations.messageId })
    .from(generations)
    .where(and(eq(generations.threadId, threadId), inArray(generations.status, ['queued', 'running'])))
    .orderBy(desc(generations.createdAt), desc(generations.messageId))
    .get()
  return row?.messageId ?? null
}

/** Why the thread's latest failed answer failed, as the stream's `error` event said it. */
export function lastFailure(db: Db, threadId: string): string | null {
  const row = db
    .select({ error: generations.error })
    .from(generations)
    .where(and(eq(generations.threadId, threadId), eq(generations.status, 'error')))
    .orderBy(desc(generations.createdAt), desc(generations.messageId))
    .get()
  return row ? (row.error ?? 'The response failed') : null
}

export interface Rating {
  positive: boolean
  text: string | null
}

/** One person's ratings of the given messages, by message ID. */
export function ratingsBy(db: Db, userId: number, messageIds: string[]): Map<string, Rating> {
  if (messageIds.length === 0) return new Map()
  const rows = db
    .select({ messageId: feedback.messageId, positive: feedback.positive, text: feedback.feedbackText })
    .from(feedback)
    .where(and(eq(feedback.userId, userId), inArray(feedback.messageId, messageIds)))
    .all()
  return new Map(rows.map((row) => [row.messageId, { positive: row.positive, text: row.text }]))
}
