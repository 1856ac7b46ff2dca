// The threads repository on PostgreSQL (see repository.ts): Drizzle over Bun.SQL, a pool of connections under READ
// COMMITTED. Every atomic method is one transaction with every statement on `tx`. A write of `threads.updated_at`
// takes the next update sequence from a one-row clock and holds that row until commit (the trigger in
// db/migrations/postgres/0001_update_order.sql), so sequences commit in order and a reader following them misses
// nothing; thread writes therefore take turns on the clock, and each writes `updated_at` last and once, keeping
// its turn short. Search is a filter on the documents search.pg.ts keeps. The read paths of every API request (a
// thread by ID, the list cursor, list pages) are prepared once per database (src/db/prepared.ts): building their
// Drizzle query cost more than running it. Searches are planned for their words instead (listThreads).
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, max, ne, or, type SQL, sql } from 'drizzle-orm'
import { attachments } from '../attachments/attachments.table.pg'
import { users } from '../auth/auth.table.pg'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import { generations } from '../generation/generations.table.pg'
import { newId } from '../shared/ids'
import {
  type ChangeRow,
  type ContentBlock,
  changeOf,
  type MessageRole,
  type MessageRow,
  type ThreadListQuery,
  type ThreadRepository,
  type Viewer,
} from './repository'
import { searchableText } from './search'
import { documentHolding, flushPgSearchIndex, searchTerms } from './search.pg'
import {
  feedback,
  messages,
  threadFeedHorizon,
  threadSearch,
  threads,
  threadTombstones,
  threadUpdateClock,
} from './threads.table.pg'

type Tx = Parameters<Parameters<PgDb['transaction']>[0]>[0]

/**
 * The threads a viewer may see: never another organization's; private ones only their owner's. Written with the
 * placeholders `organizationId` and `userId`, so the statements using it are prepared once.
 */
function visibleTo(sees: Viewer['sees']): SQL {
  const userId = sql.placeholder('userId')
  if (sees === 'own') return eq(threads.ownerId, userId)
  return and(
    eq(threads.organizationId, sql.placeholder('organizationId')),
    or(eq(threads.isPrivate, false), eq(threads.ownerId, userId)),
  ) as SQL
}

const viewerValues = (viewer: Viewer) => ({ organizationId: viewer.organizationId, userId: viewer.userId })

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
  since: boolean
  /** `updated_at` only: the cursor bounds the update sequence. */
  below: boolean
  /** `created_at` only. */
  cursor: boolean
  /** Which copy on the document narrows a search, or no search. */
  search: 'organization' | 'owner' | undefined
}

/** A list page's query, with every value that varies within its shape a placeholder. */
function listQuery(db: PgDb | Tx, shape: ListShape) {
  const userId = sql.placeholder('userId')
  const conditions: (SQL | undefined)[] = [visibleTo(shape.sees)]
  if (shape.owned === true) conditions.push(eq(threads.ownerId, userId))
  if (shape.owned === false) conditions.push(ne(threads.ownerId, userId))
  if (shape.private !== undefined) conditions.push(eq(threads.isPrivate, shape.private))
  if (!shape.archived) conditions.push(eq(threads.archived, false))
  if (shape.since) conditions.push(gte(threads.updateSeq, sql.placeholder('seqFrom')))
  if (shape.below) conditions.push(lte(threads.updateSeq, sql.placeholder('seqTo')))
  if (shape.cursor) {
    // A row comparison, which Drizzle does not build: strictly after the cursor in the order asked for.
    const createdAt = sql.placeholder('afterCreatedAt')
    const id = sql.placeholder('afterId')
    conditions.push(
      shape.descending
        ? sql`(${threads.createdAt}, ${threads.id}) < (${createdAt}, ${id})`
        : sql`(${threads.createdAt}, ${threads.id}) > (${createdAt}, ${id})`,
    )
  }
  const order =
    shape.sortBy === 'updated_at'
      ? [shape.descending ? desc(threads.updateSeq) : asc(threads.updateSeq)]
      : shape.descending
        ? [desc(threads.createdAt), desc(threads.id)]
        : [asc(threads.createdAt), asc(threads.id)]
  const rows = db.select(threadColumns).from(threads).innerJoin(users, eq(users.id, threads.ownerId))
  const limit = sql.placeholder('limit')
  if (shape.search === undefined) {
    return rows
      .where(and(...conditions))
      .orderBy(...order)
      .limit(limit)
  }
  // The document's copies of the thread's organization and owner (which never change) let the index narrow them.
  const scope =
    shape.search === 'owner'
      ? eq(threadSearch.ownerId, userId)
      : eq(threadSearch.organizationId, sql.placeholder('organizationId'))
  const terms = {
    indexed: sql.placeholder('indexed'),
    every: sql.placeholder('every'),
    each: sql.placeholder('each'),
  }
  return rows
    .innerJoin(threadSearch, eq(threadSearch.threadSeq, threads.seq))
    .where(and(...conditions, scope, documentHolding(terms)))
    .orderBy(...order)
    .limit(limit)
}

