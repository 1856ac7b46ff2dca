// The MCP client: one SDK Client per connected server per instance, opened when first needed and closed once idle,
// through which tools are listed and called. Every request goes through the guarded fetch (the outbound rule, no
// redirects, bounded time and body) and carries only the server's own configured headers, opened from the secret box:
// nothing of the person the answer is for, no Threadhouse token, ever reaches a server.
import { AsyncLocalStorage } from 'node:async_hooks'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from '../shared/log'
import { OutboundRefused } from '../shared/outbound/addresses'
import { guardedFetch, type OutboundRules } from '../shared/outbound/guarded-fetch'
import type { SecretBox } from '../shared/secret-box'
import { type StoredTokens, storedOAuthProvider } from './oauth-provider'
import type { CallOutcome, RefreshOutcome, ToolCaller } from './ports'
import { type McpServerRepository, type McpServerRow, sealedFor } from './repository'
import { resultText } from './result'
import { discoverTools, type OutputValidator } from './tool-list'

export interface McpConnectionsDeps {
  servers: McpServerRepository
  box: SecretBox
  /** MCP_TIMEOUT_MS (`timeoutMs`, per request, a tool call included), MCP_RESPONSE_MAX_BYTES and the private switch. */
  outbound: Omit<OutboundRules, 'userAgent'>
  /** TOOLS_RESULT_MAX_CHARS. */
  resultMaxChars: number
  log: Logger
  /** How long an unused client stays open; 5 minutes unless a test says otherwise. */
  idleMs?: number
  now?: () => number
}

export interface McpConnections extends ToolCaller {
  /** Closes the clients unused for `idleMs` by `now` (a timer does this every minute). */
  closeIdle(now: number): Promise<void>
  /** How many clients are open or opening. */
  readonly size: number
  /** Closes every client, ending their sessions: for shutdown. */
  close(): Promise<void>
}

/** What requests to MCP servers and their authorization servers say they come from. */
export const mcpUserAgent = 'Threadhouse-MCP/1'
const defaultIdleMs = 5 * 60_000

interface Connection {
  client: Client
  transport: StreamableHTTPClientTransport
  /** Validators of the tools' output schemas, from the last tool list this client read. */
  outputs: Map<string, OutputValidator>
  busy: number
  lastUsed: number
}

interface Entry {
  /** What the client was opened with: a server whose URL or headers changed needs another. */
  key: string
  ready: Promise<Connection>
  connection?: Connection
}

/**
 * The work (a call, a tool list, opening a client) a request is made for. The SDK reads an answer's SSE stream apart
 * from the request that awaits it and only reports the stream's failure to `onerror`, so a body cut by the size bound
 * would otherwise leave the work waiting for its timeout; requests made inside a scope tell it instead, and end when
 * it is given up.
 */
interface Scope {
  signal: AbortSignal
  fail(error: unknown): void
  /** Whether the work ended: requests still made in its context (the SDK's GET stream, reopened) are no longer its. */
  ended: boolean
}

const scope = new AsyncLocalStorage<Scope>()

/**
 * `work` in a scope of its own, handed a signal that ends it once `signal` aborts or one of its requests fails; it
 * then rejects with that request's error (such as OutboundRefused) rather than the SDK's cancellation. The signal is
 * only aborted while the work runs: the SDK never removes its listener from it, and would send a cancellation for a
 * request long answered.
 */
async function scoped<T>(signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController()
  let failure = null as { error: unknown } | null
  const current: Scope = {
    signal: controller.signal,
    ended: false,
    fail(error) {
      if (current.ended || controller.signal.aborted) return
      failure = { error }
      controller.abort(error)
    },
  }
  const forward = () => {
    if (!current.ended) controller.abort(signal?.reason)
  }
  if (signal?.aborted) forward()
  else signal?.addEventListener('abort', forward, { once: true })
  try {
    return await scope.run(current, () => work(controller.signal))
  } catch (error) {
    throw failure ? failure.error : error
  } finally {
    current.ended = true
    signal?.removeEventListener('abort', forward)
  }
}

