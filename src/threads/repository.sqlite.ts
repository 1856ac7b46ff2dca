// The threads repository on SQLite (see repository.ts): Drizzle over bun:sqlite, with the statements of the hot
// paths (a thread by ID, list pages, message sends) prepared once per database (src/db/prepared.ts), rows read by
// position, and the query plans SQLite must be told. Search statements take their FTS5 pieces from search.fts5.ts.
// A transaction cannot await on bun:sqlite, so each atomic method does all its work synchronously inside one.
import { and, asc, between, desc, eq, gt, gte, inArray, lt, lte, max, ne, or, type SQL, sql } from 'drizzle-orm'
import { attachments } from '../attachments/attachments.table'
import { users } from '../auth/auth.table'
import type { Db } from '../db/client'
import { prepared } from '../db/prepared'
import { generations } from '../generation/generations.table'
import { newId } from '../shared/ids'
import {
  type ChangeRow,
  type ContentBlock,
  changeOf,
  type MessageRole,
  type MessageRow,
  type ThreadListQuery,
  type ThreadRepository,
  type ThreadRow,
  type ThreadState,
  type Viewer,
} from './repository'
import { searchableText } from './search'
import {
  documentOrder,
  documentsMatching,
  documentThread,
  flushSearchIndex,
  ftsQuery,
  inMatches,
  keyMask,
  keyRange,
  ownedBy,
  probeMatches,
  type SearchPlan,
  searchPlan,
  searchTable,
} from './search.fts5'
import { feedback, messages, threadFeedHorizon, threads, threadTombstones } from './threads.table'

/**
 * The threads a viewer may see: never another organization's; private ones only their owner's. Written
 * with the placeholders `organizationId` and `userId` so the statements using it are prepared once.
 */
function visibleTo(sees: Viewer['sees'], indexed = true): SQL {
  const userId = sql.placeholder('userId')
  // A unary + keeps SQLite from using the column's index (see search.fts5.ts, the `matches` plan).
  const owner = indexed ? sql`${threads.ownerId}` : sql`+${threads.ownerId}`
  const organization = indexed ? sql`${threads.organizationId}` : sql`+${threads.organizationId}`
  if (sees === 'own') return eq(owner, userId)
  return and(
    eq(organization, sql.placeholder('organizationId')),
    or(eq(threads.isPrivate, false), eq(threads.ownerId, userId)),
  ) as SQL
}

const viewerValues = (viewer: Viewer) => ({ organizationId: viewer.organizationId, userId: viewer.userId })

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

const messageColumns = {
  id: messages.id,
  threadId: messages.threadId,
  role: messages.role,
  contents: messages.contents,
  createdAt: messages.createdAt,
}

/** Which statement a list request needs; every value that varies within a shape is a placeholder. */
interface ListShape {
  sees: Viewer['sees']
  sortBy: 'created_at' | 'updated_at'
  descending: boolean
  owned: boolean | undefined
  private: boolean | undefined
  archived: boolean
  /** `created_at` only: `updated_at` bounds the update sequence instead. */
  since: boolean
  /** `index`: the search index in update order; the plans serve `created_at` (see search.fts5.ts). */
  search: 'index' | SearchPlan | undefined
  /** `created_at` only: `updated_at` cursors are bounds on the update sequence. */
  cursor: boolean
}

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

