// Cross-cutting HTTP concerns: request IDs, JSON access logs, security headers, the client's IP and
// the per-IP rate limit.
//
// Every request counts once against a rate limit. An API request that brings a token (in Authorization)
// counts against the token once the auth macro knows it is valid: a team behind one NAT or proxy
// would otherwise share one address's allowance, and reading the peer address is a system call per request.
// Every other request, and an API request whose token is missing or refused, counts against the client's address.
// A request other than GET or HEAD from an address over its limit is refused before its body is read, whatever its
// token.
import { cors } from '@elysiajs/cors'
import { Elysia } from 'elysia'
import type { Config } from '../config'
import { maxJsonBodyBytes, mediaTypeOf, payloadTooLarge } from './body'
import { AppError } from './errors'
import type { Logger } from './log'
import { nulRefusal, urlHoldsNul } from './nul'
import { type RateLimiter, rateLimited } from './rate-limit'

/** Told of every response, once it is sent: its method, route pattern (null for an unknown path), status and time. */
export type RequestObserver = (method: string, route: string | null, status: number, ms: number) => void

export interface HttpDeps {
  log: Logger
  config: Pick<Config, 'PUBLIC_URL' | 'TRUST_PROXY' | 'CORS_ORIGINS'>
  ipLimiter?: RateLimiter
  /** The operators' metrics (src/metrics/), when they are on. */
  observe?: RequestObserver
}

type RequestIpServer = { requestIP(request: Request): { address: string } | null }

/** One per app: what resolving a client address and counting it need. */
interface Peers {
  server?: RequestIpServer
  trustProxy: boolean
  limiter?: RateLimiter
}

interface RequestInfo {
  id: string
  startedAt: number
  peers: Peers
  /** Resolved when first asked for: most API requests never need it. */
  ip?: string | null
  /** An API request's address count, left to the token check. */
  addressPending: boolean
}

/**
 * The only routes that take multipart bodies: the upload and the web composer's two forms. Each reads its body
 * itself, within the upload bound, as it streams in; every other body is small and judged here by its length.
 */
const multipartPaths = /^\/(?:api\/v1\/threads\/[^/]+\/attachments|threads|threads\/[^/]+\/messages)$/

function takesMultipart(request: Request): boolean {
  const type = request.headers.get('content-type')
  return type !== null && mediaTypeOf(request) === 'multipart/form-data' && multipartPaths.test(pathOf(request.url))
}

/** The path of an absolute URL: from the first slash after `scheme://` to the query or fragment. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const end = url.slice(start).search(/[?#]/)
  return end === -1 ? url.slice(start) : url.slice(start, start + end)
}

const requests = new WeakMap<Request, RequestInfo>()
const incomingId = /^[\w.-]{1,64}$/

/** The request's ID (echoed in `x-request-id`), for log lines written outside this plugin. */
export function requestIdOf(request: Request): string | undefined {
  return requests.get(request)?.id
}

export function clientIpOf(request: Request): string | null {
  const info = requests.get(request)
  if (!info) return null
  if (info.ip === undefined) info.ip = resolveIp(request, info.peers.server, info.peers.trustProxy)
  return info.ip
}

/** Counts the request against its address (or only looks, with `count` false): the seconds to wait when over. */
function countAddress(request: Request, info: RequestInfo, count = true): number | null {
  const ip = clientIpOf(request)
  if (!ip || !info.peers.limiter) return null
  return count ? info.peers.limiter.hit(`ip:${ip}`) : info.peers.limiter.peek(`ip:${ip}`)
}

/**
 * Settles a request whose address count was left to the token check: a valid token is counted by the caller
 * instead, anything else against the address. Answers the seconds to wait when the address is over its limit.
 */
export function settleAddressCount(request: Request, tokenValid: boolean): number | null {
  const info = requests.get(request)
  if (!info?.addressPending) return null
  info.addressPending = false
  return tokenValid ? null : countAddress(request, info)
}

/**
 * Behind the one trusted proxy, the client is the address that proxy appended: the last X-Forwarded-For entry.
 * Earlier entries are whatever the client sent, so counting by the first would let anyone pick their own key.
 */
function resolveIp(request: Request, server: RequestIpServer | undefined, trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim()
    if (forwarded) return forwarded
  }
  return server?.requestIP(request)?.address ?? null
}

/**
 * Whether an absolute URL's path is under /api/ or is the MCP endpoint, the paths that take bearer tokens: its
 * path starts at the first slash after `scheme://`.
 */
function isApiUrl(url: string): boolean {
  return url.startsWith('/api/', url.indexOf('/', url.indexOf('//') + 2)) || isMcpUrl(url)
}

