// What the commands that move files between an installation and a blob store share (backup and restore, db:copy):
// naming the store for an operator, one line for a store that fails, and a bounded number of files in flight.
import type { BlobDescription, BlobStore } from '../storage/blobs'
import { OperationError } from './errors'

/** Files moved at a time: each is a round trip when the store is a bucket. */
const filesAtOnce = 16

/** The store in words, for an operator: the folder, or the bucket and where it is. */
export function storeName(store: BlobDescription): string {
  return store.kind === 'local' ? store.path : `bucket ${store.bucket}${store.endpoint ? ` at ${store.endpoint}` : ''}`
}

/**
 * Runs a store operation, turning a failure (a bucket that does not answer) into one line naming the store, and
 * `outcome` when the command says what the failure left (db:copy: nothing was copied).
 */
export async function fromStore<T>(blobs: BlobStore, what: string, work: () => Promise<T>, outcome = ''): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof OperationError) throw error
    const code = (error as { code?: unknown }).code
    const reason = `${(error as Error).message ?? error}${typeof code === 'string' ? ` (${code})` : ''}`
    throw new OperationError(`cannot ${what} in ${storeName(blobs.description)}: ${reason}${outcome}`)
  }
}

/** Runs `work` on every item, `filesAtOnce` at a time. */
export async function eachInTurn<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += filesAtOnce) {
    await Promise.all(items.slice(start, start + filesAtOnce).map(work))
  }
}