/** The `after` thread's sort key, within the scope repository.ts describes for `listCursor`. */
function prepareCursor(db: Db, sees: Viewer['sees'], sortBy: 'created_at' | 'updated_at') {
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

function listThreads(db: Db, query: ThreadListQuery): ThreadRow[] {
  const { viewer, sortBy } = query
  let fts: string | undefined
  let search: ListShape['search']
  if (query.words !== undefined) {
    // Only the owner's token narrows the index; the other filters are checks on the rows it yields.
    const ownOnly = viewer.sees === 'own' || query.owned === true || query.private === true
    fts = ownOnly ? ownedBy(ftsQuery(query.words), viewer.userId) : ftsQuery(query.words)
    // Writes leave documents pending (see search.fts5.ts): a search first brings the index up to date.
    flushSearchIndex(db)
    search = sortBy === 'updated_at' ? 'index' : searchPlan(db, fts, viewer.organizationId)
  }
  const shape: ListShape = {
    sees: viewer.sees,
    sortBy,
    descending: query.descending,
    owned: query.owned,
    private: query.private,
    archived: query.archived,
    since: sortBy === 'created_at' && query.seqFrom > 0,
    search,
    cursor: sortBy === 'created_at' && query.after !== undefined,
  }
  const key = `list:${shape.sees}:${sortBy}:${shape.descending}:${shape.owned}:${shape.private}:${shape.archived}:${shape.since}:${shape.search}:${shape.cursor}`
  return prepared(db, key, () => prepareList(db, shape))
    .values({
      ...viewerValues(viewer),
      seqLo: query.seqFrom,
      // The biggest update sequence a search key can hold (search.fts5.ts): the open end of a range.
      seqHi: query.seqTo ?? keyMask,
      fts,
      cursorKey: query.after?.createdAt,
      cursorId: query.after?.id,
      limit: query.limit,
    })
    .map(threadRowOf)
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
 * replaces), and returns its ID. Exported for other features' SQLite units of work that write a message among
 * their own rows (an answer, a compaction): inside their transaction, pass the same `db` (see src/db/prepared.ts).
 */
export function insertMessageRow(
  db: Db,
  input: { threadId: string; role: MessageRole; contents: ContentBlock[]; replyTo?: string; placedAt?: number },
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

/** Queues the answer to a user message just inserted, in the same transaction. */
function queueAnswer(db: Db, messageId: string, threadId: string, now: number): void {
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
}

/**
 * The messages that answer a user message, oldest first. Exported, with the two readers below, for the answer
 * stream's replay, which reads them synchronously inside a stream's start (src/generation/index.ts).
 */
export function repliesOf(db: Db, messageId: string): MessageRow[] {
  return prepared(db, 'message:replies', () =>
    db
      .select(messageColumns)
      .from(messages)
      .where(eq(messages.replyTo, sql.placeholder('messageId')))
      .orderBy(asc(messages.createdAt), asc(messages.id))
      .prepare(),
  ).all({ messageId }) as MessageRow[]
}

/** See ThreadRepository.pendingMessageId. */
export function pendingMessageOf(db: Db, threadId: string): string | null {
  const row = db
    .select({ messageId: generations.messageId })
    .from(generations)
    .where(and(eq(generations.threadId, threadId), inArray(generations.status, ['queued', 'running'])))
    .orderBy(desc(generations.createdAt), desc(generations.messageId))
    .get()
  return row?.messageId ?? null
}

/** See ThreadRepository.state. */
export function stateOf(db: Db, threadId: string): ThreadState | null {
  return db.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId)).get()?.state ?? null
}

/**
 * The last place in the update order handed out: the threads' or a tombstone's, whichever is greater (the triggers
 * in 0011_thread_feed.sql continue from the same).
 */
function lastSeq(db: Db): number {
  const thread =
    db
      .select({ seq: max(threads.updateSeq) })
      .from(threads)
      .get()?.seq ?? 0
  const tombstone =
    db
      .select({ seq: max(threadTombstones.updateSeq) })
      .from(threadTombstones)
      .get()?.seq ?? 0
  return Math.max(thread, tombstone)
}

type TombstoneOf = { id: string; organizationId: number; ownerId: number; isPrivate: boolean }

/** Writes a tombstone at the next place in the update order; inside the caller's transaction. */
function writeTombstone(db: Db, thread: TombstoneOf, kind: 'deleted' | 'hidden', now: number): void {
  db.insert(threadTombstones)
    .values({
      updateSeq: lastSeq(db) + 1,
      threadId: thread.id,
      kind,
      organizationId: thread.organizationId,
      ownerId: thread.ownerId,
      isPrivate: thread.isPrivate,
      at: now,
    })
    .run()
}