export function createMcpConnections(deps: McpConnectionsDeps): McpConnections {
  const now = deps.now ?? Date.now
  const idleMs = deps.idleMs ?? defaultIdleMs
  const timeoutMs = deps.outbound.timeoutMs
  const fetcher = reporting(guardedFetch({ ...deps.outbound, userAgent: mcpUserAgent }))
  const entries = new Map<string, Entry>()
  /** Token refreshes under way, by server: the calls that find a token expired at once wait for one refresh. */
  const refreshing = new Map<string, Promise<StoredTokens>>()
  const sweeper = setInterval(() => void closeIdle(now()), Math.min(idleMs, 60_000))
  sweeper.unref?.()

  const keyOf = (server: McpServerRow) => JSON.stringify([server.url, server.auth, server.headersSealed])

  /** The server's static headers, opened; none unless it authenticates with them. */
  const headersOf = (server: McpServerRow): Record<string, string> => {
    if (server.auth !== 'headers' || server.headersSealed === null) return {}
    return JSON.parse(deps.box.open(server.headersSealed, sealedFor.headers(server.id))) as Record<string, string>
  }

  const open = async (server: McpServerRow, entry: Entry): Promise<Connection> => {
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: fetcher,
      requestInit: { headers: headersOf(server) },
      // Each request reads the stored tokens (another instance may have refreshed them) and refreshes an expired one.
      authProvider:
        server.auth === 'oauth'
          ? storedOAuthProvider(
              server,
              { servers: deps.servers, box: deps.box, fetch: fetcher, now, refreshing },
              { kind: 'background' },
            )
          : undefined,
    })
    const client = new Client(
      { name: 'Threadhouse', version: '1' },
      {
        listChanged: {
          tools: {
            // Read here, paged and checked like any list, rather than by the SDK's single unchecked page.
            autoRefresh: false,
            onChanged: () => void listChanged(server.id, entry),
          },
        },
      },
    )
    // The SDK reports here what no request awaits (a dropped GET stream it reopens itself): not a call's failure.
    client.onerror = (error) => deps.log.debug('MCP client error', { serverId: server.id, error: String(error) })
    client.onclose = () => {
      if (entries.get(server.id) === entry) entries.delete(server.id)
    }
    try {
      // Results are checked against the tools' output schemas, which only a tool list gives.
      const list = await scoped(undefined, async (signal) => {
        await client.connect(transport, { timeout: timeoutMs, signal })
        return discoverTools(client, { timeout: timeoutMs, signal })
      })
      const connection = { client, transport, outputs: list.outputs, busy: 0, lastUsed: now() }
      entry.connection = connection
      return connection
    } catch (error) {
      await client.close().catch(() => {})
      throw error
    }
  }

  const listChanged = async (serverId: string, entry: Entry): Promise<void> => {
    const connection = entry.connection
    if (!connection || entries.get(serverId) !== entry) return
    try {
      const list = await scoped(undefined, (signal) => discoverTools(connection.client, { timeout: timeoutMs, signal }))
      connection.outputs = list.outputs
      // Tools that appear after the first fetch start off: nothing reaches a model before an admin turns it on.
      await deps.servers.replaceTools(serverId, list.tools, false, now())
    } catch (error) {
      deps.log.warn('MCP tool list not refreshed after list_changed', { serverId, error: String(error) })
    }
  }

  const connect = (server: McpServerRow): Promise<Connection> => {
    const key = keyOf(server)
    const known = entries.get(server.id)
    if (known && known.key === key) return known.ready
    if (known) drop(server.id, known)
    const entry = { key } as Entry
    entry.ready = open(server, entry)
    entries.set(server.id, entry)
    entry.ready.catch(() => {
      if (entries.get(server.id) === entry) entries.delete(server.id)
    })
    return entry.ready
  }

  const drop = (serverId: string, entry: Entry): Promise<void> => {
    if (entries.get(serverId) === entry) entries.delete(serverId)
    return entry.ready.then(
      async ({ client, transport }) => {
        // Ending the session spares the server keeping it; a server that already forgot it answers 404, ignored.
        await transport.terminateSession().catch(() => {})
        await client.close().catch(() => {})
      },
      () => {},
    )
  }

  /**
   * `work` on the server's client. A session the server no longer knows (404) is dropped, so that the next request
   * opens another; with `again` the work is then done once more on it. A tool call never is: it is sent at most once.
   */
  const withClient = async <T>(
    server: McpServerRow,
    again: boolean,
    work: (connection: Connection) => Promise<T>,
  ): Promise<T> => {
    let reached = false
    const attempt = async (): Promise<T> => {
      const connection = await connect(server)
      reached = true
      connection.busy++
      try {
        return await work(connection)
      } finally {
        connection.busy--
        connection.lastUsed = now()
      }
    }
    try {
      return await attempt()
    } catch (error) {
      // A 404 before any session (to initialize) is a wrong URL, not a forgotten session.
      if (!(reached && error instanceof StreamableHTTPError && error.code === 404)) throw error
      const stale = entries.get(server.id)
      if (stale) await drop(server.id, stale)
      if (!again) throw error
      return attempt()
    }
  }

  async function closeIdle(at: number): Promise<void> {
    const idle = [...entries].filter(
      ([, entry]) => entry.connection && entry.connection.busy === 0 && at - entry.connection.lastUsed >= idleMs,
    )
    await Promise.all(idle.map(([serverId, entry]) => drop(serverId, entry)))
  }

  return {
    async call(server, tool, args, signal) {
      try {
        return await withClient(server, false, async (connection) => {
          const result = await scoped(signal, (bound) =>
            connection.client.callTool({ name: tool, arguments: args }, undefined, {
              timeout: timeoutMs,
              signal: bound,
            }),
          )
          const output = connection.outputs.get(tool)
          if (output && result.isError !== true) {
            const checked = result.structuredContent === undefined ? null : output(result.structuredContent)
            if (!checked?.valid) {
              const why = checked?.errorMessage ?? 'no structured content was given'
              return failure(`the result does not match the tool's output schema: ${why}`)
            }
          }
          return resultText(result as CallToolResult, deps.resultMaxChars)
        })
      } catch (error) {
        // The SDK checks the signal before it sends, but nothing tells afterwards whether the request went out.
        if (signal.aborted) return cancelledWhileRunning()
        return outcomeOf(error, timeoutMs)
      }
    },

    async refresh(server) {
      try {
        const tools = await withClient(server, true, async (connection) => {
          const list = await scoped(undefined, (signal) =>
            discoverTools(connection.client, { timeout: timeoutMs, signal }),
          )
          connection.outputs = list.outputs
          // The first fetch turns every tool on; later ones leave new tools off, as list_changed does.
          await deps.servers.replaceTools(server.id, list.tools, server.toolsRefreshedAt === null, now())
          return list.tools.length
        })
        await deps.servers.update(server.organizationId, server.id, {
          status: 'ok',
          lastError: null,
          updatedAt: now(),
        })
        return { status: 'ok', tools, error: null } satisfies RefreshOutcome
      } catch (error) {
        const reason = reasonOf(error, timeoutMs)
        // A server whose authorization ran out waits for an admin to authorize it again, not for a repair.
        const status = error instanceof UnauthorizedError ? 'needs_authorization' : 'error'
        await deps.servers.update(server.organizationId, server.id, {
          status,
          lastError: reason,
          updatedAt: now(),
        })
        return { status, tools: 0, error: reason } satisfies RefreshOutcome
      }
    },

    forget(serverId) {
      const entry = entries.get(serverId)
      if (entry) void drop(serverId, entry)
    },

    closeIdle,

    get size() {
      return entries.size
    },

    async close() {
      clearInterval(sweeper)
      await Promise.all([...entries].map(([serverId, entry]) => drop(serverId, entry)))
    },
  }
}

