import { afterAll } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventSourceMessage } from 'eventsource-parser'
import { type AppDeps, createApp } from '../../src/app'
import { createFileInspector, type FileInspector } from '../../src/attachments/inspector'
import type { Role, Scope } from '../../src/auth/model'
import { createPersonalAccessToken } from '../../src/auth/personal-access-tokens'
import { type Config, loadConfig } from '../../src/config'
import type { Db } from '../../src/db/client'
import { createWorkerRunner } from '../../src/generation/runner'
import type { GenerationRunner, HistoryMessage, JobHandlers } from '../../src/generation/types'
import { type Logger, silentLogger } from '../../src/shared/log'
import { hashPassword } from '../../src/shared/security'
import { Heartbeats } from '../../src/shared/streams/sse'
import type { Clock } from '../../src/shared/time'
import { type BlobLocation, type BlobStore, LocalBlobStore } from '../../src/storage/blobs'
import type { Store } from '../../src/store'
import { testOrigin, tokenHolder } from './audit'
import { backendEnv, type Tables, testBucket, testDatabase } from './backend'
import { parseEvents } from './sse'

// Also here for the tests that read streams alongside the harness.
export { parseEvents }

export const publicUrl = 'http://threadhouse.test'

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(public ms = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.ms
  }
  advance(ms: number): void {
    this.ms += ms
  }
}

/** A repeating timer the test fires by hand (src/upkeep.ts's `Repeat`): each fire is one run, awaited. */
export class ManualTimer {
  private run: (() => Promise<void>) | null = null
  intervalMs: number | null = null

  readonly repeat = (run: () => Promise<void>, ms: number): { stop(): void } => {
    this.run = run
    this.intervalMs = ms
    return {
      stop: () => {
        this.run = null
      },
    }
  }

  /** One interval's run, as the timer would make it; throws once the timer is stopped. */
  fire(): Promise<void> {
    if (!this.run) throw new Error('the timer is not running')
    return this.run()
  }
}

/** A runner whose jobs wait until the test says what they produce. */
export class ScriptedRunner implements GenerationRunner {
  readonly jobs = new Map<string, { history: HistoryMessage[]; handlers: JobHandlers }>()
  private waiters: (() => void)[] = []

  run(jobId: string, history: HistoryMessage[], handlers: JobHandlers): void {
    this.jobs.set(jobId, { history, handlers })
    for (const wake of this.waiters.splice(0)) wake()
  }
  cancel(jobId: string): void {
    const job = this.jobs.get(jobId)
    this.jobs.delete(jobId)
    job?.handlers.cancelled()
  }
  async close(): Promise<void> {}

  /** Waits until the job for this user message has started. */
  async started(jobId: string): Promise<JobHandlers> {
    while (!this.jobs.has(jobId)) await new Promise<void>((resolve) => this.waiters.push(resolve))
    const job = this.jobs.get(jobId)
    if (!job) throw new Error('unreachable')
    return job.handlers
  }
}