function tombstoneSubject(db: Db, threadId: string): TombstoneOf | undefined {
  return db
    .select({
      id: threads.id,
      organizationId: threads.organizationId,
      ownerId: threads.ownerId,
      isPrivate: threads.isPrivate,
    })
    .from(threads)
    .where(eq(threads.id, threadId))
    .get()
}

/** What the feed shows a viewer: see ThreadRepository.changes. */
function changeFilters(viewer: Viewer | undefined): { threads?: SQL; tombstones?: SQL } {
  if (!viewer) return {}
  const t = threadTombstones
  if (viewer.sees === 'own') {
    return {
      threads: eq(threads.ownerId, viewer.userId),
      tombstones: and(eq(t.ownerId, viewer.userId), eq(t.kind, 'deleted')),
    }
  }
  return {
    threads: and(
      eq(threads.organizationId, viewer.organizationId),
      or(eq(threads.isPrivate, false), eq(threads.ownerId, viewer.userId)),
    ),
    tombstones: and(
      eq(t.organizationId, viewer.organizationId),
      or(
        and(eq(t.kind, 'deleted'), or(eq(t.isPrivate, false), eq(t.ownerId, viewer.userId))),
        and(eq(t.kind, 'hidden'), ne(t.ownerId, viewer.userId)),
      ),
    ),
  }
}