/**
 * The MCP endpoint reads its JSON-RPC bodies itself, within its own bound (src/mcp): an upload_attachment call
 * carries a whole file in base64, more than any other JSON body.
 */
function isMcpUrl(url: string): boolean {
  const path = pathOf(url)
  // The router takes `/mcp/` for `/mcp` (paths are not strict), so it must be judged the same here.
  return path === '/mcp' || path === '/mcp/'
}

/** The paths whose guard checks a token (the API, MCP) or a session (the settings operations) before anything else. */
function checksCallerFirst(url: string): boolean {
  return isApiUrl(url) || url.startsWith('/settings/api/', url.indexOf('/', url.indexOf('//') + 2))
}

export const httpBasics = ({ log, config, ipLimiter, observe }: HttpDeps) => {
  const strictTransport = config.PUBLIC_URL.startsWith('https://')
  const origins = config.CORS_ORIGINS.split(',').filter(Boolean)
  const peers: Peers = { trustProxy: config.TRUST_PROXY, limiter: ipLimiter }
  // The same on every response, so set once rather than per request; pages and downloads override the CSP.
  const app = new Elysia({ name: 'http' })
    .headers({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      // API answers are data, never documents: nothing in them may load or run.
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      ...(strictTransport ? { 'strict-transport-security': 'max-age=31536000' } : {}),
    })
    // The server is taken once at start: a hook that names `server` makes Elysia define a getter for it on
    // every request's context. Requests handled without a server (tests' app.handle) have no peer address.
    .onStart(({ server }) => {
      peers.server = server ?? undefined
    })
    .onRequest(({ request, set }) => {
      const given = request.headers.get('x-request-id')
      const id = given && incomingId.test(given) ? given : crypto.randomUUID()
      const url = request.url
      // CORS preflights never reach the auth macro; they count here.
      const addressPending = request.method !== 'OPTIONS' && isApiUrl(url) && request.headers.has('authorization')
      const info: RequestInfo = { id, startedAt: performance.now(), peers, addressPending }
      requests.set(request, info)
      set.headers['x-request-id'] = id
      // Judged by its token later, unless a body would be read first: that needs an address within its limit.
      const readsBody = request.method !== 'GET' && request.method !== 'HEAD'
      const retryAfter = addressPending && !readsBody ? null : countAddress(request, info, !addressPending)
      if (retryAfter !== null) {
        info.addressPending = false
        throw rateLimited(retryAfter)
      }
      // No path or query parameter may hold U+0000 (nul.ts), and this is the one place that sees them all before a
      // route hands one to a query. Behind a token or a session the guard judges the URL once the caller passes
      // (callerChecked), so that 401 and 403 come before the request's own 400s there, as everywhere.
      if (!checksCallerFirst(url) && urlHoldsNul(url)) throw nulRefusal()
      // A chunked body could only be judged once read: JSON and forms are small, and clients send them with a
      // length. Multipart bodies, which may stream, are judged by their route, and only those routes take them.
      const length = request.headers.get('content-length')
      const refused = length === null ? request.headers.has('transfer-encoding') : Number(length) > maxJsonBodyBytes
      if (refused && !takesMultipart(request) && !isMcpUrl(url)) {
        if (length === null) throw new AppError(411, 'length_required', 'Send the body with a Content-Length header')
        throw payloadTooLarge(maxJsonBodyBytes)
      }
    })
  // One line per request at `info`: the route's pattern rather than the path (IDs say nothing to an operator
  // and the count of distinct lines stays small), never the query string (an OAuth `code`, a search) or a body.
  // The metrics count by the same pattern, for the same reasons; one hook serves both.
  const logged = log.enabled('info')
  if (logged || observe) {
    app.onAfterResponse({ as: 'global' }, ({ request, set, route, responseValue }) => {
      const info = requests.get(request)
      if (!info) return
      const status = responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200)
      const ms = performance.now() - info.startedAt
      observe?.(request.method, route ?? null, status, ms)
      if (!logged) return
      log.info('request', {
        requestId: info.id,
        method: request.method,
        route: route ?? null,
        status,
        ms: Math.round(ms * 10) / 10,
      })
    })
  }
  if (origins.length === 0) return app
  return app.use(
    cors({
      origin: origins,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      // The plugin answers every preflight, /mcp's too: the MCP transport's headers must be allowed here as well.
      allowedHeaders: [
        'authorization',
        'content-type',
        'idempotency-key',
        'last-event-id',
        'mcp-protocol-version',
        'mcp-session-id',
      ],
      exposeHeaders: [
        'x-request-id',
        'retry-after',
        'www-authenticate',
        'mcp-session-id',
        'mcp-protocol-version',
        'idempotent-replayed',
      ],
      credentials: false,
      maxAge: 600,
    }),
  )
}