/**
 * `fetch`, with each request made inside a Scope ended when the scope's work is given up and reporting its failure,
 * the body's included, to it. A request made once the work was given up (its cancellation notice) is left alone.
 */
function reporting(fetch: ReturnType<typeof guardedFetch>): ReturnType<typeof guardedFetch> {
  return async (url, init = {}) => {
    const work = scope.getStore()
    if (!work || work.ended || work.signal.aborted) return fetch(url, init)
    const signal = init.signal ? AbortSignal.any([init.signal, work.signal]) : work.signal
    let response: Response
    try {
      response = await fetch(url, { ...init, signal })
    } catch (error) {
      work.fail(error)
      throw error
    }
    if (response.body === null) return response
    const reader = response.body.getReader()
    // The SDK cancels an SSE body once it has its answer, which may be while a read is pending: the stream is closed
    // then, and closing it again throws (Threadhouse's own /mcp answers that way).
    let cancelled = false
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch (error) {
          if (cancelled) return
          work.fail(error)
          controller.error(error)
          return
        }
        if (cancelled) return
        if (chunk.done) controller.close()
        else controller.enqueue(chunk.value)
      },
      cancel: (reason) => {
        cancelled = true
        return reader.cancel(reason)
      },
    })
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
}

function failure(reason: string): CallOutcome {
  const text = `The tool call failed: ${reason}`
  return { status: 'error', text, chars: text.length, error: reason }
}

function cancelledWhileRunning(): CallOutcome {
  const reason = 'cancelled while running; whether it took effect is unknown'
  const text = `The call was ${reason}.`
  return { status: 'unknown', text, chars: text.length, error: reason }
}

function outcomeOf(error: unknown, timeoutMs: number): CallOutcome {
  if (isTimeout(error)) {
    const reason = `no answer within ${timeoutMs} ms`
    const text = `The tool did not answer in time: ${reason}`
    return { status: 'timeout', text, chars: text.length, error: reason }
  }
  return failure(reasonOf(error, timeoutMs))
}

function isTimeout(error: unknown): boolean {
  return (
    (error instanceof McpError && error.code === ErrorCode.RequestTimeout) ||
    (error instanceof Error && error.name === 'TimeoutError')
  )
}

/** A short reason, fit for the server's `lastError` and a call's `error`. */
function reasonOf(error: unknown, timeoutMs: number): string {
  if (isTimeout(error)) return `no answer within ${timeoutMs} ms`
  if (error instanceof OutboundRefused) return error.message
  if (error instanceof StreamableHTTPError) return short(`HTTP ${error.code ?? '?'}: ${error.message}`)
  return short(error instanceof Error ? error.message : String(error))
}

/** A server's own words, such as an error page's body, kept to one short line. */
function short(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 300 ? `${line.slice(0, 299)}…` : line
}
