// Threads, their messages and per-user feedback. Each table has an explicit integer rowid (`seq`) that
// VACUUM never renumbers; the search index (raw SQL in the migrations, see search.fts5.ts) follows `update_seq`.
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { organizations, users } from '../auth/auth.table'

export const threadStates = ['ready', 'waiting', 'active', 'error', 'interrupted'] as const
export const messageRoles = ['user', 'assistant', 'summary'] as const

export const threads = sqliteTable(
  'threads',
  {
    seq: integer().primaryKey({ autoIncrement: true }),
    id: text().notNull().unique(),
    organizationId: integer()
      .notNull()
      .references(() => organizations.id),
    ownerId: integer()
      .notNull()
      .references(() => users.id),
    name: text(),
    state: text({ enum: threadStates }).notNull().default('ready'),
    isPrivate: integer({ mode: 'boolean' }).notNull().default(false),
    archived: integer({ mode: 'boolean' }).notNull().default(false),
    createdAt: integer().notNull(),
    /** Never earlier than any update before it: the triggers in db/migrations/0006_deferred_search.sql hold it back. */
    updatedAt: integer().notNull(),
    /**
     * The order of updates, written by the triggers on every write of `updated_at`: the `updated_at`
     * sort, its cursors and the search index all follow it, so ties and clock steps never reorder a list.
     */
    updateSeq: integer().notNull().default(0),
    /**
     * The thread's first place in the update order, written by the same trigger statement as its insert (no write
     * of its own): the change feed calls a thread created when this is past the reader's position. 0 for threads
     * older than the feed.
     */
    createdSeq: integer().notNull().default(0),
  },
  // Keyset pagination walks (organization or owner, sort key); created_at needs the id to be unique.
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
 * Threads whose search document is behind: the triggers add a thread here on every write of `updated_at`,
 * and src/threads/search.fts5.ts rewrites its document later, in batches, and before any search reads the index.
 * `indexedKey` is the key of the document the index still holds for it (none for a new thread).
 */
export const searchPending = sqliteTable('search_pending', {
  threadSeq: integer().primaryKey(),
  indexedKey: integer(),
})

/**
 * Threads whose search document a migration left to rebuild, when what a document holds changed (0020: the tokens
 * of search-text.ts and files): the background indexer rewrites them after the writes, most recent thread first,
 * and searches do not wait for them (search.fts5.ts). A thread rewritten for a write leaves it too.
 */
export const searchRebuild = sqliteTable('search_rebuild', {
  threadSeq: integer()
    .primaryKey()
    .references(() => threads.seq, { onDelete: 'cascade' }),
})

/**
 * Every search token of 5+ characters a document has held (search-text.ts, `vocabularyWords`): a query's long prefix
 * is expanded to the terms in its range here, which both indexes then look up exactly. Only grows: a stale term
 * expands to nothing (WITHOUT ROWID in the migration: the key is the row).
 */
export const searchTerms = sqliteTable('search_terms', {
  term: text().primaryKey(),
})

export const messages = sqliteTable(
  'messages',
  {
    seq: integer().primaryKey({ autoIncrement: true }),
    id: text().notNull().unique(),
    threadId: text()
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    role: text({ enum: messageRoles }).notNull(),
    /** The content blocks as JSON, exactly as the API returns them. */
    contents: text({ mode: 'json' }).notNull(),
    /** The text of the blocks, for full-text search. */
    text: text().notNull(),
    /** Only active messages are listed; compaction deactivates the turns a summary replaces. */
    active: integer({ mode: 'boolean' }).notNull().default(true),
    /**
     * For the assistant message that is the current answer to a user message: that message. Earlier answers (the
     * versions a regenerate left) keep only `parentId`, so a poll and a replay follow the current one.
     */
    replyTo: text(),
    /**
     * The message this one follows in the thread's tree: a user message's is the message before it when it was sent
     * (null for a thread's first), an answer's the user message it answers, a summary's null. Messages with the same
     * parent and role are versions of each other (an edit, a regenerate); `active` marks the path the thread lists.
     */
    parentId: text(),
    /** For assistant messages: the ID of the configured model that wrote it (src/models/); null before models. */
    model: text(),
    createdAt: integer().notNull(),
  },
  (t) => [
    index('messages_thread_idx').on(t.threadId, t.createdAt, t.id),
    index('messages_reply_to_idx').on(t.replyTo).where(sql`${t.replyTo} is not null`),
    index('messages_parent_idx').on(t.threadId, t.parentId),
  ],
)

/** A thread's own settings, when it has any: its model, instructions and tools (GET/PATCH /threads/{id}/settings). */
export const threadSettings = sqliteTable('thread_settings', {
  threadId: text()
    .primaryKey()
    .references(() => threads.id, { onDelete: 'cascade' }),
  /** A configured model's ID; null: the organization's default. */
  model: text(),
  /** Added to the system prompt for this thread's answers. */
  instructions: text(),
  /** The tools its answers are offered, a JSON list of `server/tool`; null: every tool the organization has on. */
  tools: text(),
})

export const feedback = sqliteTable(
  'feedback',
  {
    messageId: text()
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    userId: integer()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    positive: integer({ mode: 'boolean' }).notNull(),
    feedbackText: text(),
    createdAt: integer().notNull(),
    updatedAt: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.userId] })],
)

export const tombstoneKinds = ['deleted', 'hidden'] as const

/**
 * What the change feed (src/threads/feed.ts) tells about threads that no longer show in a list: a thread deleted,
 * or one made private (hidden from everyone but its owner). Each takes its own place in the update order, after
 * every thread write before it, and keeps the thread's organization, owner and privacy so the feed shows it to
 * exactly those who could see the thread. Swept after a week by the upkeep, always but the newest: the update
 * order continues from the greater of the threads' and these (the triggers in 0011_thread_feed.sql).
 */
export const threadTombstones = sqliteTable(
  'thread_tombstones',
  {
    updateSeq: integer().primaryKey(),
    threadId: text().notNull(),
    kind: text({ enum: tombstoneKinds }).notNull(),
    organizationId: integer().notNull(),
    ownerId: integer().notNull(),
    isPrivate: integer({ mode: 'boolean' }).notNull(),
    /** When it was written (milliseconds since the epoch): the sweep's measure. */
    at: integer().notNull(),
  },
  (t) => [
    index('thread_tombstones_org_idx').on(t.organizationId, t.updateSeq),
    index('thread_tombstones_owner_idx').on(t.ownerId, t.updateSeq),
    index('thread_tombstones_at_idx').on(t.at),
  ],
)

/**
 * One row: the newest place in the update order whose tombstone was swept. A feed resuming from before it may have
 * missed a deletion, so it is told to reload instead.
 */
export const threadFeedHorizon = sqliteTable('thread_feed_horizon', {
  id: integer().primaryKey(),
  updateSeq: integer().notNull(),
})
