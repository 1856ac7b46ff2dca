// The threads repository on SQLite (see repository.ts): what differs from PostgreSQL, over the dialect-neutral
// methods of repository.common.ts. A transaction cannot await on bun:sqlite, so each unit of work does all its work
// synchronously inside one. The statements of the hot paths (a thread by ID, list pages, message sends) are prepared
// once per database (src/db/prepared.ts), with their thread rows read from `.values()`, and list pages take the
// query plans SQLite must be told. Search statements take their FTS5 pieces from search.fts5.ts.
import { and, between, type Column, desc, eq, gte, inArray, lt, max, ne, sql } from 'drizzle-orm'
import { attachments, attachmentTexts } from '../attachments/attachments.table'
import { users } from '../auth/auth.table'
import type { Db } from '../db/client'
import { anyDb, asTables, type SqliteAppend } from '../db/dialect'
import { prepared } from '../db/prepared'
import { generations } from '../generation/generations.table'
import { newId } from '../shared/ids'
import type { NewMessageRow, ThreadListQuery, ThreadRepository, ThreadRow, TreeMessageRow } from './repository'
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
  type NewestMessage,
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
  viewerPlaceholders,
  viewerValues,
  visibleTo,
} from './repository.common'
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
  termsQuery,
} from './search.fts5'
import { searchSourceBounds } from './search-text'
import * as threadTables from './threads.table'
import { messages, threadFeedHorizon, threads, threadTombstones } from './threads.table'

const tables = asTables<ThreadTables>({ ...threadTables, users, attachments, attachmentTexts, generations })

/** A message's content blocks as rows (searchSources): SQLite's json_each, whose `key` is the block's place. */
const contentBlocks = {
  rows: (contents: Column) => sql`json_each(${contents}) as j`,
  attachmentId: sql`json_extract(j.value, '$.attachment_id')`,
}
const threadColumns = threadColumnsOf({ threads, users })
/** Each column's place in a `.values()` row of `threadColumns`, by its name. */
const at = Object.fromEntries(Object.keys(threadColumns).map((name, place) => [name, place])) as Record<
  keyof ThreadRow,
  number
>

/**
 * A row of `threadColumns` from Drizzle's positional `.values()`, each field read at its column's place (the flags
 * arrive as 0 or 1). The by-id lookup runs on nearly every API request, and Drizzle's generic row mapping cost it
 * about a quarter of its time; a list page maps up to 201 rows.
 */
function threadRowOf(values: unknown[]): ThreadRow {
  return {
    id: values[at.id] as string,
    name: values[at.name] as string | null,
    state: values[at.state] as ThreadRow['state'],
    isPrivate: values[at.isPrivate] === 1,
    archived: values[at.archived] === 1,
    ownerId: values[at.ownerId] as number,
    ownerSub: values[at.ownerSub] as string,
    ownerName: values[at.ownerName] as string | null,
    createdAt: values[at.createdAt] as number,
    updatedAt: values[at.updatedAt] as number,
  }
}

/** Which statement a list request needs; every value that varies within a shape is a placeholder. */
interface ListShape extends ListFilters {
  sortBy: 'created_at' | 'updated_at'
  descending: boolean
  /** `created_at` only: `updated_at` bounds the update sequence instead. */
  since: boolean
  /** `index`: the search index in update order; the plans serve `created_at` (see search.fts5.ts). */
  search: 'index' | SearchPlan | undefined
  /** `created_at` only: `updated_at` cursors are bounds on the update sequence. */
  cursor: boolean
}

function prepareList(db: Db, shape: ListShape) {
  // With few search matches, SQLite must start from them, not from the organization's or owner's index.
  const conditions = listConditions(tables, shape, shape.search === 'matches')
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
    if (shape.cursor)
      conditions.push(afterKey(tables, shape.descending, sql.placeholder('cursorKey'), sql.placeholder('cursorId')))
  }
  return db
    .select(threadColumns)
    .from(threads)
    .innerJoin(users, eq(users.id, threads.ownerId))
    .where(and(...conditions))
    .orderBy(...listOrder(tables, shape.sortBy, shape.descending))
    .limit(sql.placeholder('limit'))
    .prepare()
}

