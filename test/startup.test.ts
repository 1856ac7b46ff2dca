// Start-up refuses what would fail later: a taken port, a second server on the same SQLite file, folders it
// cannot write. Each refusal is one line on stderr and exit code 1, run as operators run it (`bun run start`),
// beside one real server that holds a database and a port.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { backendEnv, onPostgres } from './support/backend'
import { firstRunToken, runToEnd, type ServerProcess, startServer, until } from './support/helpers'
import { type Unprivileged, unprivileged } from './support/unprivileged'

const root = join(import.meta.dir, '..')

// Every test here starts bun processes (startServer alone allows 20 s to listen). Each refusal has folders of its
// own, so those tests run concurrently: most of their time is spent waiting for processes to start.

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-startup-'))
// Open to the unprivileged user some tests run the server as (see `start`).
chmodSync(dir, 0o755)
const running = {
  DATABASE_PATH: join(dir, 'running', 'db.sqlite'),
  UPLOADS_DIR: join(dir, 'running', 'uploads'),
  ADMIN_EMAIL: 'owner@example.com',
  ADMIN_PASSWORD: 'a long enough password',
}
let server: ServerProcess
let port: number
/** The running server's whole environment: on PostgreSQL runs, with the DATABASE_URL and bucket it was given. */
let runningEnv: Record<string, string>
/** Where the running server keeps its data: its SQLite file, or on PostgreSQL runs its database. */
let runningDatabase: Record<string, string>

beforeAll(async () => {
  runningEnv = await backendEnv(running)
  runningDatabase = onPostgres
    ? { DATABASE_URL: runningEnv.DATABASE_URL ?? '' }
    : { DATABASE_PATH: running.DATABASE_PATH }
  server = await startServer(runningEnv)
  port = Number(new URL(server.url).port)
  // The first run has finished writing once it printed its token: nothing here races it.
  await firstRunToken(server)
})

