// The threads repository on PostgreSQL (see repository.ts): what differs from SQLite, over the dialect-neutral methods
// of repository.common.ts. Drizzle over Bun.SQL, a pool of connections under READ COMMITTED: every unit of work is
// one transaction with every statement on `tx`. A write of `threads.updated_at` takes the next update sequence from
// a one-row clock and holds that row until commit (the trigger in db/migrations/postgres/0001_update_order.sql), so
// sequences commit in order and a reader following them misses nothing; thread writes therefore take turns on the
// clock, and each writes `updated_at` last and once, keeping its turn short. Search is a filter on the documents
// search.pg.ts keeps. The thread by ID, list pages and searches in the update order (probes of recency blocks) are
// prepared once per database (src/db/prepared.ts): building their Drizzle query cost more than running it. Searches by
// `created_at` are planned for their words instead (listThreads).
import { and, asc, type Column, desc, eq, gte, inArray, lt, lte, max, ne, sql } from 'drizzle-orm'
import { attachments, attachmentTexts } from '../attachments/attachments.table.pg'
import { users } from '../auth/auth.table.pg'
import { anyDb, type PgAppend } from '../db/dialect'
import type { PgDb, PgTx as Tx } from '../db/postgres'
import { inTransaction, prepared } from '../db/prepared'
import { generations } from '../generation/generations.table.pg'
import { newId } from '../shared/ids'
import type { ContentBlock, NewMessageRow, ThreadListQuery, ThreadRepository } from './repository'
import {
  afterKey,
  type ChangeRow,
  changeOf,
  changeSides,
  childrenOf,
  commonThreadRepository,
  fileBlockPattern,
  idleSince,
  idleStates,
  type ListFilters,
  listConditions,
  listedAfter,
  listFiltersOf,
  listOrder,
  messagePlaceholders,
  messageValues,
  type NewestMessages,
  newThreadRow,
  pendingFileTexts,
  refusedWrite,
  requeuedGeneration,
  requireActiveUser,
  searchSourcesReader,
  stateAfterActivate,
  type ThreadTables,
  type TombstoneOf,
  TreeRefused,
  threadColumns as threadColumnsOf,
  threadUpdate,
  tombstoneColumns,
  tombstoneRow,
  treeColumns,
  viewerPlaceholders,
  viewerValues,
  visibleTo,
} from './repository.common'
import {
  documentHolding,
  flushQueued,
  probeSchedule,
  type SearchQuery,
  scopeQuery,
  searchQueryOf,
  searchStart,
} from './search.pg'
import { searchSourceBounds, vocabularyPrefixes } from './search-text'
import * as threadTables from './threads.table.pg'
import {
  messages,
  threadFeedHorizon,
  threadSearch,
  threads,
  threadTombstones,
  threadUpdateClock,
} from './threads.table.pg'

const tables: ThreadTables = { ...threadTables, users, attachments, attachmentTexts, generations }

/**
 * A message's content blocks as rows (searchSources): json_array_elements numbered, named as SQLite's json_each
 * names its columns. Contents are JSON kept as text (threads.table.pg.ts), so they are cast here.
 */
const contentBlocks = {
  rows: (contents: Column) => sql`json_array_elements(${contents}::json) with ordinality as j(value, key)`,
  attachmentId: sql`(j.value ->> 'attachment_id')`,
}
const threadColumns = threadColumnsOf(tables)

/** Which statement a list request needs; every value that varies within a shape is a placeholder. */
interface ListShape extends ListFilters {
  sortBy: 'created_at' | 'updated_at'
  descending: boolean
  since: boolean
  /** `updated_at` only: the cursor bounds the update sequence. */
  below: boolean
  /** `created_at` only. */
  cursor: boolean
  /** A search, and how: `probes` of recency blocks in the update order, or one GIN scan for `created_at`. */
  search: 'probes' | 'scan' | undefined
}

