// Requests to addresses an organization chose, under the outbound rule (addresses.ts). `pinnedFetch` sends one request
// to the judged address; `guardedFetch` is the fetch handed to code that makes requests of its own (the MCP SDK's
// transport and OAuth client), which may read what comes back and would follow a redirect by calling it again, so it
// also bounds the time and the body and refuses every redirect.
import { AppError } from '../errors'
import {
  checkEndpointUrl,
  literalAddress,
  OutboundRefused,
  pinnedUrl,
  type Resolver,
  resolveTarget,
  systemResolver,
} from './addresses'

export interface AddressRules {
  allowPrivateNetworks: boolean
  resolve?: Resolver
}

export interface OutboundRules extends AddressRules {
  /** Per request, from the name's lookup to the body's last byte. */
  timeoutMs: number
  /** Of the body as read, after any content decoding. */
  maxResponseBytes: number
  userAgent: string
}

/** What a request may carry: none of the caller's other options (a proxy, a socket, TLS settings) reach `fetch`. */
export type OutboundInit = Pick<RequestInit, 'method' | 'headers' | 'body' | 'signal'>

/**
 * One request to the address `url`'s host name resolves to, every address of the answer judged first. A redirect is
 * returned as it is, and the body is the caller's to bound.
 */
export async function pinnedFetch(url: URL, init: OutboundInit, rules: AddressRules): Promise<Response> {
  const address = await beforeAbort(
    resolveTarget(url, rules.allowPrivateNetworks, rules.resolve ?? systemResolver),
    init.signal ?? undefined,
  )
  const headers = new Headers(init.headers)
  headers.set('host', url.host)
  return fetch(pinnedUrl(url, address), {
    method: init.method,
    headers,
    body: init.body,
    signal: init.signal,
    redirect: 'manual',
    // Connected by address, the certificate is still checked against the URL's name.
    ...(url.protocol === 'https:' && literalAddress(url) === null ? { tls: { serverName: url.hostname } } : {}),
  })
}

/**
 * A fetch whose every call is judged by the outbound rule and bounded by `rules`. It sends the caller's method, body
 * and headers with the rules' user agent, and nothing else: it keeps no cookies and adds no credentials. It throws
 * OutboundRefused for a URL it may not fetch, a redirect (3xx) and a body past the bound (the body's read fails when
 * no `content-length` says so first); a timeout or the caller's abort rejects with the signal's reason.
 */
export function guardedFetch(rules: OutboundRules): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init = {}) => {
    const url = checkedUrl(input, rules.allowPrivateNetworks)
    const timeout = AbortSignal.timeout(rules.timeoutMs)
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout
    const headers = new Headers(init.headers)
    headers.set('user-agent', rules.userAgent)
    const response = await pinnedFetch(url, { method: init.method, headers, body: init.body, signal }, rules)
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => {})
      throw new OutboundRefused(`${url.host} answered HTTP ${response.status}: redirects are not followed`)
    }
    return bounded(response, url, rules.maxResponseBytes)
  }
}

/** The URL, if it is one the rule lets anyone fetch: http(s), no credentials, no non-public address written in it. */
function checkedUrl(input: string | URL, allowPrivate: boolean): URL {
  try {
    return checkEndpointUrl(String(input), allowPrivate)
  } catch (error) {
    if (error instanceof AppError) throw new OutboundRefused(error.message)
    throw error
  }
}

/** `promise`, or the signal's reason once it aborts: a name's lookup cannot be cancelled, only stopped waiting for. */
function beforeAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  signal.throwIfAborted()
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
  return Promise.race([promise, aborted])
}

/** `response` with a body that fails past `maxBytes`, counted as it is read; refused at once when it says it is. */
async function bounded(response: Response, url: URL, maxBytes: number): Promise<Response> {
  const tooLarge = () => new OutboundRefused(`${url.host} answered with more than ${maxBytes} bytes`)
  if (Number(response.headers.get('content-length')) > maxBytes) {
    await response.body?.cancel().catch(() => {})
    throw tooLarge()
  }
  if (response.body === null) return response
  let received = 0
  // `content-length` counts the bytes as sent, before any decoding: only counting what is read bounds a gzip bomb.
  const counted = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        received += chunk.byteLength
        if (received > maxBytes) controller.error(tooLarge())
        else controller.enqueue(chunk)
      },
    }),
  )
  return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers })
}
