// One server per SQLite file. Two servers on one file would each recover, queue and stream the same answers
// and keep their own rate limits and event hubs; that needs the PostgreSQL mode, not a second process.
//
// The lock is an OS file lock held for the life of the process on `<database>.lock`, beside the real database
// file. SQLite takes it (an exclusive transaction on that otherwise empty file, never committed), so it is the
// same fcntl lock SQLite already relies on for the database itself. The kernel drops it when the process
// ends, however it ends, so there is never a stale lock to clean up and no race between two starts; it has no
// path-length limit (a Unix socket has about 107 bytes) and works wherever the database works, including a
// folder two containers share. The database itself is not locked: the CLI keeps working beside the server.
import { Database } from 'bun:sqlite'
import { accessSync, closeSync, constants, openSync, realpathSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { osReason, StartupError } from '../shared/startup-error'

export interface InstanceLock {
  /** The lock file. */
  readonly path: string
  release(): void
}

// Held here as well as by the caller: a collected connection would be closed, and its lock with it.
const held = new Set<Database>()

/** The file SQLite will open, symbolic links resolved, so that two spellings of one database share one lock. */
function realDatabasePath(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    // Not created yet: the file name is the one SQLite will create, in its folder's real place.
    try {
      return join(realpathSync(dirname(path)), basename(path))
    } catch {
      return resolve(path)
    }
  }
}

function createIfMissing(path: string): void {
  try {
    closeSync(openSync(path, 'wx'))
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error
  }
}

/**
 * Takes the lock for the database at `path` or throws a StartupError naming DATABASE_PATH. An in-memory
 * database is private to its process and needs none. `graceMs` is how long a stopping server may go on holding
 * the lock (SHUTDOWN_GRACE_MS), for the refusal to say: a restart often finds the old server still finishing.
 */
export function lockDatabase(path: string, graceMs?: number): InstanceLock | undefined {
  if (path === ':memory:') return undefined
  const lockPath = `${realDatabasePath(path)}.lock`
  let lock: Database | undefined
  try {
    // SQLite quietly opens a file it may not write read-only, and a read-only connection only ever gets a
    // shared lock, which a second server would share: the file must be writable. It is created and checked
    // without opening it if it exists, since closing any descriptor of a file drops this process's locks on it.
    createIfMissing(lockPath)
    accessSync(lockPath, constants.R_OK | constants.W_OK)
    lock = new Database(lockPath, { readwrite: true, create: true })
    // The transaction never writes; a journal in memory keeps a -journal file from appearing beside the lock
    // (SQLite ignores journal_mode OFF on an empty file).
    lock.run('PRAGMA journal_mode = MEMORY')
    lock.run('PRAGMA locking_mode = EXCLUSIVE')
    lock.run('BEGIN EXCLUSIVE')
  } catch (error) {
    lock?.close()
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      const stopping =
        graceMs === undefined
          ? ''
          : `; a server that was just stopped may still be finishing its answers, for up to SHUTDOWN_GRACE_MS (${graceMs / 1000} s) and a few seconds more: start again once it has exited`
      throw new StartupError(
        `Cannot use DATABASE_PATH ${path}: another Threadhouse server is running on it (one server per SQLite file)${stopping}`,
      )
    }
    throw new StartupError(`Cannot use DATABASE_PATH ${path}: cannot take the lock ${lockPath} (${osReason(error)})`)
  }
  const connection = lock
  held.add(connection)
  return {
    path: lockPath,
    release() {
      if (!held.delete(connection)) return
      connection.close()
    },
  }
}
