// Start-up checks that turn what would fail later (a write into a read-only folder on the first upload, a
// second server sharing the port) into one line naming the cause before the server does anything.
import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Config } from './config'
import { osReason, StartupError } from './shared/startup-error'
import type { BlobStore } from './storage/blobs'

function isFolder(path: string): boolean | undefined {
  try {
    return statSync(path).isDirectory()
  } catch {
    return undefined
  }
}

/**
 * Creates the folder if missing, then writes and removes a file in it. A real write, not access(2): access
 * says yes on /proc, and to root on anything but a read-only mount, where the first real write then fails.
 * Returns what is wrong, or nothing.
 */
function folderProblem(folder: string): string | undefined {
  const exists = isFolder(folder)
  if (exists === false) return 'is not a folder'
  if (exists === undefined) {
    try {
      mkdirSync(folder, { recursive: true })
    } catch (error) {
      return `cannot be created (${osReason(error)})`
    }
  }
  // Dot-named, so the uploads sweep would leave it alone even if a crash left it behind.
  const probe = join(folder, `.threadhouse-write-check-${crypto.randomUUID()}`)
  try {
    closeSync(openSync(probe, 'wx'))
    unlinkSync(probe)
  } catch (error) {
    return `is not writable (${osReason(error)})`
  }
}

/** An existing file must open for reading and writing, as SQLite will open it; a missing one is created later. */
function fileProblem(path: string): string | undefined {
  const folder = isFolder(path)
  if (folder === undefined) return
  if (folder) return 'is a folder, not a file'
  try {
    closeSync(openSync(path, 'r+'))
  } catch (error) {
    return `is not writable (${osReason(error)})`
  }
}

/**
 * The database's folder and files and the uploads folder: missing folders are created (as the contract says
 * for the database's), and each must take writes. SQLite writes its -wal and -shm files beside the database,
 * so those count too (a CLI run as another user can leave them behind, unwritable to the server).
 */
export function prepareStorage(config: Pick<Config, 'DATABASE_PATH' | 'DATABASE_URL' | 'UPLOADS_DIR'>): void {
  const database = config.DATABASE_PATH
  // With DATABASE_URL the SQLite path is not used: nothing is checked or created for it.
  if (database !== ':memory:' && config.DATABASE_URL === undefined) {
    const folder = dirname(database)
    const problem = folderProblem(folder)
    if (problem) throw new StartupError(`Cannot use DATABASE_PATH ${database}: its folder ${folder} ${problem}`)
    for (const file of [database, `${database}-wal`, `${database}-shm`]) {
      const fault = fileProblem(file)
      if (fault)
        throw new StartupError(`Cannot use DATABASE_PATH ${database}: ${file === database ? 'it' : file} ${fault}`)
    }
  }
  const uploads = config.UPLOADS_DIR
  const problem = folderProblem(uploads)
  if (problem) throw new StartupError(`Cannot use UPLOADS_DIR ${uploads}: it ${problem}`)
}

/** What an S3 error code means for an operator, in words; the code itself follows in brackets. */
const s3Reasons: Record<string, string> = {
  NoSuchBucket: 'the bucket does not exist',
  InvalidAccessKeyId: 'S3_ACCESS_KEY_ID is not a key this service knows',
  SignatureDoesNotMatch: 'S3_SECRET_ACCESS_KEY does not match S3_ACCESS_KEY_ID',
  AccessDenied: 'the key may not read and write this bucket',
  AllAccessDisabled: 'the key may not read and write this bucket',
  PermanentRedirect: 'the bucket is in another region than S3_REGION says',
  AuthorizationHeaderMalformed: 'the bucket is in another region than S3_REGION says',
  ConnectionRefused: 'the endpoint refuses connections',
  ConnectionClosed: 'the endpoint closed the connection',
  DNSResolveFailed: "the endpoint's host name does not resolve",
}

function storeReason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : String(error)
  if (typeof code !== 'string') return osReason(error)
  return `${s3Reasons[code] ?? message} (${code})`
}

/**
 * Writes, reads back and removes a probe in the blob store, so that a bucket that is missing, unreachable or closed
 * to this key stops the start with one line, not the first upload with a 500. At most ten seconds on a bucket.
 */
export async function checkBlobStore(blobs: BlobStore): Promise<void> {
  try {
    await blobs.check()
  } catch (error) {
    const where = blobs.description
    throw new StartupError(
      where.kind === 'local'
        ? `Cannot use UPLOADS_DIR ${where.path}: ${storeReason(error)}`
        : `Cannot use S3_BUCKET ${where.bucket} at ${where.endpoint ?? "AWS's endpoint for S3_REGION"}: ${storeReason(error)}`,
    )
  }
}

/** Whether a server can bind this host at all, on any free port. */
function hostBinds(hostname: string): boolean {
  try {
    Bun.serve({ hostname, port: 0, reusePort: false, fetch: () => new Response() }).stop(true)
    return true
  } catch {
    return false
  }
}

/** Why listening failed, in words for the one line. */
export function listenFailure(error: unknown, hostname: string, port: number): string {
  // For a host name that does not resolve, Bun's error code is whatever errno held (EADDRINUSE, EINVAL,
  // ENOENT...): a bind to any free port on the same host tells a bad HOST from a bad PORT.
  if (!hostBinds(hostname)) return 'HOST is not a name or address of this machine'
  const code = (error as { code?: unknown } | undefined)?.code
  if (code === 'EADDRINUSE') return 'the port is already in use'
  if (code === 'EACCES')
    return port < 1024 ? 'permission denied (a port below 1024 needs privileges)' : 'permission denied'
  return error instanceof Error ? error.message : String(error)
}