function changes(db: Db, query: Parameters<ThreadRepository['changes']>[0]) {
  const filters = changeFilters(query.viewer)
  const t = threadTombstones
  const upTo = query.upTo ?? Number.MAX_SAFE_INTEGER
  const current = db
    .select({
      seq: threads.updateSeq,
      kind: sql<string>`'thread'`.as('kind'),
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
    .where(and(gt(threads.updateSeq, query.after), lte(threads.updateSeq, upTo), filters.threads))
  const gone = db
    .select({
      seq: t.updateSeq,
      kind: t.kind,
      id: t.threadId,
      organizationId: t.organizationId,
      ownerId: t.ownerId,
      isPrivate: t.isPrivate,
      name: sql<never>`null`,
      state: sql<never>`null`,
      archived: sql<never>`null`,
      ownerSub: sql<never>`null`,
      ownerName: sql<never>`null`,
      createdAt: sql<never>`null`,
      updatedAt: sql<never>`null`,
      createdSeq: sql<number>`0`,
    })
    .from(t)
    .where(and(gt(t.updateSeq, query.after), lte(t.updateSeq, upTo), filters.tombstones))
  // One compound statement: a write between two reads could otherwise fall between their positions unseen.
  const rows = current.unionAll(gone).orderBy(sql`1`).limit(query.limit).all() as ChangeRow[]
  return rows.map(changeOf)
}

/** Idle threads (nothing queued or running) last updated before `before`: what retention may delete. */
const idleSince = (before: number) => and(inArray(threads.state, ['ready', 'error']), lt(threads.updatedAt, before))

export function sqliteThreadRepository(db: Db): ThreadRepository {
  return {
    async findVisible(viewer, threadId) {
      const statement = prepared(db, `thread:${viewer.sees}`, () =>
        db
          .select(threadColumns)
          .from(threads)
          .innerJoin(users, eq(users.id, threads.ownerId))
          .where(and(eq(threads.id, sql.placeholder('threadId')), visibleTo(viewer.sees)))
          .prepare(),
      )
      const values = statement.values({ threadId, ...viewerValues(viewer) })[0]
      return values && threadRowOf(values)
    },

    async state(threadId) {
      return stateOf(db, threadId)
    },

    async createThread(thread) {
      // The insert marks the thread's search document pending; it is written later from the committed rows.
      return db.transaction(() => {
        const threadId = newId()
        db.insert(threads)
          .values({
            id: threadId,
            organizationId: thread.organizationId,
            ownerId: thread.ownerId,
            name: thread.name,
            state: thread.first?.role === 'user' ? 'waiting' : 'ready',
            isPrivate: thread.isPrivate,
            createdAt: thread.now,
            updatedAt: thread.now,
          })
          .run()
        if (!thread.first) return { threadId, messageId: null }
        const messageId = insertMessageRow(db, { threadId, ...thread.first }, thread.now)
        if (thread.first.role === 'user') queueAnswer(db, messageId, threadId, thread.now)
        return { threadId, messageId }
      })
    },

    async deleteThread(threadId, now, idleBefore) {
      return db.transaction((tx) => {
        // Retention's delete: only a thread still idle and old, judged in this unit (a message sent since keeps it).
        if (idleBefore !== undefined) {
          const idle = tx
            .select({ id: threads.id })
            .from(threads)
            .where(and(eq(threads.id, threadId), idleSince(idleBefore)))
            .get()
          if (!idle) return null
        }
        const subject = tombstoneSubject(tx as unknown as Db, threadId)
        if (!subject) return null
        const files = tx
          .select({ id: attachments.id, resized: attachments.resized })
          .from(attachments)
          .where(eq(attachments.threadId, threadId))
          .all()
        // Written first: its place must follow the thread's own, which the delete takes out of the threads' maximum.
        writeTombstone(tx as unknown as Db, subject, 'deleted', now)
        // Foreign keys cascade to the rest; the search document goes with the trigger on threads.
        tx.delete(threads).where(eq(threads.id, threadId)).run()
        return files
      })
    },

    async staleThreads(organizationId, before, limit) {
      const rows = db
        .select({ id: threads.id })
        .from(threads)
        .where(and(eq(threads.organizationId, organizationId), idleSince(before)))
        .orderBy(asc(threads.updatedAt))
        .limit(limit)
        .all()
      return rows.map(({ id }) => id)
    },

    async updateThread(threadId, changes, now) {
      const update = () =>
        db
          .update(threads)
          .set({
            ...(changes.name !== undefined && { name: changes.name }),
            ...(changes.archived !== undefined && { archived: changes.archived }),
            ...(changes.isPrivate !== undefined && { isPrivate: changes.isPrivate }),
            updatedAt: now,
          })
          .where(eq(threads.id, threadId))
          .run()
      if (changes.isPrivate !== true) {
        update()
        return
      }
      db.transaction(() => {
        const before = tombstoneSubject(db, threadId)
        update()
        if (before && !before.isPrivate) writeTombstone(db, before, 'hidden', now)
      })
    },

    async changes(query) {
      return changes(db, query)
    },

    async feedBounds() {
      const horizon = db.select({ seq: threadFeedHorizon.updateSeq }).from(threadFeedHorizon).get()?.seq ?? 0
      return { head: lastSeq(db), horizon }
    },

    async sweepTombstones(before) {
      return db.transaction((tx) => {
        const t = threadTombstones
        const newest = tx
          .select({ seq: max(t.updateSeq) })
          .from(t)
          .get()?.seq
        if (newest == null) return 0
        const doomed = and(lt(t.at, before), lt(t.updateSeq, newest))
        const removed = tx.delete(t).where(doomed).returning({ seq: t.updateSeq }).all()
        if (removed.length === 0) return 0
        const highest = removed.reduce((high, row) => Math.max(high, row.seq), 0)
        tx.update(threadFeedHorizon)
          .set({ updateSeq: sql`max(${threadFeedHorizon.updateSeq}, ${highest})` })
          .where(eq(threadFeedHorizon.id, 1))
          .run()
        return removed.length
      })
    },

    async updateSeqAt(since) {
      // `updated_at` never decreases along the update sequence (the triggers hold it back), so "updated after
      // `since`" is exactly "update_seq after this".
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
    },

    async listCursor(viewer, threadId, sortBy) {
      const statement = prepared(db, `cursor:${viewer.sees}:${sortBy}`, () => prepareCursor(db, viewer.sees, sortBy))
      return statement.get({ threadId, ...viewerValues(viewer) })
    },

    async listThreads(query) {
      return listThreads(db, query)
    },

    async listMessages(threadId, page) {
      const conditions: SQL[] = [eq(messages.threadId, threadId), eq(messages.active, true)]
      if (page.after !== undefined) {
        const cursor = db
          .select({ createdAt: messages.createdAt, id: messages.id })
          .from(messages)
          .where(and(eq(messages.id, page.after), eq(messages.threadId, threadId)))
          .get()
        if (!cursor) return null
        conditions.push(sql`(${messages.createdAt}, ${messages.id}) > (${cursor.createdAt}, ${cursor.id})`)
      }
      return db
        .select(messageColumns)
        .from(messages)
        .where(and(...conditions))
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .limit(page.limit)
        .all() as MessageRow[]
    },

    async findMessage(threadId, messageId) {
      return prepared(db, 'message:find', () =>
        db
          .select({ role: messages.role })
          .from(messages)
          .where(and(eq(messages.id, sql.placeholder('messageId')), eq(messages.threadId, sql.placeholder('threadId'))))
          .prepare(),
      ).get({ messageId, threadId })
    },

    async latestMessage(threadId) {
      const row = prepared(db, 'message:latest', () =>
        db
          .select({ id: messages.id, contents: messages.contents })
          .from(messages)
          .where(and(eq(messages.threadId, sql.placeholder('threadId')), eq(messages.active, true)))
          .orderBy(desc(messages.createdAt), desc(messages.id))
          .limit(1)
          .prepare(),
      ).get({ threadId })
      return row ? { id: row.id, contents: row.contents as ContentBlock[] } : null
    },

    async activeMessages(threadId) {
      return db
        .select({ role: messages.role, contents: messages.contents })
        .from(messages)
        .where(and(eq(messages.threadId, threadId), eq(messages.active, true)))
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .all() as { role: MessageRole; contents: ContentBlock[] }[]
    },

    async replies(messageId) {
      return repliesOf(db, messageId)
    },

    async attachmentKinds(threadId, attachmentIds) {
      const rows = db
        .select({ id: attachments.id, kind: attachments.kind })
        .from(attachments)
        .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, attachmentIds)))
        .all()
      return new Map(rows.map(({ id, kind }) => [id, kind]))
    },

    async sendUserMessage(threadId, contents, now) {
      // Prepared statements run on the transaction's connection (see src/db/prepared.ts).
      return db.transaction(() => {
        // The conditional state update is the lock: of two concurrent sends exactly one moves the thread.
        const moved = prepared(db, 'thread:claim', () =>
          db
            .update(threads)
            .set({ state: 'waiting', updatedAt: sql`${sql.placeholder('now')}` })
            .where(and(eq(threads.id, sql.placeholder('threadId')), eq(threads.state, 'ready')))
            .returning({ id: threads.id })
            .prepare(),
        ).get({ threadId, now })
        if (!moved) return null
        const messageId = insertMessageRow(db, { threadId, role: 'user', contents }, now)
        queueAnswer(db, messageId, threadId, now)
        return messageId
      })
    },

    async pendingMessageId(threadId) {
      return pendingMessageOf(db, threadId)
    },

    async lastFailure(threadId) {
      const row = db
        .select({ error: generations.error })
        .from(generations)
        .where(and(eq(generations.threadId, threadId), eq(generations.status, 'error')))
        .orderBy(desc(generations.createdAt), desc(generations.messageId))
        .get()
      return row ?? null
    },

    async rate(rating) {
      const values = { positive: rating.positive, feedbackText: rating.text, updatedAt: rating.now }
      db.insert(feedback)
        .values({ messageId: rating.messageId, userId: rating.userId, createdAt: rating.now, ...values })
        .onConflictDoUpdate({ target: [feedback.messageId, feedback.userId], set: values })
        .run()
    },

    async ratingsBy(userId, messageIds) {
      if (messageIds.length === 0) return new Map()
      const rows = db
        .select({ messageId: feedback.messageId, positive: feedback.positive, text: feedback.feedbackText })
        .from(feedback)
        .where(and(eq(feedback.userId, userId), inArray(feedback.messageId, messageIds)))
        .all()
      return new Map(rows.map((row) => [row.messageId, { positive: row.positive, text: row.text }]))
    },
  }
}