export interface Harness extends AsyncDisposable {
  /** Every repository of this app, on the run's backend (test/support/backend.ts). */
  store: Store
  /**
   * The SQLite database under `store`, for tests of SQLite's own machinery (query plans, FTS5). On PostgreSQL runs
   * any use of it throws: such a test reads or writes through `store` instead, or runs on SQLite only.
   */
  db: Db
  /** Drizzle and the tables of the run's database, for setting up or inspecting rows on either backend (backend.ts). */
  orm: Db
  tables: Tables
  /**
   * Where this app stages uploads while they are checked (UPLOADS_DIR): a fresh temporary folder unless the test
   * passed one. With the default blob store, the attachments' files are kept there too.
   */
  uploadsDir: string
  /** Where this app keeps attachments' files: a local store over `uploadsDir` unless the test passed another. */
  blobs: BlobStore
  app: ReturnType<typeof createApp>
  clock: Clock
  /** Creates a user (organization `org`, default `default`) and a token with the given scopes. */
  user(options?: { org?: string; role?: Role; scopes?: Scope[]; name?: string }): Promise<TestUser>
  call(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Reply>
}

export interface TestUser {
  id: number
  sub: string
  email: string
  token: string
}

export interface Reply {
  status: number
  headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any
}

const echoWorkers = new Map<number, GenerationRunner>()

/**
 * The echo responder in the real generation worker, shared by every harness of the test process that asks for the
 * same token delay: starting a worker costs half a second, and the echo responder keeps no state between jobs. Each
 * harness gets its own view, whose `close` cancels only that harness's unfinished jobs. Tests about the worker's
 * own life (crashes, exits) give the harness a runner of their own.
 */
function echoRunner(tokenDelayMs: number): GenerationRunner {
  let shared = echoWorkers.get(tokenDelayMs)
  if (!shared) {
    // The echo responder names attachments and reads none, so its store's folder is never looked at.
    const unread: BlobLocation = { kind: 'local', root: tmpdir() }
    shared = createWorkerRunner({ provider: 'echo', echoTokenDelayMs: tokenDelayMs }, unread, silentLogger)
    echoWorkers.set(tokenDelayMs, shared)
  }
  const worker = shared
  const unfinished = new Set<string>()
  return {
    run(jobId, history, handlers, model) {
      unfinished.add(jobId)
      const settled = () => unfinished.delete(jobId)
      worker.run(
        jobId,
        history,
        {
          token: (text) => handlers.token(text),
          block: (block) => handlers.block(block),
          summary: (text, replaces) => handlers.summary(text, replaces),
          done: () => settled() && handlers.done(),
          error: (message) => settled() && handlers.error(message),
          cancelled: () => settled() && handlers.cancelled(),
        },
        model,
      )
    },
    cancel: (jobId) => worker.cancel(jobId),
    async close() {
      for (const jobId of unfinished) worker.cancel(jobId)
      unfinished.clear()
    },
  }
}

/**
 * One pool of inspect processes for every test of the file that calls this at its top level, closed after the
 * file's last test: starting a process (bun, sharp, pdf-lib) costs more than most uploads' whole test. A harness's
 * dispose leaves the pool running. Tests about the processes themselves (their priority, crashes, limits) give the
 * harness an inspector of their own.
 *
 * Concurrent tests share the pool, but each process inspects one upload at a time, as a process of its own per
 * test did: checks of several images at once in one process are not reliable yet (a damaged animated WebP is
 * sometimes accepted), and tests of single uploads must not depend on which other tests happen to run beside them.
 */
export function sharedInspector(): FileInspector {
  const size = 2
  const inspector = createFileInspector(silentLogger, { size, idle: false })
  afterAll(() => inspector.close())
  let running = 0
  const waiting: (() => void)[] = []
  return {
    async inspect(upload, uploadsDir) {
      while (running >= size) await new Promise<void>((resolve) => waiting.push(resolve))
      running += 1
      try {
        return await inspector.inspect(upload, uploadsDir)
      } finally {
        running -= 1
        waiting.shift()?.()
      }
    },
    close: async () => {},
  }
}

let userCounter = 0

/** Every test user's password (`Browser.signIn`'s default). */
export const testPassword = 'correct horse battery'
let testPasswordHash: Promise<string> | undefined

/**
 * Adds a user the way `createUser` stores one, but with the password's argon2id hash computed once per test
 * process rather than once per user: each hash costs a tenth of a second and 64 MiB. Signing in still verifies
 * the password against a real hash. Tests of creating users call `createUser` itself.
 */
async function insertUser(
  store: Store,
  input: { email: string; name: string; organizationSlug: string; role: Role },
  now: number,
): Promise<{ id: number; sub: string }> {
  testPasswordHash ??= hashPassword(testPassword)
  const sub = Bun.randomUUIDv7()
  const created = await store.users.create(
    {
      sub,
      email: input.email,
      name: input.name,
      role: input.role,
      passwordHash: await testPasswordHash,
      mustChangePassword: false,
      organizationSlug: input.organizationSlug,
      mayCreateOrganization: true,
    },
    now,
  )
  if (typeof created !== 'object') throw new Error(`test user not created: ${created}`)
  return { id: created.id, sub }
}

/** Stands in for the SQLite handle on PostgreSQL runs: a test that reaches for it says so at once. */
function sqliteOnly(): Db {
  return new Proxy({} as Db, {
    get() {
      throw new Error('this test reads SQLite directly (h.db); on PostgreSQL it must use h.store or run on SQLite only')
    },
  })
}

export async function harness(
  options: {
    /**
     * The generation runner, or a function making one for this app's blob store (a real worker reads attachments
     * from it); by default the shared echo worker.
     */
    runner?: GenerationRunner | ((blobs: BlobLocation) => GenerationRunner)
    inspector?: FileInspector
    /** Where attachments' files are kept, such as a bucket (test/support/s3.ts); by default `uploadsDir` itself. */
    blobs?: BlobStore
    clock?: Clock
    echoDelayMs?: number
    config?: Partial<Config>
    log?: Logger
    uploadsDir?: string
    heartbeats?: Heartbeats
    /** Webhook delivery's retry schedule, resolver and polling (AppDeps.webhooks). */
    webhooks?: AppDeps['webhooks']
    /** AppDeps.feedPollMs: null for a test that steps the change feed itself, so its timer never reads between steps. */
    feedPollMs?: number | null
    /** AppDeps.validateResponses: tests check answers against their schemas unless told, as production does not. */
    validateResponses?: boolean
    /** AppDeps.toolCaller: what fetches MCP servers' tool lists and calls their tools (a fake, in most tests). */
    toolCaller?: AppDeps['toolCaller']
  } = {},
): Promise<Harness> {
  const database = await testDatabase()
  const { store } = database
  const uploadsDir = options.uploadsDir ?? mkdtempSync(join(tmpdir(), 'threadhouse-uploads-'))
  const blobs = options.blobs ?? (await testBucket()) ?? new LocalBlobStore(uploadsDir)
  const clock = options.clock ?? { now: () => Date.now() }
  const runner =
    typeof options.runner === 'function'
      ? options.runner(blobs.location)
      : (options.runner ?? echoRunner(options.echoDelayMs ?? 0))
  const inspector = options.inspector ?? createFileInspector(silentLogger, { idle: false })
  const app = createApp({
    store,
    config: {
      ...loadConfig({}),
      PUBLIC_URL: publicUrl,
      GENERATION_CONCURRENCY: 4,
      UPLOADS_DIR: uploadsDir,
      ...options.config,
    },
    runner,
    inspector,
    blobs,
    clock,
    log: options.log ?? silentLogger,
    heartbeats: options.heartbeats ?? new Heartbeats(50),
    webhooks: options.webhooks,
    feedPollMs: options.feedPollMs,
    validateResponses: options.validateResponses,
    toolCaller: options.toolCaller,
  })

  async function call(
    method: string,
    path: string,
    { token, body, headers = {} }: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const init: RequestInit = { method, headers: { ...headers } }
    const h = init.headers as Record<string, string>
    if (token) h.authorization = `Bearer ${token}`
    if (body instanceof FormData || body instanceof Blob) {
      init.body = body
    } else if (body !== undefined) {
      h['content-type'] ??= 'application/json'
      init.body = typeof body === 'string' ? body : JSON.stringify(body)
    }
    const response = await app.handle(new Request(`${publicUrl}${path}`, init))
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text === '' ? null : JSON.parse(text)
    } catch {}
    return { status: response.status, headers: response.headers, body: parsed }
  }

