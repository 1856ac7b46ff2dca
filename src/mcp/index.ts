// The MCP server at PUBLIC_URL/mcp: the Streamable HTTP transport, stateless, behind the same bearer tokens,
// audience rules (RFC 8707) and rate limits as the API, and its protected resource metadata (RFC 9728), which
// every 401 names so that MCP clients find the authorization server on their own. HTTP in, HTTP out: the tools
// live in tools.ts and what they do in service.ts.
//
// Stateless: every POST gets a fresh server and transport, so any instance can serve any request, and nothing
// is kept between requests. Without sessions there is no stream to offer on GET and none to end on DELETE: both
// answer 405, as the transport specification allows.
import { Elysia } from 'elysia'
import { authenticateBearer } from '../auth'
import type { Caller } from '../auth/model'
import { protectedResourceMetadata } from '../oauth/metadata'
import { OAuthModel } from '../oauth/model'
import { maxJsonBodyBytes, mediaTypeOf, readJson } from '../shared/body'
import { AppError } from '../shared/errors'
import { requestIdOf } from '../shared/http'
import { urlHoldsNul } from '../shared/nul'
import { boundedBody } from '../shared/streams/direct-body'
import { maxMcpBodyBytes, maxMcpMessageValues } from './model'
import type { McpDeps } from './service'

/**
 * The MCP SDK and its JSON Schema validator, loaded by the first MCP request: they are about a third of the CPU a
 * server spends starting, which every process that never serves /mcp (the CLI, most servers) would pay for nothing.
 */
let runtime: Promise<
  [typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), typeof import('./tools')]
>
const loadRuntime = () => {
  runtime ??= Promise.all([import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), import('./tools')])
  return runtime
}

/**
 * Bearer tokens, never cookies, so any origin may call: browser-based MCP clients need to read the challenge and
 * the protocol headers.
 */
const cors = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version, Retry-After, X-Request-Id',
} as const

const preflightHeaders = {
  ...cors,
  'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
  'access-control-allow-headers':
    'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID',
  'access-control-max-age': '86400',
} as const

function preflight(): Response {
  return new Response(null, { status: 204, headers: preflightHeaders })
}

function withCors(response: Response): Response {
  for (const [name, value] of Object.entries(cors)) response.headers.set(name, value)
  return response
}

/** A refusal before any JSON-RPC is read (401, 429): the API's `{ error, message }` and its headers. */
function refused(error: AppError): Response {
  const body = { error: error.code, message: error.message, ...error.extra }
  return Response.json(body, { status: error.status, headers: { ...error.headers, ...cors } })
}

/** A JSON-RPC error that answers no particular request (`id: null`), as the transport writes its own. */
function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  const body = { jsonrpc: '2.0', error: { code, message }, id: null }
  return Response.json(body, { status, headers: { ...headers, ...cors } })
}

/**
 * The transport's own refusals of a POST by its headers (406 without both media types in Accept, 415 for a body
 * that is not JSON), in its words, or null when it would take the request.
 */
function unreadable(request: Request): Response | null {
  const accept = request.headers.get('accept') ?? ''
  // A list, so a substring test, as the transport does.
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    const message = 'Not Acceptable: Client must accept both application/json and text/event-stream'
    return jsonRpcError(406, -32000, message)
  }
  if (mediaTypeOf(request) !== 'application/json') {
    return jsonRpcError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json')
  }
  return null
}

const parseErrors = {
  depth: 'Parse error: the body is nested too deep',
  width: `Parse error: the body holds more than ${maxMcpMessageValues} values (array elements and object members)`,
  syntax: 'Parse error',
} as const

/** The length of the file an upload_attachment call carries in base64, or 0 for any other message. */
function fileLength(message: unknown): number {
  const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown; arguments?: unknown } }
  if (method !== 'tools/call' || params?.name !== 'upload_attachment') return 0
  const file = (params.arguments as { content_base64?: unknown } | undefined)?.content_base64
  return typeof file === 'string' ? file.length : 0
}

/**
 * Runs `close` once the response body has been sent to its end or abandoned, or at once when there is none. A body
 * (progress notifications, then the result) is bounded as every SSE stream is: a client that stops reading is cut
 * off once STREAM_BACKLOG_BYTES wait for it.
 */
function closingAfter(response: Response, backlogBytes: number, close: () => void): Response {
  if (!response.body) {
    close()
    return response
  }
  const body = boundedBody(response.body, backlogBytes, close)
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}

