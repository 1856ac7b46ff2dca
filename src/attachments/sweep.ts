// The sweeps that remove what a crash leaves behind: request bodies and checked files in the staging folder, and
// stored files whose rows were never committed (an upload puts its files, then inserts their rows).
import { readdir, rm } from 'node:fs/promises'
import { resolve } from 'node:path'
import { idTime } from '../shared/ids'
import { type BlobStore, isValidKey } from '../storage/blobs'
import { attachmentIdOf } from './keys'
import type { AttachmentRepository } from './repository'

/**
 * How long a key without a row is left alone in a bucket: long past any upload still in flight, whose row another
 * server sharing the bucket has not committed yet. A key's age is its UUIDv7's.
 */
export const inFlightMs = 60 * 60 * 1000

/** Removals at a time: a bucket's DELETEs are round trips, and a crash may have left many. */
const removalsAtOnce = 16

async function removeAll(keys: string[], remove: (key: string) => Promise<void>): Promise<void> {
  for (let start = 0; start < keys.length; start += removalsAtOnce) {
    await Promise.all(keys.slice(start, start + removalsAtOnce).map(remove))
  }
}

/**
 * Removes what a crash can leave in the staging folder: request bodies and checked files under temporary names,
 * and anything else that is no key. Dot files are the operator's and stay, and so do keys (in a folder that is
 * also the store, the store's sweep decides about those). Run at start-up, before the server takes uploads.
 */
export async function sweepStaging(uploadsDir: string): Promise<number> {
  const staged = (await readdir(uploadsDir).catch(() => [] as string[])).filter(
    (name) => !name.startsWith('.') && !isValidKey(name),
  )
  await Promise.all(staged.map((name) => rm(resolve(uploadsDir, name), { force: true, recursive: true })))
  return staged.length
}

/**
 * Removes stored files whose rows were never committed. Kept: each attachment's original, its scaled copy and
 * its extracted text. A local store is this server's alone, so at start-up everything else in it goes; run it
 * before the server takes uploads. A bucket may be shared with servers still uploading, and with things that are
 * not Threadhouse's, so there only attachments' keys older than `inFlightMs` go, and it may run beside uploads.
 */
export function sweepStore(attachments: AttachmentRepository, blobs: BlobStore, now = Date.now()): Promise<number> {
  return sweepKeys(attachments, blobs, now, blobs.description.kind === 'local' ? 'everything' : 'past-uploads')
}

/**
 * The hourly sweep, beside uploads on either store: attachments' keys older than `inFlightMs` whose rows were never
 * committed (an upload that failed between its put and its insert, a crash of another server on the bucket). Keys
 * that are not an attachment's stay: at start-up a local store's go, and a bucket's are not Threadhouse's.
 */
export function sweepOrphans(attachments: AttachmentRepository, blobs: BlobStore, now: number): Promise<number> {
  return sweepKeys(attachments, blobs, now, 'past-uploads')
}

/** `everything`: a store no upload is using; `past-uploads`: only keys no upload in flight can still own. */
async function sweepKeys(
  attachments: AttachmentRepository,
  blobs: BlobStore,
  now: number,
  reach: 'everything' | 'past-uploads',
): Promise<number> {
  const everything = reach === 'everything'
  const stray: string[] = []
  /** Keys the sweep may remove unless their attachment has a row: while serving, only those past any upload. */
  const unlessKnown: { key: string; id: string }[] = []
  for await (const key of blobs.keys()) {
    const id = attachmentIdOf(key)
    if (id === null) {
      if (everything) stray.push(key)
      continue
    }
    const made = idTime(id)
    if (everything || made === null || now - made >= inFlightMs) unlessKnown.push({ key, id })
  }
  // Rows are read after the keys are listed, so a row committed during the listing still spares its files.
  const known = new Set(
    (await attachments.listByIds([...new Set(unlessKnown.map(({ id }) => id))])).map((row) => row.id),
  )
  stray.push(...unlessKnown.filter(({ id }) => !known.has(id)).map(({ key }) => key))
  await removeAll(stray, (key) => blobs.delete(key))
  return stray.length
}

/** Both sweeps, one after the other: what a start on a local store does before it takes uploads. */
export async function sweepUploads(
  attachments: AttachmentRepository,
  blobs: BlobStore,
  uploadsDir: string,
  now = Date.now(),
): Promise<number> {
  return (await sweepStaging(uploadsDir)) + (await sweepStore(attachments, blobs, now))
}
