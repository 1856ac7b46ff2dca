// Attachment uploads: stream the body to a file, hand it to an inspect process (which parses it, checks every
// file and writes the accepted ones under temporary names), then store every row and file together, or nothing.
// The request thread does only what needs the database. Nothing here sees an Elysia Context.
import { renameSync } from 'node:fs'
import { readdir, rm } from 'node:fs/promises'
import { resolve } from 'node:path'
import { and, count, eq, inArray } from 'drizzle-orm'
import type { AuthDeps } from '../auth'
import type { Caller } from '../auth/model'
import type { Db } from '../db/client'
import type { AttachmentFile } from '../generation/types'
import { AppError, invalidRequest, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import { requireOwnedThread, requireVisibleThread } from '../threads/service'
import { type AttachmentKind, attachments } from './attachments.table'
import { type CheckedFile, type FileInspector, type Outcome, type Refusal, temporaryPath } from './inspector'
import { filesPerRequest, filesPerThread, maxRequestBytes } from './limits'
import type { AttachmentsModel } from './model'

export interface UploadDeps extends AuthDeps {
  uploadsDir: string
  inspector: FileInspector
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

const tooLarge = () =>
  new AppError(413, 'payload_too_large', `An upload body may have at most ${maxRequestBytes} bytes`)

/**
 * Streams the raw body of an upload request into a temporary file in the uploads folder, which an inspect
 * process reads. Gathered in memory here instead, megabytes of bodies cost this thread copies and garbage
 * collections that other requests wait behind (bench scenario 6). A body that declares more bytes than any
 * valid upload needs is refused before a byte of it is read. The caller removes the file.
 */
async function receiveBody(request: Request, path: string): Promise<{ contentType: string }> {
  if (Number(request.headers.get('content-length')) > maxRequestBytes) throw tooLarge()
  const contentType = request.headers.get('content-type') ?? ''
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
    throw invalidRequest('Send the files as multipart/form-data')
  }
  const written = await Bun.write(path, request).catch((error) => {
    // The client went away mid-body.
    if (request.signal.aborted || (error instanceof Error && error.name === 'AbortError')) {
      throw invalidRequest('The multipart body could not be read')
    }
    // A chunked body past Bun's own bound, which has already answered 413: no server fault to log.
    if (error instanceof Error && error.message === 'Request body exceeded maxRequestBodySize') throw tooLarge()
    // Anything else, a failing disk above all, is the server's: a logged 500.
    throw error
  })
  // A chunked body declared no length: it is judged once read.
  if (written > maxRequestBytes) throw tooLarge()
  return { contentType }
}

function refusalError(refusal: Refusal): AppError {
  switch (refusal.kind) {
    case 'form':
      return invalidRequest(refusal.message)
    case 'quota':
      return quotaExceeded(refusal.stored)
    case 'file': {
      const { part, file, code, problem, limit } = refusal
      const reason: AttachmentsModel.reason = { file, part, code, ...(limit !== undefined && { limit }) }
      return new AppError(422, 'unprocessable_file', `${part} (${file}) ${problem}`, { reason })
    }
  }
}

function acceptedFiles(outcome: Outcome): CheckedFile[] {
  if ('refused' in outcome) throw refusalError(outcome.refused)
  return outcome.accepted
}

/**
 * Inserts the rows and renames the checked files from their temporary names in one transaction: if anything
 * fails, the transaction rolls back and every file is removed.
 */
async function store(
  deps: UploadDeps,
  threadId: string,
  accepted: CheckedFile[],
): Promise<AttachmentsModel.attachment[]> {
  const now = deps.clock.now()
  const planned = accepted.map((file) => ({ ...file, id: newId() }))
  const moves = planned.flatMap(({ id, temporaryPath, resizedTemporaryPath }) => [
    { from: temporaryPath, to: originalPath(deps.uploadsDir, id) },
    ...(resizedTemporaryPath ? [{ from: resizedTemporaryPath, to: resizedPath(deps.uploadsDir, id) }] : []),
  ])
  try {
    deps.db.transaction((tx) => {
      // Counted again here: a concurrent upload may have landed while these files were being checked.
      const stored = storedCount(tx, threadId)
      if (stored + planned.length > filesPerThread) throw quotaExceeded(stored)
      tx.insert(attachments)
        .values(
          planned.map(({ id, filename, kind, mediaType, sizeBytes, resizedTemporaryPath }) => ({
            id,
            threadId,
            kind,
            mediaType,
            filename,
            sizeBytes,
            resized: resizedTemporaryPath !== null,
            createdAt: now,
          })),
        )
        .run()
      for (const { from, to } of moves) renameSync(from, to)
    })
  } catch (error) {
    await Promise.all(moves.flatMap(({ from, to }) => [rm(from, { force: true }), rm(to, { force: true })]))
    throw error
  }
  return planned.map(({ id, filename }) => ({ id, filename }))
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
  const bodyPath = temporaryPath(deps.uploadsDir)
  try {
    const { contentType } = await receiveBody(request, bodyPath)
    const outcome = await deps.inspector.inspect({ bodyPath, contentType, stored }, deps.uploadsDir)
    // Awaited here, not handed back: a rejection must not go unhandled while the finally below awaits.
    return await store(deps, threadId, acceptedFiles(outcome))
  } finally {
    // Never in place of the answer: a body file that cannot be removed now goes at the next start-up sweep.
    await rm(bodyPath, { force: true }).catch(() => {})
  }
}

/**
 * Files a browser form sent, checked by the upload's rules and waiting under temporary names: store them with
 * storeFormFiles (the start-up sweep removes any that never are).
 */
export interface CheckedFiles {
  accepted: CheckedFile[]
}

/**
 * Checks the files of a web form by the same rules as an upload request (at most five, each by its bytes), so
 * the web composer can refuse them before it creates anything. An empty file input sends one nameless empty
 * file, which is no file at all.
 */
export async function checkFormFiles(
  deps: Pick<UploadDeps, 'inspector' | 'uploadsDir'>,
  files: File[],
): Promise<CheckedFiles> {
  // A part without a file name arrives as a Blob, whose `name` is undefined whatever the typings say.
  const chosen = files.filter((file) => (file.name ?? '') !== '' || file.size > 0)
  if (chosen.length > filesPerRequest) {
    throw invalidRequest(`At most ${filesPerRequest} files at a time; ${chosen.length} were chosen`)
  }
  if (chosen.length === 0) return { accepted: [] }
  // Handed over as files, as an upload request's body is: sending megabytes through the inspect process's
  // channel would copy them on this thread.
  const written = chosen.map((file) => ({ file, path: temporaryPath(deps.uploadsDir) }))
  try {
    // Settled, every one, before the finally removes them: none may still be writing then.
    const writes = await Promise.allSettled(written.map(({ file, path }) => Bun.write(path, file)))
    for (const write of writes) if (write.status === 'rejected') throw write.reason
    const files = written.map(({ file, path }) => ({ filename: file.name ?? '', declaredType: file.type, path }))
    return { accepted: acceptedFiles(await deps.inspector.inspect({ files }, deps.uploadsDir)) }
  } finally {
    await Promise.all(written.map(({ path }) => rm(path, { force: true }).catch(() => {})))
  }
}

/**
 * Removes the temporary files of checked files that were not stored, for a form refused after its files
 * were checked. Stored files have left their temporary names, so calling this after storing removes nothing.
 */
export async function discardCheckedFiles(checked: CheckedFiles): Promise<void> {
  const paths = checked.accepted.flatMap(({ temporaryPath, resizedTemporaryPath }) =>
    resizedTemporaryPath ? [temporaryPath, resizedTemporaryPath] : [temporaryPath],
  )
  await Promise.all(paths.map((path) => rm(path, { force: true })))
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

/**
 * Removes files storeFormFiles stored for a message that was then refused (a form sent twice finds the thread
 * busy), so they neither linger unsent nor count against the thread's quota.
 */
export async function removeUnsentFiles(deps: UploadDeps, threadId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  deps.db
    .delete(attachments)
    .where(and(eq(attachments.threadId, threadId), inArray(attachments.id, ids)))
    .run()
  await Promise.all(
    ids.flatMap((id) => [
      rm(originalPath(deps.uploadsDir, id), { force: true }),
      rm(resizedPath(deps.uploadsDir, id), { force: true }),
    ]),
  )
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
