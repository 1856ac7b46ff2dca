// The inspect worker: all of an upload's work but the database, off the thread that answers requests. It parses
// the multipart body (form.ts), checks each file (checks.ts, sharp included), writes the accepted files under
// temporary names and answers with names and paths only; the request thread inserts the rows and renames the
// files in one transaction.
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import { resolve } from 'node:path'
import { checkFile } from './checks'
import { FormRefusal, type Part, readParts, sanitizeFilename } from './form'
import type { CheckedFile, FromInspector, Outcome, ToInspector, Upload } from './inspector'
import { filesPerThread } from './limits'

declare const self: Worker

/**
 * Upload work gives way to requests: on a small machine a PDF being parsed or an image being decoded would
 * otherwise hold up other endpoints' answers (bench scenario 6). Linux keeps a priority per thread, so this
 * lowers this worker's thread and libvips's, which decode for sharp and for nothing else. libvips starts threads
 * as it needs them, at the priority of the thread that starts them, so this runs again after every upload.
 * Without /proc (not Linux) it does nothing.
 */
function giveWayToRequests(): void {
  if (!existsSync('/proc/thread-self')) return
  const own = readlinkSync('/proc/thread-self').split('/').at(-1)
  for (const thread of readdirSync('/proc/self/task')) {
    try {
      if (thread === own || readFileSync(`/proc/self/task/${thread}/comm`, 'utf8').startsWith('libvips')) {
        setPriority(Number(thread), 10)
      }
    } catch {
      // The thread ended meanwhile.
    }
  }
}

async function partsOf(upload: Upload): Promise<Part[]> {
  if ('bodyPath' in upload) return readParts(readFileSync(upload.bodyPath), upload.contentType)
  return upload.files.map((file, index) => ({
    name: `attachments[${index}]`,
    filename: sanitizeFilename(file.filename),
    declaredType: file.declaredType,
    bytes: new Uint8Array(file.bytes),
  }))
}

/**
 * Writes each file, and a large image's scaled copy, under a temporary name: a name no attachment has, which
 * the start-up sweep removes should the request thread never store it. Synchronously, so that the copying
 * happens on this low-priority thread rather than on Bun's shared I/O threads, which requests use too.
 */
function writeTemporary(uploadsDir: string, files: { bytes: Uint8Array; path: string }[]): void {
  try {
    mkdirSync(uploadsDir, { recursive: true })
    for (const { path, bytes } of files) writeFileSync(path, bytes)
  } catch (error) {
    for (const { path } of files) rmSync(path, { force: true })
    throw error
  }
}

async function inspect({ upload, uploadsDir }: ToInspector): Promise<Outcome> {
  let parts: Part[]
  try {
    parts = await partsOf(upload)
  } catch (error) {
    if (error instanceof FormRefusal) return { refused: { kind: 'form', message: error.message } }
    throw error
  }
  if ('stored' in upload && upload.stored + parts.length > filesPerThread) {
    return { refused: { kind: 'quota', stored: upload.stored } }
  }
  const temporary = () => resolve(uploadsDir, `${Bun.randomUUIDv7()}.tmp`)
  const accepted: CheckedFile[] = []
  const writes: { bytes: Uint8Array; path: string }[] = []
  // One at a time: decoding five large images at once would multiply the memory an upload can take.
  for (const part of parts) {
    const verdict = await checkFile(part.bytes, { filename: part.filename, declaredType: part.declaredType })
    if (!verdict.accepted) {
      const { code, problem, limit } = verdict
      return { refused: { kind: 'file', part: part.name, file: part.filename, code, problem, limit } }
    }
    const original = { bytes: part.bytes, path: temporary() }
    const resized = verdict.resized && { bytes: verdict.resized, path: temporary() }
    writes.push(original, ...(resized ? [resized] : []))
    accepted.push({
      filename: part.filename,
      kind: verdict.kind,
      mediaType: verdict.mediaType,
      sizeBytes: part.bytes.length,
      temporaryPath: original.path,
      resizedTemporaryPath: resized ? resized.path : null,
    })
  }
  writeTemporary(uploadsDir, writes)
  return { accepted }
}

async function answer(request: ToInspector): Promise<void> {
  const { id } = request
  const message: FromInspector = await inspect(request).then(
    (outcome) => ({ id, outcome }),
    // A check that throws is a bug, not a refusal: the upload fails as any unexpected error does.
    (error) => ({ id, failure: String(error) }),
  )
  self.postMessage(message)
  // After answering, so the scan never delays an upload: libvips may have started threads meanwhile.
  giveWayToRequests()
}

giveWayToRequests()
self.onmessage = (event: MessageEvent<ToInspector>) => {
  void answer(event.data)
}
// Uploads' time limits start now: the modules above may take a while to load on a busy machine.
self.postMessage({ ready: true } satisfies FromInspector)