/** A list page's query, with every value that varies within its shape a placeholder. */
function listQuery(db: PgDb | Tx, shape: ListShape) {
  const conditions = listConditions(tables, shape)
  if (shape.since) conditions.push(gte(threads.updateSeq, sql.placeholder('seqFrom')))
  if (shape.below) conditions.push(lte(threads.updateSeq, sql.placeholder('seqTo')))
  if (shape.cursor)
    conditions.push(afterKey(tables, shape.descending, sql.placeholder('afterCreatedAt'), sql.placeholder('afterId')))
  const order = listOrder(tables, shape.sortBy, shape.descending)
  const rows = db.select(threadColumns).from(threads).innerJoin(users, eq(users.id, threads.ownerId))
  const limit = sql.placeholder('limit')
  if (shape.search === undefined) {
    return rows
      .where(and(...conditions))
      .orderBy(...order)
      .limit(limit)
  }
  // The document's copy of the thread's organization lets the planner walk the organization's threads instead.
  return rows
    .innerJoin(threadSearch, eq(threadSearch.threadSeq, threads.seq))
    .where(
      and(
        ...conditions,
        eq(threadSearch.organizationId, sql.placeholder('organizationId')),
        documentHolding(sql.placeholder('indexed'), sql.placeholder('groups')),
      ),
    )
    .orderBy(...order)
    .limit(limit)
}

/**
 * A search in the update order (search.pg.ts, probeSchedule): for each probe in turn, the page of its block's
 * matches, until the page is full. A GIN index cannot return matches newest first, and sorting every match of a word
 * in a few percent of the threads cost 12 ms at 1M messages; a block holds a few hundred update sequences at first
 * and more with each probe, so a common word fills the page from the first blocks and a rare one costs a probe per
 * level, each answered by the GIN index alone. The probes come as three arrays (`unnest`): the nested loop returns
 * their pages in the arrays' order, each in the update order, and the outer LIMIT ends the loop once the page is
 * full, so the blocks the page does not need are never read. A document whose thread was written after this search's
 * flush (`update_seq` moved) is left out: that write is newer than the search.
 */
function probesQuery(db: PgDb, shape: ListShape) {
  const limit = sql.placeholder('limit')
  const page = db
    .select({ ...threadColumns, ownerName: sql<string | null>`${users.name}`.as('owner_name') })
    .from(threadSearch)
    .innerJoin(threads, eq(threads.seq, threadSearch.threadSeq))
    .innerJoin(users, eq(users.id, threads.ownerId))
    .where(
      and(
        ...listConditions(tables, shape),
        documentHolding(sql`probe.query`, sql.placeholder('groups')),
        sql`${threadSearch.updateSeq} between probe.low and probe.high`,
        eq(threads.updateSeq, threadSearch.updateSeq),
      ),
    )
    .orderBy(shape.descending ? desc(threads.updateSeq) : asc(threads.updateSeq))
    .limit(limit)
    .as('page')
  // Raw SQL for the probes only: Drizzle has no table function with column names.
  const probes = sql`unnest(${sql.placeholder('queries')}::text[], ${sql.placeholder('lows')}::bigint[],
    ${sql.placeholder('highs')}::bigint[]) as probe(query, low, high)`
  return db
    .select({
      id: page.id,
      name: page.name,
      state: page.state,
      isPrivate: page.isPrivate,
      archived: page.archived,
      ownerId: page.ownerId,
      ownerSub: page.ownerSub,
      ownerName: page.ownerName,
      createdAt: page.createdAt,
      updatedAt: page.updatedAt,
    })
    .from(probes)
    .crossJoinLateral(page)
    .limit(limit)
}

