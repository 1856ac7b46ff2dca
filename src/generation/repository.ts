// The storage contract of the generation engine: the durable queue of answers (one `generations` row per user
// message that asked for one) and the thread states its moves imply. Every state move is one method, atomic on
// its own, and conditional on the state it leaves, so that an implementation on a pooled database can make it
// one conditional update (and a later one can add lease fencing to the same conditions).
import type { ThreadsModel } from '../threads/model'
import type { HistoryMessage } from './types'

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

/** How an answer ended, with what it produced (blocks may be empty: then no assistant message is stored). */
export interface EndedAnswer extends PendingAnswer {
  outcome: 'complete' | 'error' | 'interrupted'
  /** Null when complete. */
  error: string | null
  contents: ThreadsModel.contentBlock[]
  compaction?: Compaction
}

/** What recovery at start-up has to say, and to do next. */
export interface Recovered {
  /** Answers queued again, oldest first: the caller runs them. */
  requeued: PendingAnswer[]
  /** Answers given up on, as their attempts ran out. */
  failed: number
  /** Answers whose thread was being stopped: they end `interrupted`. */
  stopped: number
}

export interface GenerationRepository {
  /** The answer to a user message, or null when the message asked for none (or does not exist). */
  find(messageId: string): Promise<GenerationRecord | null>

  /** Which of these user messages had their answer stopped part way (`interrupted`); looked up by key. */
  interrupted(messageIds: string[]): Promise<Set<string>>

  /**
   * What the generator is given for the answer to `messageId`: the thread's active messages up to and including
   * it, in list order (created_at, id), each with the files behind its attachment blocks. Empty when the message
   * is gone.
   */
  history(threadId: string, messageId: string): Promise<HistoryMessage[]>

  /**
   * Claims a queued answer: `queued` → `running` with one more attempt, and the thread `active`, in one unit.
   * Exactly one caller wins; false (and nothing written) when the answer is not `queued` any more.
   */
  claim(answer: PendingAnswer, now: number): Promise<boolean>

  /**
   * Stores how an answer ended, in one unit: the summary of a compaction (kept whatever the outcome: it is
   * valid on its own), the assistant message with `contents` when there are any, the generation's outcome and
   * error, and the thread `ready` (`error` when the answer failed; an interrupted answer leaves it ready at
   * once). Only an answer still `queued` or `running` is ended: otherwise nothing is written, so an answer is
   * stored at most once whoever else ends it. Throws when the database refuses the write; nothing is stored then.
   *
   * A summary is placed, in the list order, just before the first active message it does not replace: one
   * millisecond before its created_at (or `now` when it replaces them all), and the replaced ones stop being active.
   */
  finish(answer: EndedAnswer, now: number): Promise<void>

  /**
   * Marks the thread as being stopped (`interrupted`) while its answer's generator lets go. Only a thread still
   * busy with an answer (`waiting` or `active`) moves, so a stop that crosses the answer's end never leaves a
   * finished thread `interrupted`.
   */
  markStopping(threadId: string, now: number): Promise<void>

  /**
   * Gives back the claims of answers a shutdown leaves unfinished: each one still `running` is `queued` again
   * with the attempt its claim counted returned (never below zero), so that restarts are not counted as crashes.
   */
  release(messageIds: string[]): Promise<void>

  /**
   * At start-up, before serving, by the only process on the database: ends what a previous process left behind,
   * in one unit. Answers whose thread was being stopped end `interrupted` (with `stoppedError`); other unfinished
   * answers are `queued` again, unless they were already claimed `maxAttempts` times (likely what brought the
   * process down): those end in `error` (with `failedError`) and so do their threads. Threads `active` go back to
   * `waiting`, threads `interrupted` to `ready`. Every thread moved has its updated_at set to `now`.
   */
  recover(policy: { maxAttempts: number; stoppedError: string; failedError: string }, now: number): Promise<Recovered>
}
