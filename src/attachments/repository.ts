// What the attachment services ask of the database: the rows that say which stored files belong to which thread.
// Plain data in and out, so that every database Threadhouse runs on can keep the same contract; the bytes
// themselves are the blob store's (src/storage/blobs.ts).

export const attachmentKinds = ['image', 'pdf', 'text'] as const
export type AttachmentKind = (typeof attachmentKinds)[number]

/** A file of a thread whose bytes are in the blob store under its ID (see keys.ts). */
export interface Attachment {
  id: string
  threadId: string
  kind: AttachmentKind
  /** Decided from the bytes, never from what the client declared. */
  mediaType: string
  /** The sanitised display name; never used to name anything in the store. */
  filename: string
  sizeBytes: number
  /** True when a model-ready copy, scaled down, is stored beside the original. */
  resized: boolean
  createdAt: number
}

/** A file about to be stored in a thread (the thread is named once, beside the files). */
export type NewAttachment = Omit<Attachment, 'threadId'>

/**
 * What a file holds for search (the `attachment_texts` row's outcome): its text and distinct search tokens, or
 * nothing to search (an image, a file without words), or nothing that could be read (a damaged PDF).
 */
export type FileText =
  | { state: 'indexed'; text: string; words: string; truncated: boolean }
  | { state: 'empty' }
  | { state: 'unreadable' }

/** A file an indexer has taken to read for search, and how many times it has been taken, this time included. */
export interface ClaimedFile {
  attachment: Attachment
  attempts: number
}

/** What a counted insert did: stored every file, or none because the thread already held `stored`. */
export type CountedInsert = { inserted: true } | { inserted: false; stored: number }

export interface AttachmentRepository {
  /** How many files the thread holds. */
  countInThread(threadId: string): Promise<number>

  /**
   * Inserts the files into their thread, all or none, when the thread then holds at most `limit` files; otherwise
   * inserts nothing and says how many it holds. The count and the insert are one unit: however many calls for one
   * thread run at once, together they never take it past `limit` (an implementation serialises inserts per thread,
   * for instance by locking the thread's row before counting).
   */
  insertWithinQuota(threadId: string, files: NewAttachment[], limit: number): Promise<CountedInsert>

  /** The file `attachmentId` of this thread, or null when there is none (whichever thread the ID belongs to). */
  findInThread(threadId: string, attachmentId: string): Promise<Attachment | null>

  /** The files with these IDs, in no particular order; IDs without a row are left out. Any number of IDs. */
  listByIds(ids: string[]): Promise<Attachment[]>

  /** Removes these files of the thread; IDs of other threads' files, or of none, are left alone. */
  deleteFromThread(threadId: string, ids: string[]): Promise<void>

  /**
   * Takes up to `limit` files whose text search is waiting for, oldest first: those still `pending`, not taken by
   * a claim that lasts beyond `now`, in threads with no answer waiting or running (reading a file never competes
   * with its own answer). Each is the caller's until `now + leaseMs`, its attempts counted. However many callers
   * claim at once, on however many instances, no file is taken twice while a claim on it lasts.
   */
  claimTexts(limit: number, now: number, leaseMs: number): Promise<ClaimedFile[]>

  /**
   * Records what the file holds for search, if it is still `pending` (answers whether it was), at `now`. A file
   * with text queues its thread's search document to be written again, in the same unit: a crash loses neither.
   */
  recordText(attachmentId: string, text: FileText, now: number): Promise<boolean>

  /** Gives a claim back as if never taken (attempt uncounted): for a reading stopped by a shutdown. */
  releaseText(attachmentId: string): Promise<void>
}
