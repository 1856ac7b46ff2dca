// A remote MCP server for the connector tests: the SDK's own server over Streamable HTTP (stateful sessions, SSE
// answers), behind Bun.serve on 127.0.0.1. It is the low-level SDK `Server` with hand-written tools/list and
// tools/call handlers, because the misbehaviours the tests need (an input schema of type 'string', structured content
// breaking the tool's own output schema) are what McpServer's checks exist to prevent. Every request's headers are
// recorded, so that tests see what Threadhouse sent.
import { randomUUID } from 'node:crypto'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'

/**
 * How `search_docs` and `delete_page` answer: `hang` never (until cancelled), `fail` with `isError`, `throw` with a
 * JSON-RPC error, `huge` with 10 MB of text (and a tool list as large), `lie` with structured content its output schema forbids (and the list
 * then also holds `odd_args`, whose input schema is of type 'string').
 */
export type UpstreamMode = 'normal' | 'hang' | 'fail' | 'throw' | 'huge' | 'lie'

export interface UpstreamRequest {
  method: string
  path: string
  headers: Record<string, string>
  /** The JSON-RPC method a POST carried (`response` for a client's answer), null for other requests. */
  rpc: string | null
}

export interface McpUpstream extends AsyncDisposable {
  /** The MCP endpoint; `/moved` on the same origin redirects (307) to it. */
  url: string
  port: number
  mode: UpstreamMode
  /** Every HTTP request, in order of arrival. */
  requests: UpstreamRequest[]
  /** How many times `delete_page` ran. */
  deletes: number
  /** Calls cancelled by the client (`notifications/cancelled` or the request's stream closed). */
  cancelled: number
  /** Tools listed after the first ones; each addition is announced to every open session (`list_changed`). */
  addTool(tool: Partial<Tool> & { name: string }): Promise<void>
  /** Forgets every session, as a restarted server would: their next request is answered 404. */
  forgetSessions(): Promise<void>
}

const baseTools: Tool[] = [
  {
    name: 'search_docs',
    description: 'Searches the documentation',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'delete_page',
    description: 'Deletes a page',
    inputSchema: { type: 'object', properties: { page: { type: 'string' } }, required: ['page'] },
    annotations: { readOnlyHint: false, destructiveHint: true },
  },
]

export function mcpUpstream(): McpUpstream {
  const sessions = new Map<string, { server: Server; transport: WebStandardStreamableHTTPServerTransport }>()
  const added: Tool[] = []

  const listed = (): Tool[] => {
    if (up.mode === 'huge') return [{ ...(baseTools[0] as Tool), description: 'x'.repeat(10_000_000) }]
    if (up.mode !== 'lie') return [...baseTools, ...added]
    const [search, ...rest] = baseTools as [Tool, ...Tool[]]
    const lying: Tool = {
      ...search,
      outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
    }
    // Written as a server could send it: the SDK's Tool type insists on `type: 'object'`.
    const oddArgs = { name: 'odd_args', description: 'Takes a bare string', inputSchema: { type: 'string' } }
    return [lying, ...rest, oddArgs as unknown as Tool, ...added]
  }

  const answer = async (name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> => {
    if (name === 'delete_page') up.deletes++
    switch (up.mode) {
      case 'hang':
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
        up.cancelled++
        return { content: [{ type: 'text', text: 'too late' }] }
      case 'fail':
        return {
          content: [{ type: 'text', text: `No page matches ${JSON.stringify(args)}\nsecond line` }],
          isError: true,
        }
      case 'throw':
        throw new McpError(ErrorCode.InternalError, 'the index is down')
      case 'huge':
        return { content: [{ type: 'text', text: 'x'.repeat(10_000_000) }] }
      case 'lie':
        return { content: [], structuredContent: { count: 'many' } }
      default:
        if (name === 'search_docs')
          return { content: [{ type: 'text', text: `Found 2 pages for ${String(args.query)}` }] }
        if (name === 'delete_page') return { content: [{ type: 'text', text: `Deleted ${String(args.page)}` }] }
        if (added.some((tool) => tool.name === name)) return { content: [{ type: 'text', text: `${name} ran` }] }
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${name}`)
    }
  }

  const session = async (): Promise<WebStandardStreamableHTTPServerTransport> => {
    const server = new Server(
      { name: 'upstream', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    )
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed() }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      answer(request.params.name, request.params.arguments ?? {}, extra.signal),
    )
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport })
      },
    })
    await server.connect(transport)
    return transport
  }

  const http = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // Ten megabytes of SSE to a client that stops reading must not be cut by Bun's idle timeout first.
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      const rpc =
        request.method === 'POST'
          ? await request
              .clone()
              .json()
              .then((message) => (message as { method?: string }).method ?? 'response')
              .catch(() => 'unreadable')
          : null
      up.requests.push({ method: request.method, path, headers: Object.fromEntries(request.headers), rpc })
      // A same-origin redirect, which the SDK's transport would follow by itself.
      if (path === '/moved') return new Response(null, { status: 307, headers: { location: '/mcp' } })
      const id = request.headers.get('mcp-session-id')
      if (id === null) {
        if (request.method !== 'POST') return new Response('A session is needed', { status: 400 })
        return (await session()).handleRequest(request)
      }
      const known = sessions.get(id)
      if (!known)
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
          { status: 404 },
        )
      return known.transport.handleRequest(request)
    },
  })

  const closeSessions = async () => {
    const open = [...sessions.values()]
    sessions.clear()
    await Promise.all(open.map(({ server }) => server.close().catch(() => {})))
  }

  const up: McpUpstream = {
    url: `http://127.0.0.1:${http.port}/mcp`,
    port: http.port ?? 0,
    mode: 'normal',
    requests: [],
    deletes: 0,
    cancelled: 0,
    async addTool(tool) {
      added.push({ description: `${tool.name} does a new thing`, inputSchema: { type: 'object' }, ...tool })
      await Promise.all([...sessions.values()].map(({ server }) => server.sendToolListChanged().catch(() => {})))
    },
    forgetSessions: closeSessions,
    async [Symbol.asyncDispose]() {
      await closeSessions()
      await http.stop(true)
    },
  }
  return up
}
