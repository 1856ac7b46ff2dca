// Backups an operator can read, and the restore that brings one back on a stopped server. A backup is a folder
// rather than an archive: Bun writes no tar, and a folder can be listed, checked and shipped elsewhere (rsync,
// restic, a volume snapshot) with ordinary tools, and restored from without unpacking a copy first.
//
//   DIR/backup.json          what the backup holds: format, version, when it was made, row counts, files
//   DIR/threadhouse.sqlite   the database as one self-contained file (VACUUM INTO: no -wal, no -shm)
//   DIR/uploads/             the files of every attachment in that database: `<id>`, `<id>.resized`, `<id>.txt`
//
// The database is copied first, from one snapshot while the server keeps writing, and then exactly the files
// that snapshot names, from whichever blob store keeps them (the uploads folder or a bucket): files uploaded later
// belong to rows the copy does not have, and a stored file is never changed (every store writes a key whole, and
// attachments are never rewritten), so every copy is whole. A backup's files are the same on both stores, so a
// backup made from one restores into the other.
import { Database } from 'bun:sqlite'
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { rm, stat } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { count, inArray } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { attachments } from '../attachments/attachments.table'
import { attachmentIdOf, extractedTextKey, originalKey, resizedKey } from '../attachments/keys'
import { organizations, users } from '../auth/auth.table'
import type { Db } from '../db/client'
import { type BlobStore, LocalBlobStore } from '../storage/blobs'
import { messages, threads } from '../threads/threads.table'
import { claimDatabase } from './claim'
import { OperationError } from './errors'
import { requireKnownSchema } from './migrations'
import { eachInTurn, fromStore } from './store-files'

export const backupFormat = 'threadhouse-backup'
const backupVersion = 1
const manifestFile = 'backup.json'
const databaseFile = 'threadhouse.sqlite'
const uploadsFolder = 'uploads'
// Copy-on-write clones where the file system has them (btrfs, XFS, APFS), a plain copy elsewhere.
const clone = constants.COPYFILE_FICLONE

/** Where an installation keeps its files: the blob store, and the local folder that stages uploads (UPLOADS_DIR). */
export interface Uploads {
  blobs: BlobStore
  uploadsDir: string
}

export interface Counts {
  organizations: number
  users: number
  threads: number
  messages: number
  attachments: number
}

interface Manifest {
  format: typeof backupFormat
  version: number
  createdAt: string
  counts: Counts
  files: number
  bytes: number
}

export interface BackupResult {
  counts: Counts
  files: number
  bytes: number
  /** Attachments the snapshot had but whose files were gone by the time they were copied; left out of the copy. */
  leftOut: string[]
}

export interface RestoreResult {
  /** When the backup was made. */
  createdAt: string
  counts: Counts
  files: number
}

/** A database file outside openDatabase's PRAGMAs (no WAL: a backup stays one file), through Drizzle all the same. */
function openFile(path: string, mode: 'readonly' | 'readwrite'): Db {
  const sqlite = new Database(path, mode === 'readonly' ? { readonly: true } : { readwrite: true, create: false })
  return drizzle({ client: sqlite, casing: 'snake_case' }) as Db
}

function countsOf(db: Db): Counts {
  const rows = (table: SQLiteTable) => db.select({ n: count() }).from(table).get()?.n ?? 0
  return {
    organizations: rows(organizations),
    users: rows(users),
    threads: rows(threads),
    messages: rows(messages),
    attachments: rows(attachments),
  }
}

interface StoredAttachment {
  id: string
  resized: boolean
  sizeBytes: number
}

function storedAttachments(db: Db): StoredAttachment[] {
  return db
    .select({ id: attachments.id, resized: attachments.resized, sizeBytes: attachments.sizeBytes })
    .from(attachments)
    .all()
}

/** The files an attachment must have (the original, and its scaled copy if it has one) before the optional ones. */
function filesOf(attachment: StoredAttachment): { required: string[]; optional: string[] } {
  const { id, resized } = attachment
  const original = originalKey(id)
  return {
    required: resized ? [original, resizedKey(id)] : [original],
    // Text extracted from a PDF, cached beside it: worth keeping, but made again when missing.
    optional: [extractedTextKey(original)],
  }
}

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'ENOENT'
}