  return {
    store,
    db: database.sqlite ?? sqliteOnly(),
    orm: database.orm,
    tables: database.tables,
    uploadsDir,
    blobs,
    app,
    clock,
    call,
    async user({ org = 'default', role = 'member', scopes = ['threads:read', 'threads:write'] as Scope[], name } = {}) {
      userCounter += 1
      const email = `user${userCounter}@example.com`
      const created = await insertUser(
        store,
        { email, name: name ?? `User ${userCounter}`, organizationSlug: org, role },
        clock.now(),
      )
      const token = await createPersonalAccessToken(
        store.accessTokens,
        { user: await tokenHolder(store, created.id), name: 'test', scopes },
        clock.now(),
        testOrigin,
      )
      return { id: created.id, sub: created.sub, email, token }
    },
    async [Symbol.asyncDispose]() {
      await app.decorator.engine.close()
      await app.decorator.webhooks.stop()
      await inspector.close()
      await database[Symbol.asyncDispose]()
      if (options.uploadsDir === undefined) rmSync(uploadsDir, { recursive: true, force: true })
    },
  }
}

/** Serves the harness's app on a free loopback port until disposed: for a browser, or a body app.handle cannot send. */
export function listening(h: Harness): { url: URL; port: number } & AsyncDisposable {
  const server = h.app.listen({ port: 0, hostname: '127.0.0.1' }).server
  if (!server) throw new Error('the app is not listening')
  return {
    url: server.url,
    port: server.port ?? 0,
    async [Symbol.asyncDispose]() {
      await h.app.stop()
    },
  }
}

/** A client that sends its request and then never reads: see stalledClient. */
export interface StalledClient extends Disposable {
  /** Settles when the server ends the connection: `reset` when it did so with a reset (RST), as a cut-off does. */
  closed: Promise<{ reset: boolean }>
  /** Whether the connection is still open. */
  open(): boolean
}

/**
 * Sends a request (a GET, or a POST of `body`) over a raw TCP connection and never reads a byte of the answer, as a
 * client that stopped reading does: what the server sends piles up in the kernel's buffers, then in the server.
 */