export const mcpRoutes = (deps: McpDeps) => {
  async function answer(request: Request): Promise<Response> {
    let caller: Caller
    try {
      caller = await authenticateBearer(deps, request, '/mcp')
    } catch (error) {
      if (error instanceof AppError) return refused(error)
      throw error
    }
    // No query or path reaches a query here, but the rule is the API's: no text holds U+0000 (src/shared/nul.ts).
    if (urlHoldsNul(request.url)) return jsonRpcError(400, -32600, 'Invalid Request: text may not contain U+0000')
    if (request.method !== 'POST') {
      const message = 'Method not allowed: this stateless server takes JSON-RPC in POST requests only'
      return jsonRpcError(405, -32000, message, { allow: 'POST' })
    }
    // What the transport would refuse anyway, refused before up to 4 MiB of body are read for nothing.
    const refusal = unreadable(request)
    if (refusal) return refusal
    // Read here rather than by the transport, so that a body nested or spread past any JSON-RPC message is never
    // parsed: what the SDK does with a message costs in proportion to the values it holds.
    let read: Awaited<ReturnType<typeof readJson>>
    try {
      read = await readJson(request, { bytes: maxMcpBodyBytes, elements: maxMcpMessageValues })
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      // 413 past the bound, 400 for a body that broke off: in JSON-RPC, like every other answer of /mcp.
      if (error.status === 413) return jsonRpcError(413, -32600, `Invalid Request: ${error.message}`)
      return jsonRpcError(error.status, -32700, `Parse error: ${error.message}`)
    }
    if ('problem' in read) return jsonRpcError(400, -32700, parseErrors[read.problem])
    // PostgreSQL's text cannot hold it, so no backend takes it (as on the API).
    if (read.holdsNul) return jsonRpcError(400, -32600, 'Invalid Request: text may not contain U+0000')
    // Protocol 2025-06-18 and later have no batches; the SDK would take up to 100 messages in one POST, each a
    // tool call, past the per-token rate limit that counts requests.
    if (Array.isArray(read.value)) {
      return jsonRpcError(400, -32600, 'Invalid Request: batches are not supported')
    }
    // Megabytes only where a tool needs them, for a file in base64: everything else is held to the API's bound.
    if (read.bytes.byteLength - fileLength(read.value) > maxJsonBodyBytes) {
      const message = `Invalid Request: a message may hold at most ${maxJsonBodyBytes} bytes besides the file of an upload_attachment call`
      return jsonRpcError(413, -32600, message)
    }
    const [{ WebStandardStreamableHTTPServerTransport }, { serverFor, invalidParams }] = await loadRuntime()
    const server = serverFor(deps, caller)
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
    })
    let closed = false
    // Closing the server aborts the tools still running for this request: a client that went away stops its wait.
    const close = (): void => {
      if (closed) return
      closed = true
      server.close().catch(() => {})
    }
    request.signal.addEventListener('abort', close, { once: true })
    try {
      await server.connect(transport)
      // Params a method does not take are answered -32602 here, before the SDK's handler would call them internal.
      const deliver = transport.onmessage
      transport.onmessage = (message, extra) => {
        const invalid = invalidParams(message)
        if (invalid) transport.send(invalid).catch(close)
        else deliver?.(message, extra)
      }
      const response = await transport.handleRequest(request, { parsedBody: read.value })
      return withCors(closingAfter(response, deps.streams.backlogBytes, close))
    } catch (error) {
      close()
      deps.log.error('MCP request failed', { requestId: requestIdOf(request), error: String(error) })
      return jsonRpcError(500, -32603, 'Internal error')
    }
  }

  return new Elysia({ name: 'mcp' })
    .get(
      '/.well-known/oauth-protected-resource/mcp',
      () => Response.json(protectedResourceMetadata(deps.publicUrl, '/mcp'), { headers: cors }),
      {
        detail: {
          operationId: 'getMcpResourceMetadata',
          summary: 'Protected resource metadata for the MCP server (RFC 9728)',
          tags: ['OAuth'],
          security: [],
          description:
            'Named by `resource_metadata` in every 401 of `/mcp`. Tokens asked for with `resource` = ' +
            '`PUBLIC_URL/mcp` (RFC 8707) are accepted there and not by the API.',
          responses: {
            200: {
              description: 'Metadata',
              content: { 'application/json': { schema: OAuthModel.protectedResourceMetadata } },
            },
          },
        },
      },
    )
    .options('/.well-known/oauth-protected-resource/mcp', preflight, { detail: { hide: true } })
    .post('/mcp', ({ request }) => answer(request), { parse: 'none', detail: { hide: true } })
    .get('/mcp', ({ request }) => answer(request), { detail: { hide: true } })
    .delete('/mcp', ({ request }) => answer(request), { parse: 'none', detail: { hide: true } })
    .options('/mcp', preflight, { detail: { hide: true } })
}