async function listThreads(db: PgDb, query: ThreadListQuery) {
  const { viewer } = query
  let search: ListShape['search']
  if (query.words !== undefined) {
    // Writes leave documents queued (see search.pg.ts): a search first brings every one of them up to date.
    await flushPgSearchIndex(db)
    // Private threads are listed to their owner only.
    search = viewer.sees === 'own' || query.owned === true || query.private === true ? 'owner' : 'organization'
  }
  const shape: ListShape = {
    sees: viewer.sees,
    sortBy: query.sortBy,
    descending: query.descending,
    owned: query.owned,
    private: query.private,
    archived: query.archived,
    since: query.seqFrom > 0,
    below: query.sortBy === 'updated_at' && query.seqTo !== undefined,
    cursor: query.sortBy === 'created_at' && query.after !== undefined,
    search,
  }
  const key = `list:${shape.sees}:${shape.sortBy}:${shape.descending}:${shape.owned}:${shape.private}:${shape.archived}:${shape.since}:${shape.below}:${shape.cursor}:${shape.search}`
  const values = {
    ...viewerValues(viewer),
    seqFrom: query.seqFrom,
    seqTo: query.seqTo,
    afterCreatedAt: query.after?.createdAt,
    afterId: query.after?.id,
    ...(query.words !== undefined && searchTerms(query.words)),
    limit: query.limit,
  }
  if (search === undefined) return prepared(db, key, () => listQuery(db, shape).prepare('list')).execute(values)
  // Each search is planned for its words. A statement the driver has prepared gets a generic plan after five runs,
  // and a generic plan cannot tell a word in every thread from a word in a few: it read every matching document of
  // the organization for common words (53 ms p50 at 10,000 threads, against 5 ms planned for the words, which walk
  // the threads in order and stop at a page). The setting ends with the transaction.
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local plan_cache_mode = force_custom_plan`)
    return listQuery(tx, shape).prepare('search').execute(values)
  })
}

/**
 * Inserts a user message at the end of its thread and queues its answer, in the caller's transaction. `newest` is
 * the thread's newest message time: a message is dated no earlier, even when the clock steps back.
 */
async function appendUserMessage(
  tx: Tx,
  threadId: string,
  contents: ContentBlock[],
  newest: number | null,
  now: number,
): Promise<string> {
  const id = newId()
  await tx.insert(messages).values({
    id,
    threadId,
    role: 'user',
    contents,
    text: searchableText(contents),
    createdAt: newest === null || now >= newest ? now : newest + 1,
  })
  await tx.insert(generations).values({ messageId: id, threadId, status: 'queued', createdAt: now })
  return id
}

/**
 * Inserts a message at the end of its thread, or at `placedAt` (a summary takes the place of the messages it
 * replaces), in the caller's transaction, and returns its ID. At the end means at `now`, or just after the thread's
 * newest message if the clock has stepped back, so that messages list in the order they were written. Exported for
 * the answer store (generation), handed to it by the store's composition: it writes its messages in its own unit.
 */
export async function insertMessageRow(
  tx: Tx,
  input: { threadId: string; role: MessageRole; contents: ContentBlock[]; replyTo?: string; placedAt?: number },
  now: number,
): Promise<string> {
  let createdAt = input.placedAt
  if (createdAt === undefined) {
    const [newest] = await tx
      .select({ createdAt: max(messages.createdAt) })
      .from(messages)
      .where(eq(messages.threadId, input.threadId))
    const last = newest?.createdAt
    createdAt = last == null || now >= last ? now : last + 1
  }
  const id = newId()
  await tx.insert(messages).values({
    id,
    threadId: input.threadId,
    role: input.role,
    contents: input.contents,
    text: searchableText(input.contents),
    replyTo: input.replyTo ?? null,
    createdAt,
  })
  return id
}

type TombstoneOf = { id: string; organizationId: number; ownerId: number; isPrivate: boolean }

/**
 * Writes a tombstone at the next place in the update order, taken from the clock as thread writes take theirs (the
 * clock's row stays locked to commit, so tombstones and thread writes commit in order). Call it last in the caller's
 * transaction, after any thread row lock, as every thread write takes the two.
 */
async function writeTombstone(tx: Tx, thread: TombstoneOf, kind: 'deleted' | 'hidden', now: number): Promise<void> {
  const [clock] = await tx
    .update(threadUpdateClock)
    .set({ updateSeq: sql`${threadUpdateClock.updateSeq} + 1` })
    .where(eq(threadUpdateClock.id, 1))
    .returning({ seq: threadUpdateClock.updateSeq })
  await tx.insert(threadTombstones).values({
    updateSeq: clock?.seq ?? 0,
    threadId: thread.id,
    kind,
    organizationId: thread.organizationId,
    ownerId: thread.ownerId,
    isPrivate: thread.isPrivate,
    at: now,
  })
}

const subjectColumns = {
  id: threads.id,
  organizationId: threads.organizationId,
  ownerId: threads.ownerId,
  isPrivate: threads.isPrivate,
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

async function changes(db: PgDb, query: Parameters<ThreadRepository['changes']>[0]) {
  const filters = changeFilters(query.viewer)
  const t = threadTombstones
  const upTo = query.upTo ?? Number.MAX_SAFE_INTEGER
  const current = db
    .select({
      seq: threads.updateSeq,
      kind: sql<string>`'thread'::text`.as('kind'),
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
    // Each side stops after a page in its index's order: left to sort the whole union, a feed resuming from far back
    // read everything after its place for every page (20 ms a page at 10,000 threads, against 1 ms).
    .orderBy(threads.updateSeq)
    .limit(query.limit)
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
      createdSeq: sql<number>`0::bigint`,
    })
    .from(t)
    .where(and(gt(t.updateSeq, query.after), lte(t.updateSeq, upTo), filters.tombstones))
    .orderBy(t.updateSeq)
    .limit(query.limit)
  // One statement, one snapshot: a write committing between two reads could otherwise fall between them unseen.
  const rows = (await current.unionAll(gone).orderBy(sql`1`).limit(query.limit)) as ChangeRow[]
  return rows.map(changeOf)
}

/** Idle threads (nothing queued or running) last updated before `before`: what retention may delete. */
const idleSince = (before: number) => and(inArray(threads.state, ['ready', 'error']), lt(threads.updatedAt, before))

export function pgThreadRepository(db: PgDb): ThreadRepository {
  return {
    async findVisible(viewer, threadId) {
      const [row] = await prepared(db, `thread:visible:${viewer.sees}`, () =>
        db
          .select(threadColumns)
          .from(threads)
          .innerJoin(users, eq(users.id, threads.ownerId))
          .where(and(eq(threads.id, sql.placeholder('threadId')), visibleTo(viewer.sees)))
          .prepare('thread_visible'),
      ).execute({ ...viewerValues(viewer), threadId })
      return row
    },

    async state(threadId) {
      const [row] = await db.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId))
      return row?.state ?? null
    },

    async createThread(thread) {
      // The thread must exist before its message (a foreign key), so here the clock's turn starts with the insert.
      return db.transaction(async (tx) => {
        const threadId = newId()
        await tx.insert(threads).values({
          id: threadId,
          organizationId: thread.organizationId,
          ownerId: thread.ownerId,
          name: thread.name,
          state: thread.first?.role === 'user' ? 'waiting' : 'ready',
          isPrivate: thread.isPrivate,
          createdAt: thread.now,
          updatedAt: thread.now,
        })
        const first = thread.first
        if (!first) return { threadId, messageId: null }
        if (first.role === 'user') {
          return { threadId, messageId: await appendUserMessage(tx, threadId, first.contents, null, thread.now) }
        }
        const messageId = newId()
        await tx.insert(messages).values({
          id: messageId,
          threadId,
          role: first.role,
          contents: first.contents,
          text: searchableText(first.contents),
          createdAt: thread.now,
        })
        return { threadId, messageId }
      })
    },

    deleteThread(threadId, now, idleBefore) {
      return db.transaction(async (tx) => {
        // Deleting locks the thread's row first, as every other unit takes it, then cascades to the rest. Uploads
        // to a thread check it under the same lock, so none slips in between the read and the delete; a message
        // sent meanwhile has moved the thread out of `idleSince` by the time the lock is ours (retention).
        const still = idleBefore === undefined ? undefined : idleSince(idleBefore)
        const [locked] = await tx
          .select(subjectColumns)
          .from(threads)
          .where(and(eq(threads.id, threadId), still))
          .for('update')
        if (!locked) return null
        const files = await tx
          .select({ id: attachments.id, resized: attachments.resized })
          .from(attachments)
          .where(eq(attachments.threadId, threadId))
        await tx.delete(threads).where(eq(threads.id, threadId))
        await writeTombstone(tx, locked, 'deleted', now)
        return files
      })
    },

    async staleThreads(organizationId, before, limit) {
      const rows = await db
        .select({ id: threads.id })
        .from(threads)
        .where(and(eq(threads.organizationId, organizationId), idleSince(before)))
        .orderBy(asc(threads.updatedAt))
        .limit(limit)
      return rows.map(({ id }) => id)
    },

    async updateThread(threadId, changes, now) {
      const update = (on: PgDb | Tx) =>
        on
          .update(threads)
          .set({
            ...(changes.name !== undefined && { name: changes.name }),
            ...(changes.archived !== undefined && { archived: changes.archived }),
            ...(changes.isPrivate !== undefined && { isPrivate: changes.isPrivate }),
            updatedAt: now,
          })
          .where(eq(threads.id, threadId))
      if (changes.isPrivate !== true) {
        await update(db)
        return
      }
      await db.transaction(async (tx) => {
        const [before] = await tx.select(subjectColumns).from(threads).where(eq(threads.id, threadId)).for('update')
        await update(tx)
        if (before && !before.isPrivate) await writeTombstone(tx, before, 'hidden', now)
      })
    },

    changes(query) {
      return changes(db, query)
    },

    async feedBounds() {
      const [clock] = await db.select({ seq: threadUpdateClock.updateSeq }).from(threadUpdateClock)
      const [horizon] = await db.select({ seq: threadFeedHorizon.updateSeq }).from(threadFeedHorizon)
      return { head: clock?.seq ?? 0, horizon: horizon?.seq ?? 0 }
    },

    sweepTombstones(before) {
      return db.transaction(async (tx) => {
        const t = threadTombstones
        const [newest] = await tx.select({ seq: max(t.updateSeq) }).from(t)
        if (newest?.seq == null) return 0
        const doomed = and(lt(t.at, before), lt(t.updateSeq, newest.seq))
        const removed = await tx.delete(t).where(doomed).returning({ seq: t.updateSeq })
        if (removed.length === 0) return 0
        const highest = removed.reduce((high, row) => Math.max(high, row.seq), 0)
        await tx
          .update(threadFeedHorizon)
          .set({ updateSeq: sql`greatest(${threadFeedHorizon.updateSeq}, ${highest})` })
          .where(eq(threadFeedHorizon.id, 1))
        return removed.length
      })
    },

    async updateSeqAt(since) {
      // `updated_at` never decreases along the update sequence (the trigger holds it back), so "updated after
      // `since`" is exactly "update_seq after this"; sequences commit in order, so none below it is still to come.
      const [row] = await db
        .select({ updateSeq: threads.updateSeq })
        .from(threads)
        .where(lte(threads.updatedAt, since))
        .orderBy(desc(threads.updatedAt), desc(threads.updateSeq))
        .limit(1)
      return row?.updateSeq ?? 0
    },

    async listCursor(viewer, threadId, sortBy) {
      const [row] = await prepared(db, `thread:cursor:${viewer.sees}:${sortBy}`, () => {
        const scope =
          viewer.sees === 'own' || sortBy === 'updated_at'
            ? visibleTo(viewer.sees)
            : eq(threads.organizationId, sql.placeholder('organizationId'))
        return db
          .select({ updateSeq: threads.updateSeq, createdAt: threads.createdAt, id: threads.id })
          .from(threads)
          .where(and(eq(threads.id, sql.placeholder('threadId')), scope))
          .prepare('thread_cursor')
      }).execute({ ...viewerValues(viewer), threadId })
      return row
    },

    listThreads(query) {
      return listThreads(db, query)
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
        .select(messageColumns)
        .from(messages)
        .where(and(...conditions))
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .limit(page.limit)) as MessageRow[]
    },

    async findMessage(threadId, messageId) {
      const [row] = await db
        .select({ role: messages.role })
        .from(messages)
        .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId)))
      return row
    },

    async latestMessage(threadId) {
      const [row] = await db
        .select({ id: messages.id, contents: messages.contents })
        .from(messages)
        .where(and(eq(messages.threadId, threadId), eq(messages.active, true)))
        .orderBy(desc(messages.createdAt), desc(messages.id))
        .limit(1)
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
      return (await db
        .select(messageColumns)
        .from(messages)
        .where(eq(messages.replyTo, messageId))
        .orderBy(asc(messages.createdAt), asc(messages.id))) as MessageRow[]
    },

    async attachmentKinds(threadId, attachmentIds) {
      if (attachmentIds.length === 0) return new Map()
      const rows = await db
        .select({ id: attachments.id, kind: attachments.kind })
        .from(attachments)
        .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, attachmentIds)))
      return new Map(rows.map(({ id, kind }) => [id, kind]))
    },

    async sendUserMessage(threadId, contents, now) {
      return db.transaction(async (tx) => {
        // The conditional update is the lock: of any number of concurrent sends, one moves the thread and holds its
        // row to commit; the others wait for it, then find the thread no longer ready and write nothing. It leaves
        // updated_at alone, so the clock is taken only by the last statement.
        const [claimed] = await tx
          .update(threads)
          .set({ state: 'waiting' })
          .where(and(eq(threads.id, threadId), eq(threads.state, 'ready')))
          .returning({ id: threads.id })
        if (!claimed) return null
        const [newest] = await tx
          .select({ createdAt: max(messages.createdAt) })
          .from(messages)
          .where(eq(messages.threadId, threadId))
        const messageId = await appendUserMessage(tx, threadId, contents, newest?.createdAt ?? null, now)
        await tx.update(threads).set({ updatedAt: now }).where(eq(threads.id, threadId))
        return messageId
      })
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
  }
}