function listThreads(db: Db, query: ThreadListQuery): ThreadRow[] {
  const { viewer, sortBy } = query
  let fts: string | undefined
  let search: ListShape['search']
  if (query.search !== undefined) {
    // Writes leave documents pending (see search.fts5.ts): a search first brings the index (and the vocabulary its
    // long prefixes are read from) up to date.
    flushSearchIndex(db)
    // Only the owner's token narrows the index; the other filters are checks on the rows it yields.
    const ownOnly = viewer.sees === 'own' || query.owned === true || query.private === true
    const terms = termsQuery(db.$client, query.search)
    fts = ownOnly ? ownedBy(terms, viewer.userId) : terms
    search = sortBy === 'updated_at' ? 'index' : searchPlan(db, fts, viewer.organizationId)
  }
  const shape: ListShape = {
    ...listFiltersOf(query),
    sortBy,
    descending: query.descending,
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
 * replaces), with its files queued for search, and returns its ID. Exported for other features' SQLite units of
 * work that write a message among their own rows (an answer, a compaction): inside their transaction, pass the same
 * `db` (see src/db/prepared.ts).
 */
export function insertMessageRow(db: Db, input: NewMessageRow, now: number): string {
  const id = newId()
  prepared(db, 'message:insert', () => db.insert(messages).values(messagePlaceholders).prepare()).run(
    messageValues(
      id,
      input,
      input.parentId !== undefined ? input.parentId : parentOf(db, input),
      input.placedAt ?? appendedAt(db, input.threadId, now),
    ),
  )
  const files = pendingFileTexts(input.contents)
  if (files.length > 0) db.insert(attachmentTexts).values(files).onConflictDoNothing().run()
  return id
}

/** A new message's parent when the caller names none (see NewMessageRow). */
function parentOf(db: Db, input: NewMessageRow): string | null {
  if (input.role === 'assistant') return input.replyTo ?? null
  if (input.role === 'summary') return null
  const last = prepared(db, 'message:last-active', () =>
    db
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.threadId, sql.placeholder('threadId')), eq(messages.active, true)))
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(1)
      .prepare(),
  ).get({ threadId: input.threadId })
  return last?.id ?? null
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

/** Writes a tombstone at the next place in the update order; inside the caller's transaction. */
function writeTombstone(db: Db, thread: TombstoneOf, kind: 'deleted' | 'hidden', now: number): void {
  db.insert(threadTombstones)
    .values(tombstoneRow(thread, kind, lastSeq(db) + 1, now))
    .run()
}

function tombstoneSubject(db: Db, threadId: string): TombstoneOf | undefined {
  return db.select(tombstoneColumns({ threads })).from(threads).where(eq(threads.id, threadId)).get()
}

/** The message with its tree columns, read inside the caller's transaction (SQLite's columns, the common names). */
function nodeOf(db: Db, threadId: string, messageId: string): TreeMessageRow | undefined {
  const { id, threadId: thread, role, contents, createdAt, parentId, model, active } = messages
  const row = db
    .select({ id, threadId: thread, role, contents, createdAt, parentId, model, active })
    .from(messages)
    .where(and(eq(messages.id, messageId), eq(messages.threadId, threadId)))
    .get()
  return row && ({ ...row, active: Boolean(row.active) } as TreeMessageRow)
}

/**
 * Moves an idle thread (`ready` or `error`) to `waiting` with its `updated_at`, inside the caller's transaction:
 * the tree writes' lock, as sendUserMessage's claim is sending's. Throws TreeRefused('busy') otherwise.
 */
function claimIdle(db: Db, threadId: string, now: number): void {
  const moved = db
    .update(threads)
    .set({ state: 'waiting', updatedAt: now })
    .where(and(eq(threads.id, threadId), inArray(threads.state, [...idleStates])))
    .returning({ id: threads.id })
    .get()
  if (!moved) throw new TreeRefused('busy')
}

/** Takes every active message listed after `from` (or from it on) off the thread's path. */
function deactivateAfter(db: Db, threadId: string, from: { createdAt: number; id: string }, inclusive: boolean): void {
  db.update(messages)
    .set({ active: false })
    .where(and(eq(messages.threadId, threadId), eq(messages.active, true), listedAfter(tables, from, inclusive)))
    .run()
}

/**
 * searchSources' statement on SQLite (see newestMessages): each thread's name and its active messages from the
 * creation time of its 50th newest on (an index range per thread, however long the thread), each message's first
 * `messageChars` characters. The threads' subquery has a limit (one its rows never pass) so that SQLite computes
 * each thread's start once rather than per message; rows come unordered (a sort of their texts cost more than the rest), newest first
 * is put back per thread as they are read. Whether a message may name a file is asked only in threads with files:
 * contents repeat the text, and reading them doubled the statement's cost.
 */
