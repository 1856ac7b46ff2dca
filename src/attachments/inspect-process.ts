// The inspect process: all of an upload's work but the database, in a child process of the server. It parses the
// multipart body (form.ts), checks each file (checks.ts, sharp included), writes the accepted files under
// temporary names and answers with names and paths only; the server inserts the rows and renames the files in
// one transaction. The server starts it in Linux's idle scheduling class (inspector.ts), which every thread
// here inherits, and a decoder that crashes on a crafted file ends this process, not the server.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { checkFile } from './checks'
import { FormRefusal, type Part, readParts, sanitizeFilename } from './form'
import {
  type CheckedFile,
  type FromInspector,
  type Outcome,
  type ToInspector,
  temporaryPath,
  type Upload,
} from './inspector'
import { filesPerThread } from './limits'

async function partsOf(upload: Upload): Promise<Part[]> {
  if ('bodyPath' in upload) return readParts(readFileSync(upload.bodyPath), upload.contentType)
  return upload.files.map((file, index) => ({
    name: `attachments[${index}]`,
    filename: sanitizeFilename(file.filename),
    declaredType: file.declaredType,
    bytes: readFileSync(file.path),
  }))
}

/** The server that started this process: when it dies (SIGKILL), this process is handed to another parent. */
const server = process.ppid

/**
 * Writes each file, and a large image's scaled copy, under a temporary name (`temporaryPath`). Not once the server is
 * gone: a restarted server has swept the staging folder already, and nobody would collect them.
 */
function writeTemporary(uploadsDir: string, files: { bytes: Uint8Array; path: string }[]): void {
  if (process.ppid !== server) throw new Error('the server that asked for this inspection is gone')
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
  const accepted: CheckedFile[] = []
  const writes: { bytes: Uint8Array; path: string }[] = []
  // One at a time: decoding five large images at once would multiply the memory an upload can take.
  for (const part of parts) {
    const verdict = await checkFile(part.bytes, { filename: part.filename, declaredType: part.declaredType })
    if (!verdict.accepted) {
      const { code, problem, plain, limit } = verdict
      return { refused: { kind: 'file', part: part.name, file: part.filename, code, problem, plain, limit } }
    }
    const original = { bytes: part.bytes, path: temporaryPath(uploadsDir) }
    const resized = verdict.resized && { bytes: verdict.resized, path: temporaryPath(uploadsDir) }
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

/** Inspects one upload and answers; a check that throws is a bug, not a refusal, and fails the upload. */
export async function answer(request: ToInspector): Promise<void> {
  const { id } = request
  const message: FromInspector = await inspect(request).then(
    (outcome) => ({ id, outcome }),
    (error) => ({ id, failure: String(error) }),
  )
  process.send?.(message)
}

/**
 * Takes uploads from the server and says when this process is ready for them: the server sends none before, so
 * none arrives while the modules above load. Tests pass a handler that wraps `answer`. Only the channel to the
 * server keeps this process alive: should the server die, it exits once its last inspection ends.
 */
export function serve(handle: (request: ToInspector) => unknown = answer): void {
  process.on('message', (request: ToInspector) => void handle(request))
  process.send?.({ ready: true } satisfies FromInspector)
}

if (import.meta.main) serve()