afterAll(async () => {
  await server[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

/** A folder with exactly these permission bits, whatever the umask. */
function folder(path: string, mode: number): string {
  mkdirSync(path, { recursive: true })
  chmodSync(path, mode)
  return path
}

let fresh = 0
/** A database and an uploads folder of their own (writable by anyone), so that only what a test names is shared. */
function own(): { DATABASE_PATH: string; UPLOADS_DIR: string } {
  fresh += 1
  const base = folder(join(dir, `own-${fresh}`), 0o777)
  return { DATABASE_PATH: join(base, 'db.sqlite'), UPLOADS_DIR: join(base, 'uploads') }
}

interface Outcome {
  /** The exit code, or 'listening' when the server started instead of refusing (it is then stopped). */
  code: number | 'listening'
  stdout: string
  stderr: string
}

/** `bun run start` to its end; a server that starts after all is stopped, so that a missing refusal fails. */
async function start(env: Record<string, string>, user: Unprivileged = { cwd: root }): Promise<Outcome> {
  const child = Bun.spawn(['bun', 'run', 'start'], {
    ...user,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let stdout = ''
  let stderr = ''
  const drained = Promise.all([
    (async () => {
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) stdout += chunk
    })(),
    (async () => {
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk
    })(),
  ])
  const listened = await until(() => (child.exitCode !== null ? 'exited' : stderr.includes('"msg":"listening"')))
  // SIGTERM, which `bun run` passes on to the server it started (a SIGKILL would leave that server running).
  if (listened === true) child.kill('SIGTERM')
  const code = await child.exited
  await drained
  return { code: listened === true ? 'listening' : code, stdout, stderr }
}

/** Exit code 1, nothing on stdout, and on stderr exactly `line`: no stack trace, no other line. */
function expectRefusal(outcome: Outcome, line: string): void {
  expect(outcome.stderr).not.toContain('    at ')
  expect({ ...outcome, stderr: outcome.stderr.split('\n') }).toEqual({
    code: 1,
    stdout: '',
    stderr: [line, ''],
  })
}

// The SQLite file's instance lock, on SQLite only: on PostgreSQL several servers may share one database (start-up
// migrates under an advisory lock, src/db/postgres.ts).
test.concurrent.skipIf(onPostgres)(
  'a second server on the same database is refused, however the path is spelled',
  async () => {
    expectRefusal(
      await start({ ...own(), DATABASE_PATH: running.DATABASE_PATH }),
      `Cannot use DATABASE_PATH ${running.DATABASE_PATH}: another Threadhouse server is running on it (one server per SQLite file)${stillStopping}`,
    )
    const link = join(dir, 'link')
    symlinkSync(join(dir, 'running'), link)
    const linked = join(link, 'db.sqlite')
    expectRefusal(
      await start({ ...own(), DATABASE_PATH: linked }),
      `Cannot use DATABASE_PATH ${linked}: another Threadhouse server is running on it (one server per SQLite file)${stillStopping}`,
    )
  },
)

/** What a refusal for a database in use adds, with the default SHUTDOWN_GRACE_MS. */
const stillStopping =
  '; a server that was just stopped may still be finishing its answers, for up to SHUTDOWN_GRACE_MS (10 s) and a few seconds more: start again once it has exited'

test.concurrent.skipIf(onPostgres)(
  'a restart while the old server finishes its answers says it may still be stopping',
  async () => {
    const database = own()
    const env = {
      ...database,
      SHUTDOWN_GRACE_MS: '30000',
      ECHO_TOKEN_DELAY_MS: '500',
    }
    const old = await startServer(env)
    const token = await firstRunToken(old)
    const created = await fetch(`${old.url}/api/v1/threads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'A long answer, please' }),
    })
    expect(created.status).toBe(201)
    const { thread_id } = (await created.json()) as { thread_id: string }
    const state = async () =>
      (
        (await (
          await fetch(`${old.url}/api/v1/threads/${thread_id}`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as { state: string }
      ).state
    await until(async () => (await state()) === 'active')
    old.process.kill('SIGTERM')
    await until(() => old.stderr().includes('"msg":"shutting down"'))
    expectRefusal(
      await start({ ...env, SHUTDOWN_GRACE_MS: '30000' }),
      `Cannot use DATABASE_PATH ${database.DATABASE_PATH}: another Threadhouse server is running on it (one server per SQLite file); a server that was just stopped may still be finishing its answers, for up to SHUTDOWN_GRACE_MS (30 s) and a few seconds more: start again once it has exited`,
    )
    // Still finishing, not stuck: it exits by itself once its answer is done, and the next start listens.
    expect(old.process.exitCode).toBeNull()
    expect(await old.process.exited).toBe(0)
    expect((await start(env)).code).toBe('listening')
  },
)

/** A database made by this release, with enough rows that it spans many pages, closed with no WAL beside it. */
function realDatabase(path: string): void {
  const db = openDatabase(path)
  migrateDatabase(db)
  db.$client.run('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)')
  const insert = db.$client.prepare('INSERT INTO notes (body) VALUES (?)')
  for (let i = 0; i < 400; i++) insert.run(`note ${i} `.repeat(40))
  // Everything into the file itself: a WAL left beside it would still hold good copies of the pages spoiled below.
  db.$client.run('PRAGMA journal_mode = DELETE')
  db.$client.close()
}

test.concurrent.skipIf(onPostgres)(
  'a damaged database file stops the start with one line saying how to restore it',
  async () => {
    const damaged = (path: string, what: string | RegExp) =>
      new RegExp(
        `^Cannot use DATABASE_PATH ${RegExp.escape(path)}: the file is damaged \\(${typeof what === 'string' ? RegExp.escape(what) : what.source}\\)\\. Stop, move it aside and restore the latest backup: bun run cli restore --from DIR \\(docs/operations\\.md, Backup and restore\\)$`,
      )
    const cases: [string, (path: string) => void, string | RegExp][] = [
      [
        'garbage',
        (path) => writeFileSync(path, crypto.getRandomValues(new Uint8Array(64 * 1024))),
        'file is not a database',
      ],
      [
        'clobbered header',
        (path) => {
          realDatabase(path)
          const bytes = readFileSync(path)
          bytes.fill(0x41, 0, 100)
          writeFileSync(path, bytes)
        },
        'file is not a database',
      ],
      [
        'malformed page',
        (path) => {
          realDatabase(path)
          const bytes = readFileSync(path)
          // The last page holds notes inserted last: an interior of a table's B-tree, which every check reads.
          bytes.fill(0xff, bytes.length - 4096 + 8, bytes.length - 100)
          writeFileSync(path, bytes)
        },
        /database disk image is malformed: Tree \d+ page \d+ cell \d+: [^;]+/,
      ],
      [
        'truncated',
        (path) => {
          realDatabase(path)
          truncateSync(path, Math.floor(statSync(path).size / 2 / 4096) * 4096)
        },
        'database disk image is malformed',
      ],
    ]
    const outcomes = await Promise.all(
      cases.map(async ([name, spoil, what]) => {
        const database = own()
        spoil(database.DATABASE_PATH)
        const outcome = await start(database)
        return {
          name,
          ...outcome,
          stderr: outcome.stderr.split('\n'),
          expected: [expect.stringMatching(damaged(database.DATABASE_PATH, what)), ''],
        }
      }),
    )
    // One line each, and nothing else: no stack trace, no source excerpt.
    for (const { expected, ...outcome } of outcomes) {
      expect(outcome).toEqual({ name: outcome.name, code: 1, stdout: '', stderr: expected })
    }
  },
)

test.concurrent('a second server on the same port is refused, instead of sharing it', async () => {
  expectRefusal(
    await start({ ...own(), PORT: String(port) }),
    `Cannot listen on HOST 127.0.0.1, PORT ${port}: the port is already in use`,
  )
  // The running server still answers every request.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
})

test.concurrent('the operator CLI works beside the running server, on the same database', async () => {
  const { stdout, stderr, code } = await runToEnd(
    ['bun', 'run', 'cli', 'token:create', '--email', running.ADMIN_EMAIL, '--scopes', 'threads:read'],
    runningDatabase,
  )
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  const token = stdout.trimEnd().split('\n').at(-1)
  const listed = await fetch(`${server.url}/api/v1/threads`, { headers: { authorization: `Bearer ${token}` } })
  expect(listed.status).toBe(200)
})

test.concurrent('a DATABASE_PATH folder that cannot be written or created is refused', async () => {
  const readOnly = folder(join(dir, 'read-only'), 0o555)
  const inReadOnly = join(readOnly, 'db.sqlite')
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: inReadOnly }, unprivileged()),
    `Cannot use DATABASE_PATH ${inReadOnly}: its folder ${readOnly} is not writable (EACCES: permission denied)`,
  )
  const file = join(dir, 'a-file')
  writeFileSync(file, 'not a folder')
  const underFile = join(file, 'db.sqlite')
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: underFile }),
    `Cannot use DATABASE_PATH ${underFile}: its folder ${file} is not a folder`,
  )
  const deeper = join(file, 'nested', 'db.sqlite')
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: deeper }),
    `Cannot use DATABASE_PATH ${deeper}: its folder ${join(file, 'nested')} cannot be created (ENOTDIR: not a directory)`,
  )
})

test.concurrent('a DATABASE_PATH that is a folder, or whose files or lock cannot be written, is refused', async () => {
  const path = own().DATABASE_PATH
  mkdirSync(path)
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: path }),
    `Cannot use DATABASE_PATH ${path}: it is a folder, not a file`,
  )
  const readOnly = own().DATABASE_PATH
  writeFileSync(readOnly, '', { mode: 0o444 })
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: readOnly }, unprivileged()),
    `Cannot use DATABASE_PATH ${readOnly}: it is not writable (EACCES: permission denied)`,
  )
  // As a CLI run by another user can leave them: SQLite would fail on the first write.
  const database = own().DATABASE_PATH
  writeFileSync(database, '')
  chmodSync(database, 0o666)
  writeFileSync(`${database}-wal`, '', { mode: 0o444 })
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: database }, unprivileged()),
    `Cannot use DATABASE_PATH ${database}: ${database}-wal is not writable (EACCES: permission denied)`,
  )
  // Opened read-only, the lock would only be shared, with any number of servers.
  const locked = own().DATABASE_PATH
  writeFileSync(`${locked}.lock`, '', { mode: 0o444 })
  expectRefusal(
    await start({ ...own(), DATABASE_PATH: locked }, unprivileged()),
    `Cannot use DATABASE_PATH ${locked}: cannot take the lock ${locked}.lock (EACCES: permission denied)`,
  )
})

test.concurrent('an UPLOADS_DIR that cannot be written or created is refused', async () => {
  const readOnly = folder(join(dir, 'read-only-uploads'), 0o555)
  expectRefusal(
    await start({ ...own(), UPLOADS_DIR: readOnly }, unprivileged()),
    `Cannot use UPLOADS_DIR ${readOnly}: it is not writable (EACCES: permission denied)`,
  )
  const file = join(dir, 'uploads-file')
  writeFileSync(file, 'not a folder')
  expectRefusal(await start({ ...own(), UPLOADS_DIR: file }), `Cannot use UPLOADS_DIR ${file}: it is not a folder`)
})

// Last, alone: it ends the server the others run beside.
test.serial('a server killed outright leaves no lock behind: the next start on its database listens', async () => {
  server.process.kill('SIGKILL')
  await server.process.exited
  await using again = await startServer(runningEnv)
  expect((await fetch(`${again.url}/healthz`)).status).toBe(200)
})