export const newestMessagesSql = `select p.id, p.name, m.id, m.created_at, substr(m.text, 1, ${searchSourceBounds.messageChars}),
    case when p.files then m.contents like ?2 else 0 end
  from (select t.id, t.name, exists (select 1 from attachments a where a.thread_id = t.id) as files,
      coalesce((select created_at from messages where thread_id = t.id and active = 1
        order by created_at desc, id desc limit 1 offset ${searchSourceBounds.messages - 1}), 0) as since
    from threads t where t.id in (select value from json_each(?1)) limit json_array_length(?1)) p
  left join messages m on m.thread_id = p.id and m.active = 1 and m.created_at >= p.since`

type NewestRow = [
  threadId: string,
  name: string | null,
  id: string | null,
  createdAt: number,
  text: string,
  files: number,
]

/**
 * searchSources' messages on SQLite: one statement for the page, prepared once (the threads' IDs go in as one JSON
 * array), and the bounds applied here (ties at the 50th newest may add a row or two). Window functions, which would
 * apply them in the statement, cost more than the statement itself (their sorts), and one statement per thread cost
 * about 8 µs each: a page's snippets must stay close to the plain search's cost.
 */
async function newestMessages(db: Db, threadIds: string[]): Promise<NewestMessages> {
  const { messages: count, threadChars } = searchSourceBounds
  const statement = prepared(db, 'threads:search-sources', () =>
    db.$client.query<NewestRow, [string, string]>(newestMessagesSql),
  )
  const rows = new Map<string, NewestRow[]>()
  const found: NewestMessages = { names: new Map(), messages: new Map() }
  for (const row of statement.values(JSON.stringify(threadIds), fileBlockPattern) as NewestRow[]) {
    const [threadId, name, messageId] = row
    found.names.set(threadId, name)
    const thread = rows.get(threadId) ?? []
    rows.set(threadId, thread)
    if (messageId !== null) thread.push(row)
  }
  for (const [threadId, thread] of rows) {
    thread.sort(([, , a, at], [, , b, bt]) => bt - at || ((b as string) < (a as string) ? -1 : 1))
    let left = threadChars
    const newest: NewestMessage[] = []
    for (const [, , messageId, , text, files] of thread.slice(0, count)) {
      if (left <= 0 && !files) break
      newest.push({ id: messageId as string, text: left > 0 ? text.slice(0, left) : '', hasFiles: files === 1 })
      left -= text.length
    }
    found.messages.set(threadId, newest)
  }
  return found
}

