// Attachment uploads: stream the body to a file, hand it to an inspect process (which parses it, checks every
// file and writes the accepted ones under temporary names), then put the files in the blob store and insert their
// rows, or nothing. Staging and checking stay on local disk (UPLOADS_DIR) whichever store keeps the files. The
// request thread does only what needs the database, through the attachment repository. Nothing here sees an
// Elysia Context.
import { rm } from 'node:fs/promises'
import type { Caller } from '../auth/model'
import { AppError, invalidRequest, notFound } from '../shared/errors'
import { newId } from '../shared/ids'
import type { Logger } from '../shared/log'
import type { Clock } from '../shared/time'
import type { BlobStore } from '../storage/blobs'
import type { ThreadRepository } from '../threads/repository'
import { requireOwnedThread, requireVisibleThread } from '../threads/visibility'
import { type CheckedFile, type FileInspector, type Outcome, type Refusal, temporaryPath } from './inspector'
import { extractedTextKey, originalKey, resizedKey } from './keys'
import { filesPerRequest, filesPerThread, maxRequestBytes } from './limits'
import type { AttachmentsModel } from './model'
import type { AttachmentKind, AttachmentRepository } from './repository'

export interface UploadDeps {
  attachments: AttachmentRepository
  /** Whose threads files go to, and who may see them. */
  threads: ThreadRepository
  clock: Clock
  log: Logger
  /** Where request bodies and checked files wait on local disk (UPLOADS_DIR), whichever store keeps the files. */
  uploadsDir: string
  inspector: FileInspector
  blobs: BlobStore
}

function quotaExceeded(stored: number): AppError {
  const room = Math.max(0, filesPerThread - stored)
  return invalidRequest(`A thread holds at most ${filesPerThread} files; this one has ${stored}, room for ${room} more`)
}

/**
 * What an upload checks before it reads or inspects a byte: the caller owns the thread, and the thread has room
 * for one more file. Answers how many files it holds.
 */
