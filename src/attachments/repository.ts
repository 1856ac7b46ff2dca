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
}