export function sqliteThreadRepository(db: Db, append: SqliteAppend): ThreadRepository {
  return {
    ...commonThreadRepository(anyDb(db), tables),
    searchSources: searchSourcesReader(anyDb(db), tables, contentBlocks, (threadIds) => newestMessages(db, threadIds)),

    // Prepared, with its rows read from `.values()` (threadRowOf): the by-id lookup runs on nearly every request.
    async findVisible(viewer, threadId) {
      const statement = prepared(db, `thread:${viewer.sees}`, () =>
        db
          .select(threadColumns)
          .from(threads)
          .innerJoin(users, eq(users.id, threads.ownerId))
          .where(and(eq(threads.id, sql.placeholder('threadId')), visibleTo(viewer.sees, viewerPlaceholders, threads)))
          .prepare(),
      )
      const values = statement.values({ threadId, ...viewerValues(viewer) })[0]
      return values && threadRowOf(values)
    },

    // A unit of work: synchronous inside the transaction, with the message's prepared statements.
    async createThread(thread) {
      // The insert marks the thread's search document pending; it is written later from the committed rows.
      return db.transaction(() => {
        const threadId = newId()
        db.insert(threads).values(newThreadRow(threadId, thread)).run()
        if (!thread.first) return { threadId, messageId: null }
        const messageId = insertMessageRow(db, { threadId, ...thread.first }, thread.now)
        if (thread.first.role === 'user') queueAnswer(db, messageId, threadId, thread.now)
        return { threadId, messageId }
      })
    },

    // A unit of work; SQLite's one writer stands for PostgreSQL's row lock.
    async deleteThread(threadId, now, audit, idleBefore) {
      return db.transaction((tx) => {
        // Retention's delete: only a thread still idle and old, judged in this unit (a message sent since keeps it).
        if (idleBefore !== undefined) {
          const idle = tx
            .select({ id: threads.id })
            .from(threads)
            .where(and(eq(threads.id, threadId), idleSince(tables, idleBefore)))
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
        append(tx as unknown as Db, audit)
        return files
      })
    },

    // Making a thread private writes its tombstone in the same unit, synchronously.
    async updateThread(threadId, changes, now) {
      const update = () => db.update(threads).set(threadUpdate(changes, now)).where(eq(threads.id, threadId)).run()
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

    // SQLite allows no ORDER BY or LIMIT on a compound's sides (PostgreSQL limits each).
    async changes(query) {
      const { current, tombstones } = changeSides(anyDb(db), tables, query)
      // One compound statement: a write between two reads could otherwise fall between their positions unseen.
      const rows = (await current.unionAll(tombstones).orderBy(sql`1`).limit(query.limit)) as ChangeRow[]
      return rows.map(changeOf)
    },

    // The head is the greater of the threads' and tombstones' places (no update clock on SQLite).
    async feedBounds() {
      const horizon = db.select({ seq: threadFeedHorizon.updateSeq }).from(threadFeedHorizon).get()?.seq ?? 0
      return { head: lastSeq(db), horizon }
    },

    // A unit of work, synchronous; SQLite's two-argument max().
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

    // The list plans SQLite must be told (see listThreads).
    async listThreads(query) {
      return listThreads(db, query)
    },

    // Units of work, synchronous inside the transaction; a refusal throws to roll back (refusedWrite).
    regenerate(threadId, messageId, model, now) {
      return refusedWrite(() =>
        db.transaction(() => {
          claimIdle(db, threadId, now)
          const node = nodeOf(db, threadId, messageId)
          requireActiveUser(node)
          deactivateAfter(db, threadId, node as NonNullable<typeof node>, false)
          db.update(messages).set({ replyTo: null }).where(eq(messages.replyTo, messageId)).run()
          const queued = requeuedGeneration(model, now)
          db.insert(generations)
            .values({ messageId, threadId, ...queued })
            .onConflictDoUpdate({ target: generations.messageId, set: queued })
            .run()
          return true as const
        }),
      )
    },

    edit(threadId, messageId, contents, now) {
      return refusedWrite(() =>
        db.transaction(() => {
          claimIdle(db, threadId, now)
          const node = nodeOf(db, threadId, messageId)
          requireActiveUser(node)
          const edited = node as NonNullable<typeof node>
          deactivateAfter(db, threadId, edited, true)
          const id = insertMessageRow(db, { threadId, role: 'user', contents, parentId: edited.parentId }, now)
          queueAnswer(db, id, threadId, now)
          return id
        }),
      )
    },

    activate(threadId, messageId, now) {
      return refusedWrite(() =>
        db.transaction(() => {
          const thread = db.select({ state: threads.state }).from(threads).where(eq(threads.id, threadId)).get()
          if (!thread || !(idleStates as readonly string[]).includes(thread.state)) throw new TreeRefused('busy')
          const node = nodeOf(db, threadId, messageId)
          if (!node) throw new TreeRefused('missing')
          if (node.role === 'summary') throw new TreeRefused('role')
          const shown = db
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
            .get()
          if (shown?.id === node.id) return true as const
          // No version shown (its last run stored nothing, or was stopped first): the message's parent must be on
          // the path, and the message takes the place after it.
          const parent = shown || node.parentId === null ? undefined : nodeOf(db, threadId, node.parentId)
          if (!shown && !parent?.active) throw new TreeRefused('inactive')
          const summary = db
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
            .get()
          if (summary) throw new TreeRefused('summarized')
          if (shown) deactivateAfter(db, threadId, shown, true)
          else deactivateAfter(db, threadId, parent as NonNullable<typeof parent>, false)
          let current: { id: string; role: string; parentId: string | null; createdAt: number } = node
          for (;;) {
            db.update(messages).set({ active: true }).where(eq(messages.id, current.id)).run()
            if (current.role === 'assistant' && current.parentId !== null) {
              db.update(messages).set({ replyTo: null }).where(eq(messages.replyTo, current.parentId)).run()
              db.update(messages).set({ replyTo: current.parentId }).where(eq(messages.id, current.id)).run()
            }
            const child = db
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
              .get()
            if (!child) break
            current = child
          }
          const asker = current.role === 'user' ? current.id : current.parentId
          const run = asker
            ? db
                .select({ status: generations.status, createdAt: generations.createdAt })
                .from(generations)
                .where(eq(generations.messageId, asker))
                .get()
            : undefined
          const state = stateAfterActivate(current as { role: 'user' | 'assistant'; createdAt: number }, run)
          // An answer from before its question's latest run is that question's answer again: the poll and the
          // stream report it complete, not how the later run ended (one run's outcome is kept per question).
          if (asker && run && current.role === 'assistant' && current.createdAt < run.createdAt) {
            db.update(generations)
              .set({ status: 'complete', error: null })
              .where(and(eq(generations.messageId, asker), inArray(generations.status, ['error', 'interrupted'])))
              .run()
          }
          db.update(threads).set({ state, updatedAt: now }).where(eq(threads.id, threadId)).run()
          return true as const
        }),
      )
    },

    // A unit of work with prepared statements: the conditional state update is the claim.
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
  }
}