/** Copies one attachment's files; returns their bytes, or null (copying nothing) when a required one is gone. */
async function copyAttachment(
  attachment: StoredAttachment,
  from: BlobStore,
  to: string,
): Promise<{ files: number; bytes: number } | null> {
  const { required, optional } = filesOf(attachment)
  const copied: string[] = []
  const copy = async (key: string): Promise<boolean> => {
    if (!(await fromStore(from, `copy ${key}`, () => from.getFile(key, join(to, key))))) return false
    copied.push(key)
    return true
  }
  for (const key of required) {
    if (!(await copy(key))) {
      await Promise.all(copied.map((done) => rm(join(to, done), { force: true })))
      return null
    }
  }
  for (const key of optional) await copy(key)
  const sizes = await Promise.all(copied.map(async (key) => (await stat(join(to, key))).size))
  return { files: copied.length, bytes: sizes.reduce((sum, size) => sum + size, 0) }
}

function isInside(path: string, folder: string): boolean {
  const below = relative(resolve(folder), resolve(path))
  return below === '' || (!below.startsWith('..') && !below.startsWith('/'))
}

/**
 * Writes a new backup folder `target` from the open database `db` and its files, while the server keeps running.
 * Everything is written into a sibling folder first and renamed into place at the end, so a folder named `target`
 * is always a complete backup.
 */
export async function backup(
  db: Db,
  { blobs, uploadsDir }: Uploads,
  target: string,
  now: number,
): Promise<BackupResult> {
  if (existsSync(target)) throw new OperationError(`${target} already exists; choose a new folder`)
  if (isInside(target, uploadsDir)) {
    // The start-up sweep removes whatever in UPLOADS_DIR no attachment names.
    throw new OperationError(`${target} is inside UPLOADS_DIR (${uploadsDir}); choose a folder outside it`)
  }
  mkdirSync(dirname(resolve(target)), { recursive: true })
  const staging = `${resolve(target)}.partial-${crypto.randomUUID().slice(0, 8)}`
  mkdirSync(staging)
  try {
    // VACUUM INTO reads one consistent snapshot while the server keeps writing (WAL).
    db.$client.run('VACUUM INTO ?', [join(staging, databaseFile)])
    const copy = openFile(join(staging, databaseFile), 'readwrite')
    let result: BackupResult
    try {
      mkdirSync(join(staging, uploadsFolder))
      let files = 0
      let bytes = 0
      const leftOut: string[] = []
      await eachInTurn(storedAttachments(copy), async (attachment) => {
        const copied = await copyAttachment(attachment, blobs, join(staging, uploadsFolder))
        if (!copied) {
          leftOut.push(attachment.id)
          return
        }
        files += copied.files
        bytes += copied.bytes
      })
      leftOut.sort()
      // Only files of attachments that were never sent are removed while the server runs: the rows went first,
      // after the snapshot, so the backup leaves them out too rather than restore rows without files.
      if (leftOut.length > 0) copy.delete(attachments).where(inArray(attachments.id, leftOut)).run()
      result = { counts: countsOf(copy), files, bytes, leftOut }
    } finally {
      copy.$client.close()
    }
    const manifest: Manifest = {
      format: backupFormat,
      version: backupVersion,
      createdAt: new Date(now).toISOString(),
      counts: result.counts,
      files: result.files,
      bytes: result.bytes,
    }
    writeFileSync(join(staging, manifestFile), `${JSON.stringify(manifest, null, 2)}\n`)
    if (existsSync(target)) throw new OperationError(`${target} already exists; choose a new folder`)
    renameSync(staging, target)
    return result
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    throw error
  }
}

function readManifest(source: string): Manifest {
  let manifest: Partial<Manifest>
  try {
    manifest = JSON.parse(readFileSync(join(source, manifestFile), 'utf8'))
  } catch (error) {
    const why = isMissing(error) ? 'has no backup.json' : 'has an unreadable backup.json'
    throw new OperationError(`${source} is not a Threadhouse backup: it ${why}`)
  }
  if (manifest.format !== backupFormat || typeof manifest.counts !== 'object' || !manifest.createdAt) {
    throw new OperationError(`${source} is not a Threadhouse backup: its backup.json is not one`)
  }
  if (manifest.version !== backupVersion) {
    throw new OperationError(`${source} is a version ${manifest.version} backup; this Threadhouse reads version 1`)
  }
  return manifest as Manifest
}

/**
 * Checks a database and its files against a backup's manifest: SQLite's integrity check, a schema this version
 * knows, the manifest's row counts, and every attachment's required files at their recorded size.
 */
