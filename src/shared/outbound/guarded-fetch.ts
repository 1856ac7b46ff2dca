// Requests to addresses an organization chose, under the outbound rule (addresses.ts). `pinnedFetch` sends one request
// to the judged address.
import { literalAddress, pinnedUrl, type Resolver, resolveTarget, systemResolver } from './addresses'

export interface AddressRules {
  allowPrivateNetworks: boolean
  resolve?: Resolver
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

/** `promise`, or the signal's reason once it aborts: a name's lookup cannot be cancelled, only stopped waiting for. */
function beforeAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  signal.throwIfAborted()
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
  return Promise.race([promise, aborted])
}
