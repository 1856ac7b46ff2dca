// The storage contract of the generation engine: the durable queue of answers (one `generations` row per user
// message that asked for one) and the thread states its moves imply. Every state move is one method, atomic on
// its own, and conditional on the state it leaves, so that an implementation on a pooled database can make it
// one conditional update.
//
// Where several instances share the database (PostgreSQL), a claimed answer carries a lease: the claim's ID and an
// expiry that its instance renews. Only the lease holder may store the answer (fencing), and an answer whose lease
// expired (its instance died) is taken over by `recover` on another. On SQLite one process holds the database: the
// lease is not stored, never expires, and `recover` runs once, at start-up.
import type { ThreadsModel } from '../threads/model'
import type { AnswerUsage, UsageRow } from '../usage/repository'
import type { AttachmentFile, HistoryMessage } from './types'

export type GenerationStatus = 'queued' | 'running' | 'complete' | 'error' | 'interrupted'

/** Where an answer stands, as the poll and the stream read it. */
export interface GenerationRecord {
  status: GenerationStatus
  /** The message shown to clients when status is `error` or `interrupted`. */
  error: string | null
}

/** The answer to a user message, to run. */
export interface PendingAnswer {
  messageId: string
  threadId: string
}

/** The generator compacted the history: its summary stands in for the oldest active messages of the thread. */
export interface Compaction {
  text: string
  /** IDs of the oldest active messages of the thread, which the summary stands in for. */
  replaces: string[]
}

/**
 * How an answer ended, with what it produced (blocks may be empty: then no assistant message is stored, unless its run
 * called tools).
 */
export interface EndedAnswer extends PendingAnswer {
  outcome: 'complete' | 'error' | 'interrupted'
  /** Null when complete. */
  error: string | null
  contents: ThreadsModel.contentBlock[]
  compaction?: Compaction
  /** The configured model that wrote it (null when none was resolved: an answer stopped before it was prepared). */
  model?: string | null
  /** What it used, when it ran (generation/usage.ts); absent for one that ended before the generator had it. */
  usage?: AnswerUsage
}

/** A claim's lease: its ID (the fencing token), who holds it, and until when unless renewed. */
export interface Lease {
  id: string
  holder: string
  expiresAt: number
}

/** A running answer's lease, as a shutdown gives it back. */
export interface HeldAnswer {
  messageId: string
  /** The lease ID. */
  lease: string
}

/** What recovery has to say, and to do next. */
export interface Recovered {
  /** Answers queued again, oldest first: the caller runs them. */
  requeued: PendingAnswer[]
  /** Answers given up on, as their attempts ran out. */
  failed: number
  /** Answers whose thread was being stopped: they end `interrupted`. */
  stopped: number
  /** Answers taken back from instances whose leases expired (always 0 on SQLite). */
  abandoned: number
}

/** How recovery treats what it finds. */
export interface RecoveryPolicy {
  maxAttempts: number
  stoppedError: string
  failedError: string
  /** Queued answers returned at most (the caller's free places). */
  limit: number
  /** Queued answers younger than this are left to the instance that queued them (PostgreSQL). */
  graceMs: number
}

/** What renewing this instance's leases found. */
export interface Renewal {
  /** Leases that are no longer this instance's: taken over, or the answer ended elsewhere. */
  lost: string[]
  /** Leases kept whose thread is being stopped: a stop another instance received, in case its notice was lost. */
  stopping: string[]
}

/** A message an answer's unit of work writes into its thread: the answer itself, or a compaction's summary. */
export interface AnswerMessage {
  threadId: string
  role: 'assistant' | 'summary'
  contents: ThreadsModel.contentBlock[]
  replyTo?: string
  /** For an answer: the configured model that wrote it. */
  model?: string | null
  /** Where it lists (a summary takes the place of what it replaces); at the thread's end when omitted. */
  placedAt?: number
}

/**
 * What the answer store needs from the features whose rows sit beside its own, handed to each implementation by the
 * store's composition (src/store/) so that generation reaches into neither threads' storage nor attachments':
 * threads' own message insert (its place in the thread's order, its searchable text), run on `Unit`, the dialect's
 * handle of the answer's transaction; and the files generators read behind attachment IDs.
 */
export interface AnswerStoreParts<Unit, Inserted, Done> {
  insertMessage(unit: Unit, message: AnswerMessage, now: number): Inserted
  filesForModel(ids: string[]): Promise<Map<string, AttachmentFile>>
  /** Usage's own writes (its row and the month's totals), in the same unit: see usage/repository.common.ts. */
  recordUsage(unit: Unit, row: UsageRow): Done
}