export async function requireRoomForUpload(
  deps: Pick<UploadDeps, 'threads' | 'attachments'>,
  caller: Caller,
  threadId: string,
): Promise<number> {
  await requireOwnedThread(deps.threads, caller, threadId, 'upload files to it')
  const stored = await deps.attachments.countInThread(threadId)
  if (stored >= filesPerThread) throw quotaExceeded(stored)
  return stored
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

/**
 * A file its checks refused: the API's message names the form part and the rule; `plain` says the same to the
 * person who chose the file ("fake.png isn't a PNG image: its contents are text"), for the composer and MCP.
 */
export class FileRefusal extends AppError {
  constructor(
    message: string,
    readonly plain: string,
    reason: AttachmentsModel.reason,
  ) {
    super(422, 'unprocessable_file', message, { reason })
  }
}

/** What a person is told of a refusal: a refused file in plain words, anything else as the API says it. */
export function refusalInWords(error: AppError): string {
  return error instanceof FileRefusal ? error.plain : error.message
}

function refusalError(refusal: Refusal): AppError {
  switch (refusal.kind) {
    case 'form':
      return invalidRequest(refusal.message)
    case 'quota':
      return quotaExceeded(refusal.stored)
    case 'file': {
      const { part, file, code, problem, plain, limit } = refusal
      const reason: AttachmentsModel.reason = { file, part, code, ...(limit !== undefined && { limit }) }
      return new FileRefusal(`${part} (${file}) ${problem}`, `${file} ${plain}.`, reason)
    }
  }
}

function acceptedFiles(outcome: Outcome): CheckedFile[] {
  if ('refused' in outcome) throw refusalError(outcome.refused)
  return outcome.accepted
}

/**
 * Puts the checked files in the blob store, then inserts their rows, all or none, within the thread's quota: if
 * anything fails, every file is removed, from the store and from its temporary name. The files go first because a
 * database transaction should not wait for a bucket; a crash between the two leaves files without rows, which the
 * start-up sweep (sweep.ts) removes.
 */
async function store(
  deps: UploadDeps,
  threadId: string,
  accepted: CheckedFile[],
): Promise<AttachmentsModel.attachment[]> {
  const now = deps.clock.now()
  const planned = accepted.map((file) => ({ ...file, id: newId() }))
  const puts = planned.flatMap(({ id, temporaryPath, resizedTemporaryPath }) => [
    { key: originalKey(id), path: temporaryPath },
    ...(resizedTemporaryPath ? [{ key: resizedKey(id), path: resizedTemporaryPath }] : []),
  ])
  try {
    // Settled, every one, before anything is removed: a PUT still running could land after its key was deleted.
    const settled = await Promise.allSettled(puts.map(({ key, path }) => deps.blobs.putFile(key, path)))
    for (const put of settled) if (put.status === 'rejected') throw put.reason
    // Counted again as the rows go in: a concurrent upload may have landed while these files were being checked.
    const insert = await deps.attachments.insertWithinQuota(
      threadId,
      planned.map(({ id, filename, kind, mediaType, sizeBytes, resizedTemporaryPath }) => ({
        id,
        kind,
        mediaType,
        filename,
        sizeBytes,
        resized: resizedTemporaryPath !== null,
        createdAt: now,
      })),
      filesPerThread,
    )
    if (!insert.inserted) throw quotaExceeded(insert.stored)
  } catch (error) {
    await Promise.all(
      puts.flatMap(({ key, path }) => [
        rm(path, { force: true }).catch(() => {}),
        // Left to the start-up sweep should this fail too.
        deps.blobs
          .delete(key)
          .catch((failure) => deps.log.warn('could not remove an unstored file', { key, error: String(failure) })),
      ]),
    )
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
  return receiveUpload(deps, caller, threadId, request, (received) => storeUpload(deps, threadId, received))
}

/** An upload's body, received into a temporary file in the uploads folder, not yet checked. */
export interface ReceivedUpload {
  bodyPath: string
  contentType: string
  /** Files the thread held when the upload began. */
  stored: number
}

/**
 * The first half of an upload: checks ownership and the thread's quota before a byte of the body is read, then
 * receives the body into a temporary file and hands it to `then`, removing the file once that is done. The route
 * puts the idempotency check between the halves, since a repeat is told by the bytes of its body.
 */
export async function receiveUpload<T>(
  deps: UploadDeps,
  caller: Caller,
  threadId: string,
  request: Request,
  then: (received: ReceivedUpload) => Promise<T>,
): Promise<T> {
  const stored = await requireRoomForUpload(deps, caller, threadId)
  const bodyPath = temporaryPath(deps.uploadsDir)
  try {
    const { contentType } = await receiveBody(request, bodyPath)
    // Awaited here, not handed back: a rejection must not go unhandled while the finally below awaits.
    return await then({ bodyPath, contentType, stored })
  } finally {
    // Never in place of the answer: a body file that cannot be removed now goes at the next start-up sweep.
    await rm(bodyPath, { force: true }).catch(() => {})
  }
}

/** The second half of an upload: checks every file of a received body, then stores them all or none. */
export async function storeUpload(
  deps: UploadDeps,
  threadId: string,
  { bodyPath, contentType, stored }: ReceivedUpload,
): Promise<AttachmentsModel.attachment[]> {
  const outcome = await deps.inspector.inspect({ bodyPath, contentType, stored }, deps.uploadsDir)
  return await store(deps, threadId, acceptedFiles(outcome))
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
  await requireOwnedThread(deps.threads, caller, threadId, 'upload files to it')
  return store(deps, threadId, checked.accepted)
}

/**
 * Removes files storeFormFiles stored for a message that was then refused (a form sent twice finds the thread
 * busy), so they neither linger unsent nor count against the thread's quota.
 */
export async function removeUnsentFiles(deps: UploadDeps, threadId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await deps.attachments.deleteFromThread(threadId, ids)
  await Promise.all(
    ids
      .flatMap((id) => [originalKey(id), resizedKey(id), extractedTextKey(originalKey(id))])
      .map((key) =>
        // The rows are gone: a file left behind now goes at the next start-up sweep.
        deps.blobs
          .delete(key)
          .catch((failure) => deps.log.warn('could not remove an unsent file', { key, error: String(failure) })),
      ),
  )
}

/** A stored file as the download routes serve it. */
export interface StoredFile {
  /** The original's key in the blob store (downloads never serve the scaled copy). */
  key: string
  kind: AttachmentKind
  mediaType: string
  filename: string
}

/** An attachment of a thread the caller can see, or 404 for the thread or the file alike. */
export async function findAttachment(
  deps: Pick<UploadDeps, 'threads' | 'attachments'>,
  caller: Caller,
  threadId: string,
  attachmentId: string,
): Promise<StoredFile> {
  await requireVisibleThread(deps.threads, caller, threadId)
  const row = await deps.attachments.findInThread(threadId, attachmentId)
  if (!row) throw notFound('Attachment')
  return {
    key: originalKey(row.id),
    kind: row.kind,
    mediaType: row.mediaType,
    filename: row.filename,
  }
}

/** The display names of attachments, by ID, for pages that show them. */
export async function attachmentNames(
  attachments: AttachmentRepository,
  ids: string[],
): Promise<Map<string, { filename: string; kind: AttachmentKind }>> {
  const rows = await attachments.listByIds(ids)
  return new Map(rows.map((row) => [row.id, { filename: row.filename, kind: row.kind }]))
}