export function stalledClient(
  port: number,
  path: string,
  headers: Record<string, string>,
  body?: string,
): StalledClient {
  const socket = connect(port, '127.0.0.1')
  socket.pause()
  const all = {
    host: `127.0.0.1:${port}`,
    ...headers,
    ...(body === undefined ? {} : { 'content-length': `${Buffer.byteLength(body)}` }),
  }
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}`)
  socket.write(`${body === undefined ? 'GET' : 'POST'} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body ?? ''}`)
  let open = true
  const closed = new Promise<{ reset: boolean }>((resolve) => {
    let reset = false
    socket.on('error', (error: NodeJS.ErrnoException) => {
      reset = error.code === 'ECONNRESET'
    })
    socket.on('close', () => {
      open = false
      resolve({ reset })
    })
  })
  return { closed, open: () => open, [Symbol.dispose]: () => socket.destroy() }
}

/** Opens a response stream through the app and parses it with a real SSE parser until it closes. */
export async function openStream(
  h: Harness,
  path: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; events: AsyncGenerator<EventSourceMessage> }> {
  const response = await h.app.handle(
    new Request(`${publicUrl}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } }),
  )
  return { status: response.status, headers: response.headers, events: parseEvents(response) }
}

/** Collects every event until the stream closes. */
export async function collect(events: AsyncGenerator<EventSourceMessage>): Promise<EventSourceMessage[]> {
  const all: EventSourceMessage[] = []
  for await (const event of events) all.push(event)
  return all
}

export function tokensOf(events: EventSourceMessage[]): string {
  return events
    .filter((event) => event.event === 'token')
    .map((event) => JSON.parse(event.data).token)
    .join('')
}

/**
 * Polls a condition, up to a deadline. Between checks it waits a millisecond rather than only yielding
 * (setImmediate): a loop of immediates keeps a whole core busy, which on a two-core machine starves the
 * server process or worker whose progress the test is waiting for.
 */
export async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    const value = await check()
    if (value) return value
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  throw new Error('condition not met in time')
}

export interface ServerProcess extends AsyncDisposable {
  url: string
  process: ReturnType<typeof Bun.spawn>
  /** Everything the process printed on standard output so far. */
  stdout(): string
  stderr(): string
}

export interface ServerOptions {
  /**
   * `run` (the default): the run's backend, as backendEnv gives it. `as given`: exactly the storage `env` names, the
   * SQLite file at DATABASE_PATH on any run, for tests of moving an installation from one backend to another.
   */
  backend?: 'run' | 'as given'
}

/**
 * Starts the real server (`bun src/index.ts`) on a free loopback port and waits until it listens; on PostgreSQL runs,
 * on a fresh database and bucket unless `env` names its own (test/support/backend.ts).
 */
export async function startServer(env: Record<string, string>, options: ServerOptions = {}): Promise<ServerProcess> {
  const storage = options.backend === 'as given' ? env : await backendEnv(env)
  const child = Bun.spawn(['bun', 'src/index.ts'], {
    cwd: `${import.meta.dir}/../..`,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...storage },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  let err = ''
  // Both pipes are drained for the process's whole life (a closed pipe would kill the server at its next
  // line); disposing waits for them, so assertions on the output see all of it.
  const drained = Promise.all([
    (async () => {
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) out += chunk
    })(),
    (async () => {
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) err += chunk
    })(),
  ])
  const stop = async (): Promise<void> => {
    child.kill('SIGKILL')
    await child.exited
    await drained
  }
  try {
    const port = await until(async () => {
      const match = err.match(/"msg":"listening","port":(\d+)/)
      if (match) return Number(match[1])
      if (child.exitCode !== null) throw new Error(`server exited before listening: ${err}`)
    })
    return {
      url: `http://127.0.0.1:${port}`,
      process: child,
      stdout: () => out,
      stderr: () => err,
      [Symbol.asyncDispose]: stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/**
 * Starts the real server on a free loopback port with PUBLIC_URL naming that port, for tests whose pages, cookies
 * and links must carry the address a browser or client really uses. The server needs PUBLIC_URL before it listens,
 * so the port is found first (listening on port 0 and closing again): should another process take it in between,
 * the server refuses to start, saying the port is in use, and another free port is tried.
 */
export async function startServerAtOwnUrl(
  env: Record<string, string>,
  options: ServerOptions = {},
): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const url = probe.url.origin
    await probe.stop(true)
    try {
      return await startServer({ ...env, PORT: new URL(url).port, PUBLIC_URL: url }, options)
    } catch (error) {
      if (attempt < 5 && String(error).includes('the port is already in use')) continue
      throw error
    }
  }
}

/**
 * The personal access token a first run prints as the last line of its first-run block. The first run comes right
 * after listening, but on a busy machine, with other servers starting beside this one, it may take as long.
 */
export function firstRunToken(server: ServerProcess): Promise<string> {
  return until(() => server.stdout().match(/^thp_\S+$/m)?.[0])
}

/** Runs a command from the repository root to its end: what it printed on each stream, and its exit code. */
export async function runToEnd(
  command: string[],
  env: Record<string, string | undefined>,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const child = Bun.spawn(command, {
    cwd: `${import.meta.dir}/../..`,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { stdout, stderr, code }
}