export interface GenerationRepository {
  /** The answer to a user message, or null when the message asked for none (or does not exist). */
  find(messageId: string): Promise<GenerationRecord | null>

  /** The answer a thread is waiting for or producing (at most one is), with its status; null when none. */
  pending(threadId: string): Promise<(PendingAnswer & { status: 'queued' | 'running' }) | null>

  /** Which of these user messages had their answer stopped part way (`interrupted`); looked up by key. */
  interrupted(messageIds: string[]): Promise<Set<string>>

  /**
   * What the generator is given for the answer to `messageId`: the thread's active messages up to and including
   * it, in list order (created_at, id), each with the files behind its attachment blocks; an earlier answer that
   * called tools with its calls and its rounds' texts, and a user message that decided an approval with exactly
   * "Allow" or "Deny" marked `decision` (history.ts withToolCalls). Empty when the message is gone.
   */
  history(threadId: string, messageId: string): Promise<HistoryMessage[]>

  /**
   * Claims a queued answer: `queued` → `running` with one more attempt under `lease`, and the thread `active`, in
   * one unit. Exactly one caller wins; false (and nothing written) when the answer is not `queued` any more. The
   * answer's run (generations.run_id, under which its tool calls are recorded) becomes the lease's ID unless it has
   * one: an answer released or taken over goes on with its run.
   */
  claim(answer: PendingAnswer, now: number, lease: Lease): Promise<boolean>

  /**
   * Stores how an answer ended, in one unit: the summary of a compaction (kept whatever the outcome: it is
   * valid on its own), the assistant message with `contents` when there are any, the generation's outcome and
   * error, and the thread `ready` (`error` when the answer failed; an interrupted answer leaves it ready at
   * once). Only an answer still `queued`, or `running` under `lease`, is ended: otherwise nothing is written, so an
   * answer is stored at most once whoever else ends it, and never by an instance that lost its lease. True when it
   * was stored. Throws when the database refuses the write; nothing is stored then.
   *
   * With `usage`, the answer's usage row and the month's totals of its thread's owner and organization are written in
   * the same unit (never when nothing is stored), so an answer's usage is recorded exactly once, with its end.
   *
   * The run's tool calls are attached to the assistant message in the same unit, and the run ends (a regenerate starts
   * a new one). A run that called tools stores its message even with no `contents`: what was done always has a
   * message to sit under.
   *
   * A summary is placed, in the list order, just before the first active message it does not replace: one
   * millisecond before its created_at (or `now` when it replaces them all), and the replaced ones stop being active.
   */
  finish(answer: EndedAnswer & { lease: string | null }, now: number): Promise<boolean>

  /**
   * Marks the thread as being stopped (`interrupted`) while its answer's generator lets go. Only a thread still
   * busy with an answer (`waiting` or `active`) moves, so a stop that crosses the answer's end never leaves a
   * finished thread `interrupted`.
   */
  markStopping(threadId: string, now: number): Promise<void>

  /**
   * Gives back the claims of answers a shutdown leaves unfinished: each one still `running` under its lease is
   * `queued` again with the attempt its claim counted returned (never below zero), so that restarts are not counted
   * as crashes; other instances are told there is work.
   */
  release(answers: HeldAnswer[]): Promise<void>

  /** Extends this instance's leases to `expiresAt` (see Renewal). Nothing to do on SQLite. */
  renew(leases: string[], expiresAt: number): Promise<Renewal>

  /**
   * Takes back what an instance left behind, in one unit: on SQLite at start-up, before serving, every unfinished
   * answer (the previous process is gone); on PostgreSQL, at start-up and periodically, the answers `running` under
   * a lease that expired. Of those, answers whose thread was being stopped end `interrupted` (with `stoppedError`);
   * the others are `queued` again, unless they were already claimed `maxAttempts` times (likely what brought the
   * process down): those end in `error` (with `failedError`) and so do their threads. The answers it ends end their
   * runs; those queued again keep theirs. Their threads `active` go back
   * to `waiting`, `interrupted` to `ready`, with updated_at set to `now`. Returns the queued answers to run, oldest
   * first: on PostgreSQL at most `limit` of those older than `graceMs`; on SQLite all of them, as nothing else will.
   */
  recover(policy: RecoveryPolicy, now: number): Promise<Recovered>
}
