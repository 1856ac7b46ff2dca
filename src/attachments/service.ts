// Attachment uploads: read the form, decide each file's type from its bytes, check it against the limits
// (the byte checks in an inspect worker, images with sharp), then store every file and row together, or
// nothing. Nothing here sees an Elysia Context.
import { renameSync } from 'node:fs'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { extname, resolve } from 'node:path'
import { and, count, eq, inArray } from 'drizzle-orm'
import sharp from 'sharp'
import type { AuthDeps } from '../auth'
import type { Caller } from '../auth/model'
import type { Db } from '../db/client'
import type { AttachmentFile } from '../generation/types'
import { AppError, invalidRequest, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { requireOwnedThread, requireVisibleThread } from '../threads/service'
import { type AttachmentKind, attachments } from './attachments.table'
import type { FileInspector } from './inspector'
import { filenameMaxLength, filesPerRequest, filesPerThread, imageLimits, maxRequestBytes } from './limits'
import type { AttachmentsModel } from './model'

export interface UploadDeps extends AuthDeps {
  uploadsDir: string
  inspector: FileInspector
}

/** A file part of the form, in index order. Its name and declared type are claims, checked against the bytes. */
interface Part {
  name: string
  file: File
  filename: string
}

interface Accepted {
  part: Part
  kind: AttachmentKind
  mediaType: string
  bytes: Uint8Array
  /** The model-ready copy of a large image, or null when the original already fits. */
  resized: Uint8Array | null
}

const partName = /^attachments\[(\d)\]$/

function rejected(part: Part, code: AttachmentsModel.rejectionCode, problem: string, limit?: number): AppError {
  const reason: AttachmentsModel.reason = {
    file: part.filename,
    part: part.name,
    code,
    ...(limit !== undefined && { limit }),
  }
  return new AppError(422, 'unprocessable_file', `${part.name} (${part.filename}) ${problem}`, { reason })
}

/** The display name: the last path segment, without control or format characters, at most 255 characters. */
function sanitizeFilename(raw: string): string {
  const base =
    raw
      .normalize('NFC')
      .replace(/[\p{Cc}\p{Cf}]/gu, '')
      .split(/[/\\]/)
      .at(-1)
      ?.trim() ?? ''
  if (base === '' || base === '.' || base === '..') return 'attachment'
  const chars = [...base]
  if (chars.length <= filenameMaxLength) return base
  const extension = [...extname(base)].length <= 16 ? [...extname(base)] : []
  return [...chars.slice(0, filenameMaxLength - extension.length), ...extension].join('')
}

function originalPath(uploadsDir: string, id: string): string {
  return resolve(uploadsDir, id)
}

function resizedPath(uploadsDir: string, id: string): string {
  return resolve(uploadsDir, `${id}.resized`)
}

/** The file a model should read: the scaled copy of a large image, otherwise the original. */
function modelReadyPath(uploadsDir: string, attachment: { id: string; resized: boolean }): string {
  return attachment.resized ? resizedPath(uploadsDir, attachment.id) : originalPath(uploadsDir, attachment.id)
}

/**
 * Removes what a crash can leave in the uploads folder: temporary files, and files whose transaction never
 * committed. Kept: each attachment's original, its scaled copy and its extracted text. Run at start-up.
 */
export async function sweepUploads(db: Db, uploadsDir: string): Promise<number> {
  const names = await readdir(uploadsDir).catch(() => [] as string[])
  const known = new Set(
    db
      .select({ id: attachments.id })
      .from(attachments)
      .all()
      .map((row) => row.id),
  )
  const kept = /^([0-9a-f-]{36})(\.resized)?(\.txt)?$/
  const stray = names.filter((name) => {
    if (name.startsWith('.')) return false // .gitkeep and the like belong to the operator
    const match = kept.exec(name)
    return !match?.[1] || !known.has(match[1])
  })
  await Promise.all(stray.map((name) => rm(resolve(uploadsDir, name), { force: true, recursive: true })))
  return stray.length
}

/** The files behind these attachment IDs, as generators read them, by ID. */
export function filesForModel(db: Db, uploadsDir: string, ids: string[]): Map<string, AttachmentFile> {
  if (ids.length === 0) return new Map()
  const rows = db.select().from(attachments).where(inArray(attachments.id, ids)).all()
  return new Map(
    rows.map((row) => [
      row.id,
      { filename: row.filename, mediaType: row.mediaType, path: modelReadyPath(uploadsDir, row) },
    ]),
  )
}

function storedCount(db: Pick<Db, 'select'>, threadId: string): number {
  return db.select({ n: count() }).from(attachments).where(eq(attachments.threadId, threadId)).get()?.n ?? 0
}

function quotaExceeded(stored: number): AppError {
  const room = Math.max(0, filesPerThread - stored)
  return invalidRequest(`A thread holds at most ${filesPerThread} files; this one has ${stored}, room for ${room} more`)
}

/**
 * The file parts, which must be named attachments[0] to attachments[n-1], each once. A body that declares more
 * bytes than any valid upload needs is refused before a byte of it is read.
 */
async function readParts(request: Request): Promise<Part[]> {
  if (Number(request.headers.get('content-length')) > maxRequestBytes) {
    throw new AppError(413, 'payload_too_large', `An upload body may have at most ${maxRequestBytes} bytes`)
  }
  if (!request.headers.get('content-type')?.toLowerCase().startsWith('multipart/form-data')) {
    throw invalidRequest('Send the files as multipart/form-data')
  }
  const form = await request.formData().catch(() => null)
  if (!form) throw invalidRequest('The multipart body could not be parsed')
  const entries = [...form.entries()]
  if (entries.length === 0) throw invalidRequest('Part attachments[0] is required')
  if (entries.length > filesPerRequest) {
    throw invalidRequest(`At most ${filesPerRequest} files per request; this one has ${entries.length} parts`)
  }
  const parts: Part[] = []
  for (const [name, value] of entries) {
    const index = Number(partName.exec(name)?.[1] ?? Number.NaN)
    if (!(index < entries.length)) {
      const expected = 'attachments[0], attachments[1], … numbered without gaps'
      throw invalidRequest(`Unexpected part ${JSON.stringify(name.slice(0, 100))}: name the file parts ${expected}`)
    }
    if (parts[index]) throw invalidRequest(`Part ${name} appears more than once`)
    if (typeof value === 'string') throw invalidRequest(`Part ${name} must be a file`)
    parts[index] = { name, file: value, filename: sanitizeFilename(value.name) }
  }
  return parts
}

async function inspectImage(part: Part, bytes: Uint8Array, mediaType: string): Promise<Accepted> {
  const open = (limitInputPixels: number | false) => sharp(bytes, { animated: true, limitInputPixels, failOn: 'error' })
  // The header alone gives the size, so a bomb is refused without decoding a pixel of it.
  const header = await open(false)
    .metadata()
    .catch(() => null)
  if (!header) throw rejected(part, 'corrupt', 'is not a readable image')
  // With `animated`, height spans every frame: the pixel count is what decoding would really cost.
  if (header.width * header.height > imageLimits.maxPixels) {
    throw rejected(part, 'too_many_pixels', `has more than ${imageLimits.maxPixels} pixels`, imageLimits.maxPixels)
  }
  const side = imageLimits.modelLongestSide
  const fits = Math.max(header.width, header.pageHeight ?? header.height) <= side
  try {
    // Both paths decode every pixel, which is what finds truncated or corrupt image data.
    const decoder = open(imageLimits.maxPixels)
    const resized = fits
      ? await decoder.stats().then(() => null)
      : await decoder.autoOrient().resize({ width: side, height: side, fit: 'inside' }).toBuffer()
    return { part, kind: 'image', mediaType, bytes, resized }
  } catch {
    throw rejected(part, 'corrupt', 'is a damaged or truncated image')
  }
}

/**
 * Checks one file: its bytes in an inspect worker, then an image's pixels with sharp, which decodes on its own
 * threads. Throws 422 on the first rule the file breaks.
 */
async function inspect(inspector: FileInspector, part: Part): Promise<Accepted> {
  const claim = { filename: part.filename, declaredType: part.file.type }
  const { bytes, verdict } = await inspector.inspect(await part.file.bytes(), claim)
  if (!verdict.accepted) throw rejected(part, verdict.code, verdict.problem, verdict.limit)
  if (verdict.kind === 'image') return inspectImage(part, bytes, verdict.mediaType)
  return { part, kind: verdict.kind, mediaType: verdict.mediaType, bytes, resized: null }
}

/**
 * Writes every file under a temporary name, then inserts the rows and renames the files in one transaction:
 * if anything fails, the transaction rolls back and every file written is removed.
 */
async function store(deps: UploadDeps, threadId: string, accepted: Accepted[]): Promise<AttachmentsModel.attachment[]> {
  const now = deps.clock.now()
  const planned = accepted.map((file) => ({ ...file, id: newId() }))
  const files = planned.flatMap(({ id, bytes, resized }) => [
    { path: originalPath(deps.uploadsDir, id), bytes },
    ...(resized ? [{ path: resizedPath(deps.uploadsDir, id), bytes: resized }] : []),
  ])
  try {
    await mkdir(deps.uploadsDir, { recursive: true })
    await Promise.all(files.map(({ path, bytes }) => Bun.write(`${path}.tmp`, bytes)))
    deps.db.transaction((tx) => {
      // Counted again here: a concurrent upload may have landed while these files were being checked.
      const stored = storedCount(tx, threadId)
      if (stored + planned.length > filesPerThread) throw quotaExceeded(stored)
      tx.insert(attachments)
        .values(
          planned.map(({ id, part, kind, mediaType, bytes, resized }) => ({
            id,
            threadId,
            kind,
            mediaType,
            filename: part.filename,
            sizeBytes: bytes.length,
            resized: resized !== null,
            createdAt: now,
          })),
        )
        .run()
      for (const { path } of files) renameSync(`${path}.tmp`, path)
    })
  } catch (error) {
    await Promise.all(files.flatMap(({ path }) => [rm(`${path}.tmp`, { force: true }), rm(path, { force: true })]))
    throw error
  }
  return planned.map(({ id, part }) => ({ id, filename: part.filename }))
}

/** One at a time: decoding five large images at once would multiply the memory an upload can take. */
async function inspectAll(inspector: FileInspector, parts: Part[]): Promise<Accepted[]> {
  const accepted: Accepted[] = []
  for (const part of parts) accepted.push(await inspect(inspector, part))
  return accepted
}

/**
 * Stores the files of an upload request for the thread's owner. Ownership and the thread's quota are checked
 * before a byte of the body is read; every file is checked before any is stored.
 */
export async function uploadAttachments(
  deps: UploadDeps,
  caller: Caller,
  threadId: string,
  request: Request,
): Promise<AttachmentsModel.attachment[]> {
  requireOwnedThread(deps.db, caller, threadId, 'upload files to it')
  const stored = storedCount(deps.db, threadId)
  if (stored >= filesPerThread) throw quotaExceeded(stored)
  const parts = await readParts(request)
  if (stored + parts.length > filesPerThread) throw quotaExceeded(stored)
  return store(deps, threadId, await inspectAll(deps.inspector, parts))
}

/** Files a browser form sent, checked by the upload's rules and ready to be stored in a thread. */
export interface CheckedFiles {
  accepted: Accepted[]
}

/**
 * Checks the files of a web form by the same rules as an upload request (at most five, each by its bytes), so
 * the web composer can refuse them before it creates anything. An empty file input sends one nameless empty
 * file, which is no file at all.
 */
export async function checkFormFiles(inspector: FileInspector, files: File[]): Promise<CheckedFiles> {
  // A part without a file name arrives as a Blob, whose `name` is undefined whatever the typings say.
  const chosen = files.filter((file) => (file.name ?? '') !== '' || file.size > 0)
  if (chosen.length > filesPerRequest) {
    throw invalidRequest(`At most ${filesPerRequest} files at a time; ${chosen.length} were chosen`)
  }
  const parts = chosen.map((file, index) => ({
    name: `attachments[${index}]`,
    file,
    filename: sanitizeFilename(file.name ?? ''),
  }))
  return { accepted: await inspectAll(inspector, parts) }
}

/** Stores checked files in a thread its owner holds, within the thread's quota. */
export async function storeFormFiles(
  deps: UploadDeps,
  caller: Caller,
  threadId: string,
  checked: CheckedFiles,
): Promise<AttachmentsModel.attachment[]> {
  if (checked.accepted.length === 0) return []
  requireOwnedThread(deps.db, caller, threadId, 'upload files to it')
  return store(deps, threadId, checked.accepted)
}

/** A stored file as the download routes serve it. */
export interface StoredFile {
  path: string
  kind: AttachmentKind
  mediaType: string
  filename: string
}

/** An attachment of a thread the caller can see, or 404 for the thread or the file alike. */
export function findAttachment(
  deps: Pick<UploadDeps, 'db' | 'uploadsDir'>,
  caller: Caller,
  threadId: string,
  attachmentId: string,
): StoredFile {
  requireVisibleThread(deps.db, caller, threadId)
  const row = deps.db
    .select({
      id: attachments.id,
      kind: attachments.kind,
      mediaType: attachments.mediaType,
      filename: attachments.filename,
    })
    .from(attachments)
    .where(and(eq(attachments.id, attachmentId), eq(attachments.threadId, threadId)))
    .get()
  if (!row) throw notFound('Attachment')
  return {
    path: originalPath(deps.uploadsDir, row.id),
    kind: row.kind,
    mediaType: row.mediaType,
    filename: row.filename,
  }
}

/** The display names of attachments, by ID, for pages that show them. */
export function attachmentNames(db: Db, ids: string[]): Map<string, { filename: string; kind: AttachmentKind }> {
  if (ids.length === 0) return new Map()
  const rows = db
    .select({ id: attachments.id, filename: attachments.filename, kind: attachments.kind })
    .from(attachments)
    .where(inArray(attachments.id, ids))
    .all()
  return new Map(rows.map((row) => [row.id, { filename: row.filename, kind: row.kind }]))
}
