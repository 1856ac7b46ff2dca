// PostgreSQL twin of threads.table.ts: threads, their messages, feedback, and the search documents. The update
// order and the search queue are kept by triggers in db/migrations/postgres (see the custom migration there).
// Keep the columns in step with the SQLite tables.
import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core'
import { organizations, users } from '../auth/auth.table.pg'
import { messageRoles, threadStates, tombstoneKinds } from './threads.table'

const epochMs = () => bigint({ mode: 'number' })

/**
 * JSON kept as text, byte for byte as written: `jsonb` would reorder keys, and the Bun.SQL adapter sends a `json`
 * parameter as a JSON string. Read and written as the value, as SQLite's `text({ mode: 'json' })` is.
 */
const jsonText = customType<{ data: unknown; driverData: string }>({
  dataType: () => 'text',
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => JSON.parse(value),
})

/** Text ordered by code point whatever the database's collation: ranges of it are prefixes (search_terms). */
const codePointText = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' })

/** A full-text document; written and queried only by the PostgreSQL thread search. */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

export const threads = pgTable(
  'threads',
  {
    seq: integer().primaryKey().generatedByDefaultAsIdentity(),
    id: text().notNull().unique(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id),
    ownerId: integer()
      .notNull()
      .references(() => users.id),
    name: text(),
    state: text({ enum: threadStates }).notNull().default('ready'),
    isPrivate: boolean().notNull().default(false),
    archived: boolean().notNull().default(false),
    createdAt: epochMs().notNull(),
    updatedAt: epochMs().notNull(),
    updateSeq: bigint({ mode: 'number' }).notNull().default(0),
    createdSeq: bigint({ mode: 'number' }).notNull().default(0),
  },
  (t) => [
    uniqueIndex('threads_update_seq_idx').on(t.updateSeq),
    index('threads_updated_idx').on(t.updatedAt, t.updateSeq),
    index('threads_org_update_seq_idx').on(t.organizationId, t.updateSeq),
    index('threads_org_created_idx').on(t.organizationId, t.createdAt, t.id),
    index('threads_owner_update_seq_idx').on(t.ownerId, t.updateSeq),
    index('threads_owner_created_idx').on(t.ownerId, t.createdAt, t.id),
  ],
)

/**
 * The last update sequence and `updated_at` handed out, in one row. Every write of a thread's `updated_at` takes
 * the next sequence from it with a row lock held to commit, so sequences are committed in order and a reader
 * following `update_seq` never skips a write that commits later.
 */
export const threadUpdateClock = pgTable('thread_update_clock', {
  id: integer().primaryKey(),
  updateSeq: bigint({ mode: 'number' }).notNull(),
  updatedAt: epochMs().notNull(),
})

/** Threads whose search document is behind; the thread search rewrites them in batches and before any search. */
export const searchPending = pgTable('search_pending', {
  threadSeq: integer().primaryKey(),
})

/**
 * Threads whose search document a migration left to rebuild, when what a document holds changed (0015: the tokens
 * of search-text.ts, files, prefixes and recency blocks): the background indexer rewrites them after the queued
 * writes, most recent thread first, and searches do not wait for them (search.pg.ts). A thread rewritten for a
 * write leaves it too.
 */
export const searchRebuild = pgTable('search_rebuild', {
  threadSeq: integer()
    .primaryKey()
    .references(() => threads.seq, { onDelete: 'cascade' }),
})

/** One search document per thread: its name and active messages' text, with what searches filter and sort by. */
export const threadSearch = pgTable(
  'thread_search',
  {
    threadSeq: integer()
      .primaryKey()
      .references(() => threads.seq, { onDelete: 'cascade' }),
    organizationId: integer().notNull(),
    ownerId: integer().notNull(),
    updateSeq: bigint({ mode: 'number' }).notNull(),
    document: tsvector().notNull(),
  },
  (t) => [
    index('thread_search_document_idx').using('gin', t.document),
    index('thread_search_org_idx').on(t.organizationId, t.updateSeq),
    index('thread_search_owner_idx').on(t.ownerId, t.updateSeq),
  ],
)

/**
 * The rest of a document too big for one `tsvector` (1 MiB of distinct words): its parts after the first, which
 * `thread_search` holds with a marker. Rare; written and queried only by the PostgreSQL thread search.
 */
export const threadSearchOverflow = pgTable(
  'thread_search_overflow',
  {
    threadSeq: integer()
      .notNull()
      .references(() => threadSearch.threadSeq, { onDelete: 'cascade' }),
    part: integer().notNull(),
    document: tsvector().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.threadSeq, t.part] }),
    index('thread_search_overflow_document_idx').using('gin', t.document),
  ],
)

/**
 * Long search tokens ever indexed, which long prefixes expand to (see threads.table.ts). Compared by code point
 * ("C"), as SQLite's binary collation compares them, so that a prefix's words are one range of the key.
 */
export const searchTerms = pgTable('search_terms', {
  term: codePointText().primaryKey(),
})

export const messages = pgTable(
  'messages',
  {
    seq: integer().primaryKey().generatedByDefaultAsIdentity(),
    id: text().notNull().unique(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    role: text({ enum: messageRoles }).notNull(),
    contents: jsonText().notNull(),
    text: text().notNull(),
    active: boolean().notNull().default(true),
    replyTo: text(),
    parentId: text(),
    model: text(),
    createdAt: epochMs().notNull(),
  },
  (t) => [
    index('messages_thread_idx').on(t.threadId, t.createdAt, t.id),
    index('messages_reply_to_idx').on(t.replyTo).where(sql`${t.replyTo} is not null`),
    index('messages_parent_idx').on(t.threadId, t.parentId),
  ],
)

export const threadSettings = pgTable('thread_settings', {
  threadId: text()
    .primaryKey()
    .references(() => threads.id, { onDelete: 'cascade' }),
  model: text(),
  instructions: text(),
  tools: text(),
})

export const feedback = pgTable(
  'feedback',
  {
    messageId: text()
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    positive: boolean().notNull(),
    feedbackText: text(),
    createdAt: epochMs().notNull(),
    updatedAt: epochMs().notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.userId] })],
)

/** See threads.table.ts. Each tombstone takes its place from thread_update_clock, as thread writes do. */
export const threadTombstones = pgTable(
  'thread_tombstones',
  {
    updateSeq: bigint({ mode: 'number' }).primaryKey(),
    threadId: text().notNull(),
    kind: text({ enum: tombstoneKinds }).notNull(),
    organizationId: integer().notNull(),
    ownerId: integer().notNull(),
    isPrivate: boolean().notNull(),
    at: epochMs().notNull(),
  },
  (t) => [
    index('thread_tombstones_org_idx').on(t.organizationId, t.updateSeq),
    index('thread_tombstones_owner_idx').on(t.ownerId, t.updateSeq),
    index('thread_tombstones_at_idx').on(t.at),
  ],
)

export const threadFeedHorizon = pgTable('thread_feed_horizon', {
  id: integer().primaryKey(),
  updateSeq: bigint({ mode: 'number' }).notNull(),
})
