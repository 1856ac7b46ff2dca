// A real Threadhouse listening on loopback for the MCP tests, a generation runner the tests drive by hand, and the
// MCP SDK's own client connected to /mcp with a bearer token.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type App, createApp } from '../../src/app'
import { createFileInspector } from '../../src/attachments/inspector'
import type { Scope } from '../../src/auth/model'
import { createPersonalAccessToken } from '../../src/auth/personal-access-tokens'
import { createUser } from '../../src/auth/users'
import { type Config, loadConfig } from '../../src/config'
import { type Db, migrateDatabase, openDatabase } from '../../src/db/client'
import type { GenerationRunner, HistoryMessage, JobHandlers, JobModel } from '../../src/generation/types'
import type { Catalogue } from '../../src/models/catalogue'
import { silentLogger } from '../../src/shared/log'
import { sqliteStore } from '../../src/store'
import { testOrigin, tokenHolder } from './audit'
import { Browser, password } from './oauth-helpers'

export interface Job {
  messageId: string
  history: HistoryMessage[]
  handlers: JobHandlers
  /** The model the engine resolved for it (src/models/), when the app has a catalogue. */
  model?: string
}

/** A runner whose answers the test writes: each job waits in line until the test takes it with `next()`. */
export class HandRunner implements GenerationRunner {
  private readonly waiting: Job[] = []
  private readonly takers: ((job: Job) => void)[] = []

  run(messageId: string, history: HistoryMessage[], handlers: JobHandlers, model?: JobModel): void {
    const job = { messageId, history, handlers, model: model?.model }
    const taker = this.takers.shift()
    if (taker) taker(job)
    else this.waiting.push(job)
  }
  cancel(messageId: string): void {
    const index = this.waiting.findIndex((job) => job.messageId === messageId)
    const [job] = index >= 0 ? this.waiting.splice(index, 1) : []
    job?.handlers.cancelled()
  }
  async close(): Promise<void> {}

  /** The next job the engine starts, once it has. */
  next(): Promise<Job> {
    const job = this.waiting.shift()
    if (job) return Promise.resolve(job)
    return new Promise((resolve) => this.takers.push(resolve))
  }
}

export interface McpTestServer extends AsyncDisposable {
  origin: string
  db: Db
  app: App
  runner: HandRunner
  /** A member of `org` (default `acme`) with a personal access token holding `scopes`. */
  member(options?: { org?: string; scopes?: Scope[] }): Promise<{ id: number; email: string; token: string }>
  /** A browser signed in as that member, through the real login page. */
  browserOf(email: string): Promise<Browser>
}

let members = 0

/**
 * A real listening server on 127.0.0.1 with the real file inspector. The issuer must equal the origin clients
 * fetch from, and the port is known only once the socket listens, so the app is built right after, with that
 * origin as PUBLIC_URL.
 */
export async function startServer(
  options: { config?: Partial<Config>; models?: Catalogue } = {},
): Promise<McpTestServer> {
  const db = openDatabase(':memory:')
  migrateDatabase(db)
  const uploadsDir = mkdtempSync(join(tmpdir(), 'threadhouse-mcp-'))
  const inspector = createFileInspector(silentLogger, { idle: false })
  const runner = new HandRunner()
  let app: App | undefined
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => (app ? app.handle(request) : new Response('starting', { status: 503 })),
  })
  const origin = `http://127.0.0.1:${server.port}`
  app = createApp({
    store: sqliteStore(db),
    config: {
      ...loadConfig({}),
      PUBLIC_URL: origin,
      GENERATION_CONCURRENCY: 4,
      UPLOADS_DIR: uploadsDir,
      ...options.config,
    },
    runner,
    models: options.models,
    inspector,
    clock: { now: () => Date.now() },
    log: silentLogger,
  })
  const running = app
  return {
    origin,
    db,
    app: running,
    runner,
    async member({ org = 'acme', scopes = ['threads:read', 'threads:write'] as Scope[] } = {}) {
      members += 1
      const email = `mcp${members}@example.com`
      const now = Date.now()
      const store = sqliteStore(db)
      const user = await createUser(
        store.users,
        { email, password, organizationSlug: org, role: 'member' },
        now,
        testOrigin,
      )
      const token = await createPersonalAccessToken(
        store.accessTokens,
        { user: await tokenHolder(store, user.id), name: 'mcp test', scopes },
        now,
        testOrigin,
      )
      return { id: user.id, email, token }
    },
    async browserOf(email) {
      const browser = Browser.overHttp(origin)
      const signedIn = await browser.signIn(email)
      if (signedIn.status !== 303) throw new Error(`sign-in failed with ${signedIn.status}`)
      return browser
    },
    async [Symbol.asyncDispose]() {
      await server.stop(true)
      await running.decorator.engine.close()
      await inspector.close()
      db.$client.close()
      rmSync(uploadsDir, { recursive: true, force: true })
    },
  }
}

/** The MCP SDK's client, connected to the server's /mcp with a bearer token; closed when disposed. */
export async function connect(origin: string, token: string): Promise<Client & AsyncDisposable> {
  const client = new Client({ name: 'threadhouse-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  })
  await client.connect(transport)
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() })
}

/** Posts one raw JSON-RPC body to /mcp, as a client would, for what the SDK's client never sends. */
export function postMcp(origin: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  })
}