async function verify(databasePath: string, blobs: BlobStore, manifest: Manifest, what: string): Promise<Counts> {
  let db: Db
  try {
    db = openFile(databasePath, 'readonly')
  } catch (error) {
    throw new OperationError(`${what}: cannot open ${databasePath} (${(error as Error).message})`)
  }
  try {
    const problems = db.$client.query('PRAGMA integrity_check').values()
    if (problems[0]?.[0] !== 'ok') {
      throw new OperationError(`${what} fails SQLite's integrity check: ${problems[0]?.[0] ?? 'no answer'}`)
    }
    requireKnownSchema(db.$client, what)
    const counts = countsOf(db)
    const names = Object.keys(counts) as (keyof Counts)[]
    if (names.some((name) => counts[name] !== manifest.counts[name])) {
      throw new OperationError(
        `${what} does not hold what backup.json lists: ${JSON.stringify(counts)} against ${JSON.stringify(manifest.counts)}`,
      )
    }
    const required = storedAttachments(db).flatMap((attachment) =>
      filesOf(attachment).required.map((key) => ({ key, attachment })),
    )
    await eachInTurn(required, async ({ key, attachment }) => {
      const size = (await fromStore(blobs, `read ${key}`, () => blobs.get(key)))?.size ?? null
      if (size === null) throw new OperationError(`${what} lacks the file ${key} of attachment ${attachment.id}`)
      if (key === originalKey(attachment.id) && size !== attachment.sizeBytes) {
        throw new OperationError(`${what}: ${key} has ${size} bytes instead of ${attachment.sizeBytes}`)
      }
    })
    return counts
  } finally {
    db.$client.close()
  }
}

function syncToDisk(path: string): void {
  const fd = openSync(path, 'r+')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Replaces the database and the stored files with the backup in `source`, refusing while anything else has the
 * database open. The backup is checked before anything is touched. Its files are put in the store first, beside
 * the current ones (a key both have holds the same bytes: attachments never change), so that once the old data
 * starts to go only a rename and removals remain. In the uploads folder, dot-named entries (.gitkeep and the
 * like) are the operator's and stay; in a bucket, which may hold more than Threadhouse's files, only keys an
 * attachment would have are removed.
 */
export async function restore(
  source: string,
  target: { databasePath: string; blobs: BlobStore },
): Promise<RestoreResult> {
  const { databasePath, blobs } = target
  const manifest = readManifest(source)
  const backupDatabase = join(source, databaseFile)
  const backupUploads = join(source, uploadsFolder)
  for (const part of [backupDatabase, backupUploads]) {
    if (!existsSync(part))
      throw new OperationError(`${source} is not a whole backup: it has no ${relative(source, part)}`)
  }
  const backupFiles = new LocalBlobStore(backupUploads)
  await verify(backupDatabase, backupFiles, manifest, `The backup ${source}`)

  mkdirSync(dirname(resolve(databasePath)), { recursive: true })
  const release = claimDatabase(databasePath)
  try {
    const files = await replace(backupDatabase, backupUploads, target)
    const counts = await verify(databasePath, blobs, manifest, 'The restored database')
    return { createdAt: manifest.createdAt, counts, files }
  } finally {
    release()
  }
}

/** Swaps the backup's database and files in for the current ones; returns how many files it put in place. */
async function replace(
  backupDatabase: string,
  backupUploads: string,
  { databasePath, blobs }: { databasePath: string; blobs: BlobStore },
): Promise<number> {
  // A fixed name, so that a restore run again after an interruption replaces what the first one staged.
  const stagedDatabase = `${databasePath}.restoring`
  const restored = new Set<string>()
  try {
    copyFileSync(backupDatabase, stagedDatabase, clone)
    syncToDisk(stagedDatabase)
    for await (const key of new LocalBlobStore(backupUploads).keys()) restored.add(key)
    await eachInTurn([...restored], (key) =>
      fromStore(blobs, `put ${key}`, () => blobs.put(key, Bun.file(join(backupUploads, key)))),
    )
  } catch (error) {
    rmSync(stagedDatabase, { force: true })
    throw error
  }

  try {
    // A -wal (or a hot -journal) left beside the old database would be replayed into the new one.
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${databasePath}${suffix}`, { force: true })
    renameSync(stagedDatabase, databasePath)
    const local = blobs.description.kind === 'local'
    const stale: string[] = []
    for await (const key of blobs.keys()) {
      if (!restored.has(key) && (local || attachmentIdOf(key) !== null)) stale.push(key)
    }
    await eachInTurn(stale, (key) => blobs.delete(key))
  } catch (error) {
    throw new OperationError(
      `restore stopped half-way (${(error as Error).message}); fix the cause and run it again before starting the server`,
    )
  }
  return restored.size
}