async function listThreads(db: PgDb, query: ThreadListQuery) {
  const { viewer } = query
  let search: SearchQuery | undefined
  let head = 0
  if (query.search !== undefined) {
    // Writes leave documents queued (see search.pg.ts): a search first brings every one of them up to date.
    let start = await searchStart(db, query.search)
    // The documents it rewrites may add words to the vocabulary: then it is read again (rarely: writes are flushed
    // in the background within a second).
    if ((await flushQueued(db, start.queued)) > 0 && vocabularyPrefixes(query.search).length > 0) {
      start = await searchStart(db, query.search)
    }
    head = start.head
    search = searchQueryOf(query.search, start.vocabulary)
  }
  const shape: ListShape = {
    ...listFiltersOf(query),
    sortBy: query.sortBy,
    descending: query.descending,
    since: query.seqFrom > 0,
    below: query.sortBy === 'updated_at' && query.seqTo !== undefined,
    cursor: query.sortBy === 'created_at' && query.after !== undefined,
    search: search === undefined ? undefined : query.sortBy === 'updated_at' ? 'probes' : 'scan',
  }
  const key = `list:${shape.sees}:${shape.sortBy}:${shape.descending}:${shape.owned}:${shape.private}:${shape.archived}:${shape.since}:${shape.below}:${shape.cursor}:${shape.search}`
  const values = {
    ...viewerValues(viewer),
    seqFrom: query.seqFrom,
    seqTo: query.seqTo,
    afterCreatedAt: query.after?.createdAt,
    afterId: query.after?.id,
    limit: query.limit,
  }
  if (search === undefined) return prepared(db, key, () => listQuery(db, shape).prepare('list')).execute(values)
  // Private threads are listed to their owner only: such a search is scoped to the owner's documents.
  const ownOnly = viewer.sees === 'own' || query.owned === true || query.private === true
  const scope = { organizationId: viewer.organizationId, ownerId: ownOnly ? viewer.userId : undefined }
  if (shape.search === 'probes') {
    // From the last update committed (a write committed since is newer than this search).
    const hi = Math.min(query.seqTo ?? head, head)
    const probes = probeSchedule(search.indexed, scope, query.seqFrom, hi, query.descending)
    return prepared(db, key, () => probesQuery(db, shape).prepare('search_probes')).execute({
      ...values,
      queries: probes.map((probe) => probe.query),
      lows: probes.map((probe) => probe.from),
      highs: probes.map((probe) => probe.to),
      groups: search.groups,
    })
  }
  // `created_at` is planned for its words. A statement the driver has prepared gets a generic plan after five runs,
  // and a generic plan cannot tell a word in every thread from a word in a few: it read every matching document of
  // the organization for common words (53 ms p50 at 10,000 threads, against 5 ms planned for the words, which walk
  // the threads in order and stop at a page). The setting ends with the transaction.
  const scan = { ...values, indexed: scopeQuery(search.indexed, scope), groups: search.groups }
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local plan_cache_mode = force_custom_plan`)
    return listQuery(tx, shape).prepare('search').execute(scan)
  })
}

/**
 * Inserts a message at the end of its thread, or at `placedAt` (a summary takes the place of the messages it
 * replaces), with its files queued for search, in the caller's transaction, and returns its ID. At the end means at
 * `now`, or just after the thread's newest message if the clock has stepped back, so that messages list in the order
 * they were written. Exported for the answer store (generation), handed to it by the store's composition: it writes
 * its messages in its own unit.
 */
export async function insertMessageRow(tx: Tx, input: NewMessageRow, now: number): Promise<string> {
  let createdAt = input.placedAt
  if (createdAt === undefined) {
    const [newest] = await inTransaction(tx, 'messages:newest', (on) =>
      on
        .select({ createdAt: max(messages.createdAt) })
        .from(messages)
        .where(eq(messages.threadId, sql.placeholder('threadId')))
        .prepare('newest_message'),
    ).execute({ threadId: input.threadId })
    const last = newest?.createdAt
    createdAt = last == null || now >= last ? now : last + 1
  }
  const id = newId()
  await inTransaction(tx, 'messages:insert', (on) =>
    on.insert(messages).values(messagePlaceholders).prepare('insert_message'),
  ).execute(
    messageValues(id, input, input.parentId !== undefined ? input.parentId : await parentOf(tx, input), createdAt),
  )
  const files = pendingFileTexts(input.contents)
  if (files.length > 0) await tx.insert(attachmentTexts).values(files).onConflictDoNothing()
  return id
}

/** A new message's parent when the caller names none (see NewMessageRow). */
async function parentOf(tx: Tx, input: NewMessageRow): Promise<string | null> {
  if (input.role === 'assistant') return input.replyTo ?? null
  if (input.role === 'summary') return null
  const [last] = await inTransaction(tx, 'messages:last-active', (on) =>
    on
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.threadId, sql.placeholder('threadId')), eq(messages.active, true)))
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(1)
      .prepare('last_active_message'),
  ).execute({ threadId: input.threadId })
  return last?.id ?? null
}

/**
 * Inserts a user message at the end of its thread (or at `placedAt`: a new thread's first, with nothing to read) and
 * queues its answer, in the caller's transaction.
 */
async function appendUserMessage(
  tx: Tx,
  threadId: string,
  contents: ContentBlock[],
  now: number,
  placedAt?: number,
): Promise<string> {
  const id = await insertMessageRow(tx, { threadId, role: 'user', contents, placedAt }, now)
  await inTransaction(tx, 'generations:queue', (on) =>
    on
      .insert(generations)
      .values({
        messageId: sql.placeholder('messageId'),
        threadId: sql.placeholder('threadId'),
        status: 'queued',
        createdAt: sql.placeholder('now'),
      })
      .prepare('queue_answer'),
  ).execute({ messageId: id, threadId, now })
  return id
}

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
  await tx.insert(threadTombstones).values(tombstoneRow(thread, kind, clock?.seq ?? 0, now))
}

const subjectColumns = tombstoneColumns(tables)
const treeRow = treeColumns(tables)

/** The message with its tree columns, read on the caller's transaction. */
async function nodeOf(tx: Tx, threadId: string, messageId: string) {
  const [row] = await tx
    .select(treeRow)
    .from(messages)
    .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId)))
  return row
}

/**
 * Moves an idle thread (`ready` or `error`) to `waiting`, first in the caller's transaction: the tree writes' lock, as
 * sendUserMessage's claim is sending's (racing writes wait on the row, then find it busy). Leaves `updated_at` to the
 * unit's last statement, which takes the update clock. Throws TreeRefused('busy') otherwise.
 */
async function claimIdle(tx: Tx, threadId: string): Promise<void> {
  const [moved] = await tx
    .update(threads)
    .set({ state: 'waiting' })
    .where(and(eq(threads.id, threadId), inArray(threads.state, [...idleStates])))
    .returning({ id: threads.id })
  if (!moved) throw new TreeRefused('busy')
}

/** Takes every active message listed after `from` (or from it on) off the thread's path. */
async function deactivateAfter(
  tx: Tx,
  threadId: string,
  from: { createdAt: number; id: string },
  inclusive: boolean,
): Promise<void> {
  await tx
    .update(messages)
    .set({ active: false })
    .where(and(eq(messages.threadId, threadId), eq(messages.active, true), listedAfter(tables, from, inclusive)))
}

/** searchSources' statement for the page's messages on PostgreSQL (see newestMessages below). */
export function newestMessagesQuery(threadIds: string[]) {
  const { messages: count, messageChars, threadChars } = searchSourceBounds
  const newestFirst = sql`${messages.createdAt} desc, ${messages.id} desc`
  return sql`
    select ${threads.id} as thread_id, ${threads.name} as name, m.id as message_id,
      substr(m.text, 1, greatest(0, least(${messageChars}, ${threadChars} - m.before))::integer) as text, m.has_files
    from ${threads} left join lateral (
      select id, text, has_files, rank, before from (
        select id, text, has_files, row_number() over newest as rank,
          coalesce(sum(least(length(text), ${messageChars})) over (newest rows between unbounded preceding and 1 preceding), 0)
            as before
        from (
          select ${messages.id} as id, ${messages.text} as text, ${messages.createdAt} as created_at,
            ${messages.contents} like ${fileBlockPattern} as has_files
          from ${messages} where ${messages.threadId} = ${threads.id} and ${messages.active}
          order by ${newestFirst} limit ${count}
        ) last
        window newest as (order by created_at desc, id desc)
      ) ranked where before < ${threadChars} or has_files
    ) m on true
    where ${inArray(threads.id, threadIds)}
    order by ${threads.id}, m.rank`
}

async function newestMessages(db: PgDb, threadIds: string[]): Promise<NewestMessages> {
  const rows = await db.execute<{
    thread_id: string
    name: string | null
    message_id: string | null
    text: string | null
    has_files: boolean | null
  }>(newestMessagesQuery(threadIds))
  const found: NewestMessages = { names: new Map(), messages: new Map() }
  for (const row of rows) {
    found.names.set(row.thread_id, row.name)
    const newest = found.messages.get(row.thread_id) ?? []
    found.messages.set(row.thread_id, newest)
    if (row.message_id !== null) {
      newest.push({ id: row.message_id, text: row.text ?? '', hasFiles: row.has_files === true })
    }
  }
  return found
}

export function pgThreadRepository(db: PgDb, append: PgAppend): ThreadRepository {
  return {
    ...commonThreadRepository(anyDb(db), tables),
    searchSources: searchSourcesReader(anyDb(db), tables, contentBlocks, (threadIds) => newestMessages(db, threadIds)),

    // Prepared on the pool: building the query cost more than running it, on nearly every request.
    async findVisible(viewer, threadId) {
      const [row] = await prepared(db, `thread:visible:${viewer.sees}`, () =>
        db
          .select(threadColumns)
          .from(threads)
          .innerJoin(users, eq(users.id, threads.ownerId))
          .where(and(eq(threads.id, sql.placeholder('threadId')), visibleTo(viewer.sees, viewerPlaceholders, threads)))
          .prepare('thread_visible'),
      ).execute({ ...viewerValues(viewer), threadId })
      return row
    },

    // A unit of work on `tx`: the thread's insert takes the update clock's turn.
    async createThread(thread) {
      // The thread must exist before its message (a foreign key), so here the clock's turn starts with the insert.
      return db.transaction(async (tx) => {
        const threadId = newId()
        await tx.insert(threads).values(newThreadRow(threadId, thread))
        const first = thread.first
        if (!first) return { threadId, messageId: null }
        if (first.role === 'user') {
          return { threadId, messageId: await appendUserMessage(tx, threadId, first.contents, thread.now, thread.now) }
        }
        // A new thread has no messages to come after: its first is placed at creation, with no read.
        const messageId = await insertMessageRow(tx, { threadId, ...first, placedAt: thread.now }, thread.now)
        return { threadId, messageId }
      })
    },

    // A unit of work under the thread's row lock.
    deleteThread(threadId, now, audit, idleBefore) {
      return db.transaction(async (tx) => {
        // Deleting locks the thread's row first, as every other unit takes it, then cascades to the rest. Uploads
        // to a thread check it under the same lock, so none slips in between the read and the delete; a message
        // sent meanwhile has moved the thread out of `idleSince` by the time the lock is ours (retention).
        const still = idleBefore === undefined ? undefined : idleSince(tables, idleBefore)
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
        await append(tx, audit)
        return files
      })
    },

    // Making a thread private locks its row and takes the clock for the tombstone, in one unit.
    async updateThread(threadId, changes, now) {
      const update = (on: PgDb | Tx) =>
        on.update(threads).set(threadUpdate(changes, now)).where(eq(threads.id, threadId))
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

    // Each side stops after a page in its index's order, which SQLite's compounds do not allow.
    async changes(query) {
      const { current, tombstones } = changeSides(anyDb(db), tables, query)
      // Left to sort the whole union, a feed resuming from far back read everything after its place for every page
      // (20 ms a page at 10,000 threads, against 1 ms). One statement, one snapshot: a write committing between two
      // reads could otherwise fall between them unseen.
      const rows = (await current
        .orderBy(threads.updateSeq)
        .limit(query.limit)
        .unionAll(tombstones.orderBy(threadTombstones.updateSeq).limit(query.limit))
        .orderBy(sql`1`)
        .limit(query.limit)) as ChangeRow[]
      return rows.map(changeOf)
    },

    // The head is the update clock's (SQLite has none).
    async feedBounds() {
      const [clock] = await db.select({ seq: threadUpdateClock.updateSeq }).from(threadUpdateClock)
      const [horizon] = await db.select({ seq: threadFeedHorizon.updateSeq }).from(threadFeedHorizon)
      return { head: clock?.seq ?? 0, horizon: horizon?.seq ?? 0 }
    },

    // A unit of work; PostgreSQL's greatest().
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

    // The list plans PostgreSQL must be told (see listThreads).
    listThreads(query) {
      return listThreads(db, query)
    },

    // Units of work: the thread's row first (the claim), the generation's after it, the update clock last, as the
    // generation repository takes them; a refusal throws to roll back (refusedWrite).
    regenerate(threadId, messageId, model, now) {
      return refusedWrite(() =>
        db.transaction(async (tx) => {
          await claimIdle(tx, threadId)
          const node = await nodeOf(tx, threadId, messageId)
          requireActiveUser(node)
          await deactivateAfter(tx, threadId, node as NonNullable<typeof node>, false)
          await tx.update(messages).set({ replyTo: null }).where(eq(messages.replyTo, messageId))
          // No lease: the answer is claimed afresh, by whichever instance runs it.
          const queued = { ...requeuedGeneration(model, now), leaseId: null, leasedBy: null, leaseExpiresAt: null }
          await tx
            .insert(generations)
            .values({ messageId, threadId, ...queued })
            .onConflictDoUpdate({ target: generations.messageId, set: queued })
          await tx.update(threads).set({ updatedAt: now }).where(eq(threads.id, threadId))
          return true as const
        }),
      )
    },

    edit(threadId, messageId, contents, now) {
      return refusedWrite(() =>
        db.transaction(async (tx) => {
          await claimIdle(tx, threadId)
          const node = await nodeOf(tx, threadId, messageId)
          requireActiveUser(node)
          const edited = node as NonNullable<typeof node>
          await deactivateAfter(tx, threadId, edited, true)
          const id = await insertMessageRow(tx, { threadId, role: 'user', contents, parentId: edited.parentId }, now)
          await tx.insert(generations).values({ messageId: id, threadId, status: 'queued', createdAt: now })
          await tx.update(threads).set({ updatedAt: now }).where(eq(threads.id, threadId))
          return id
        }),
      )
    },

    activate(threadId, messageId, now) {
      return refusedWrite(() =>
        db.transaction(async (tx) => {
          // The thread's row, held to commit: a send, claim or other tree write waits for this unit, then re-reads.
          const [thread] = await tx
            .select({ state: threads.state })
            .from(threads)
            .where(eq(threads.id, threadId))
            .for('no key update')
          if (!thread || !(idleStates as readonly string[]).includes(thread.state)) throw new TreeRefused('busy')
          const node = await nodeOf(tx, threadId, messageId)
          if (!node) throw new TreeRefused('missing')
          if (node.role === 'summary') throw new TreeRefused('role')
          const [shown] = await tx
            .select({ id: messages.id, createdAt: messages.createdAt })
            .from(messages)
            .where(
              and(
                eq(messages.threadId, threadId),
                eq(messages.role, node.role),
                childrenOf(tables, node.parentId),
                eq(messages.active, true),
              ),
            )
            .limit(1)
          if (shown?.id === node.id) return true as const
          // No version shown (its last run stored nothing, or was stopped first): the message's parent must be on
          // the path, and the message takes the place after it.
          const parent = shown
            ? undefined
            : node.parentId === null
              ? undefined
              : await nodeOf(tx, threadId, node.parentId)
          if (!shown && !parent?.active) throw new TreeRefused('inactive')
          const [summary] = await tx
            .select({ id: messages.id })
            .from(messages)
            .where(
              and(
                eq(messages.threadId, threadId),
                eq(messages.role, 'summary'),
                eq(messages.active, true),
                gte(messages.createdAt, node.createdAt),
              ),
            )
            .limit(1)
          if (summary) throw new TreeRefused('summarized')
          if (shown) await deactivateAfter(tx, threadId, shown, true)
          else await deactivateAfter(tx, threadId, parent as NonNullable<typeof parent>, false)
          let current: { id: string; role: string; parentId: string | null; createdAt: number } = node
          for (;;) {
            await tx.update(messages).set({ active: true }).where(eq(messages.id, current.id))
            if (current.role === 'assistant' && current.parentId !== null) {
              await tx.update(messages).set({ replyTo: null }).where(eq(messages.replyTo, current.parentId))
              await tx.update(messages).set({ replyTo: current.parentId }).where(eq(messages.id, current.id))
            }
            const [child] = await tx
              .select({
                id: messages.id,
                role: messages.role,
                parentId: messages.parentId,
                createdAt: messages.createdAt,
              })
              .from(messages)
              .where(
                and(eq(messages.threadId, threadId), eq(messages.parentId, current.id), ne(messages.role, 'summary')),
              )
              .orderBy(desc(messages.createdAt), desc(messages.id))
              .limit(1)
            if (!child) break
            current = child
          }
          const asker = current.role === 'user' ? current.id : current.parentId
          const [run] = asker
            ? await tx
                .select({ status: generations.status, createdAt: generations.createdAt })
                .from(generations)
                .where(eq(generations.messageId, asker))
            : []
          const state = stateAfterActivate(current as { role: 'user' | 'assistant'; createdAt: number }, run)
          // An answer from before its question's latest run is that question's answer again: the poll and the
          // stream report it complete, not how the later run ended (one run's outcome is kept per question).
          if (asker && run && current.role === 'assistant' && current.createdAt < run.createdAt) {
            await tx
              .update(generations)
              .set({ status: 'complete', error: null })
              .where(and(eq(generations.messageId, asker), inArray(generations.status, ['error', 'interrupted'])))
          }
          await tx.update(threads).set({ state, updatedAt: now }).where(eq(threads.id, threadId))
          return true as const
        }),
      )
    },

    // A unit of work: the conditional update is the claim.
    async sendUserMessage(threadId, contents, now) {
      return db.transaction(async (tx) => {
        // The conditional update is the lock: of any number of concurrent sends, one moves the thread and holds its
        // row to commit; the others wait for it, then find the thread no longer ready and write nothing. It leaves
        // updated_at alone, so the clock is taken only by the last statement.
        const [claimed] = await inTransaction(tx, 'threads:claim-ready', (on) =>
          on
            .update(threads)
            .set({ state: 'waiting' })
            .where(and(eq(threads.id, sql.placeholder('threadId')), eq(threads.state, 'ready')))
            .returning({ id: threads.id })
            .prepare('claim_ready'),
        ).execute({ threadId })
        if (!claimed) return null
        const messageId = await appendUserMessage(tx, threadId, contents, now)
        await inTransaction(tx, 'threads:touch', (on) =>
          on
            .update(threads)
            .set({ updatedAt: sql`${sql.placeholder('now')}` })
            .where(eq(threads.id, sql.placeholder('threadId')))
            .prepare('touch_thread'),
        ).execute({ threadId, now })
        return messageId
      })
    },
  }
}
