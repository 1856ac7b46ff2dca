// Making sure nothing else has a database open before restore replaces it. Two checks, because they see
// different things: the instance lock (src/db/instance-lock.ts) is what every server holds, and holding it
// keeps a server from starting half-way through; an exclusive SQLite lock on the database itself fails while
// any other connection is open, a CLI command such as a running backup as much as a server.
import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { lockDatabase } from '../db/instance-lock'
import { StartupError } from '../shared/startup-error'
import { OperationError } from './errors'

/**
 * Fails unless this process is the only one using the database. A WAL connection keeps a shared lock on the
 * database file for as long as it is open, so an exclusive lock, asked for without waiting, is refused while
 * any other connection exists. Closing the probe checkpoints and removes the WAL, which the caller replaces.
 */
function requireNoOtherConnection(path: string): void {
  if (!existsSync(path)) return
  let probe: Database | undefined
  try {
    probe = new Database(path, { readwrite: true, create: false })
    probe.run('PRAGMA busy_timeout = 0')
    probe.run('PRAGMA locking_mode = EXCLUSIVE')
    probe.run('BEGIN EXCLUSIVE')
    probe.run('COMMIT')
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw new OperationError(
        `${path} is open in another process (a server, or a CLI command such as backup); stop it first`,
      )
    }
    // Without the lock nothing says that no server uses it, however damaged it is.
    throw new OperationError(
      `Cannot tell whether ${path} is in use (${(error as Error).message}); stop any server on it and move the file away first`,
    )
  } finally {
    probe?.close()
  }
}

/** Claims the database at `path` for this process until the returned function is called; throws if in use. */
export function claimDatabase(path: string): () => void {
  let lock: ReturnType<typeof lockDatabase>
  try {
    lock = lockDatabase(path)
  } catch (error) {
    if (error instanceof StartupError) throw new OperationError(error.message)
    throw error
  }
  try {
    requireNoOtherConnection(path)
  } catch (error) {
    lock?.release()
    throw error
  }
  return () => lock?.release()
}
