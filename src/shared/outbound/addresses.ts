// The outbound rule against SSRF, for the requests the server makes to addresses an organization chose: public unicast
// addresses only, unless WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true. A URL naming an address is judged when it is saved; at
// every connection the host name is resolved, every address in the answer is judged (one private address refuses the
// lot: a name may answer differently from one lookup to the next), and the request goes to the address that was
// judged, never to a second lookup's answer (DNS rebinding).
import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'
import { AppError } from '../errors'

/**
 * Ranges ipaddr.js still calls `unicast` that are no public internet: benchmarking (also the fake addresses of proxy
 * DNS setups), local-use NAT64 (which reaches IPv4 metadata services through a gateway), site-local, IPv4-compatible
 * IPv6, and the discard and ORCHID prefixes.
 */
const alsoRefused = ['198.18.0.0/15', '64:ff9b:1::/48', 'fec0::/10', '::/96', '100::/64', '2001:10::/28'].map((cidr) =>
  ipaddr.parseCIDR(cidr),
)

/**
 * Only ipaddr.js's `unicast` range, less `alsoRefused`, is public: loopback, private, link-local, unique-local,
 * multicast, CGNAT, unspecified, broadcast, reserved and the IPv6 ranges that embed IPv4 addresses (NAT64, 6to4,
 * Teredo) are all something else. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address)
  if (parsed.range() !== 'unicast') return false
  return !alsoRefused.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
}

/** The URL's host as an address, when it is one (`[::1]` without its brackets), else null. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return ipaddr.isValid(host) ? host : null
}

/** Checks an endpoint URL as it is added: http(s), no credentials, and no private address written in it. */
export function checkEndpointUrl(text: string, allowPrivate: boolean): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new AppError(400, 'invalid_request', 'The URL is not valid.')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new AppError(400, 'invalid_request', 'The URL must start with https:// or http://.')
  }
  if (url.username !== '' || url.password !== '') {
    throw new AppError(400, 'invalid_request', 'The URL must not hold a user name or password.')
  }
  if (text.length > 2000) throw new AppError(400, 'invalid_request', 'The URL must be at most 2000 characters.')
  const literal = literalAddress(url)
  if (literal !== null && !allowPrivate && !isPublicAddress(literal)) {
    throw new AppError(
      400,
      'invalid_request',
      'The URL names a private, loopback or otherwise non-public address (see WEBHOOKS_ALLOW_PRIVATE_NETWORKS).',
    )
  }
  return url
}

/**
 * A request the outbound rule refuses: a non-public address; from guardedFetch also a URL it may not fetch, a redirect
 * or a body past its bound.
 */
export class OutboundRefused extends Error {}

export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((answer) => answer.address)

/** The address to connect to for `url`, every address its name resolves to having been judged. */
export async function resolveTarget(url: URL, allowPrivate: boolean, resolve: Resolver): Promise<string> {
  const literal = literalAddress(url)
  const addresses = literal === null ? await resolve(url.hostname) : [literal]
  const [first] = addresses
  if (first === undefined) throw new OutboundRefused(`${url.hostname} has no address`)
  if (!allowPrivate) {
    const refused = addresses.find((address) => !isPublicAddress(address))
    if (refused !== undefined) {
      throw new OutboundRefused(`${url.hostname} resolves to ${refused}, a non-public address`)
    }
  }
  return first
}

/** `url` with its host replaced by `address` (bracketed when IPv6), for a request pinned to a judged address. */
export function pinnedUrl(url: URL, address: string): string {
  const pinned = new URL(url.href)
  pinned.hostname = address.includes(':') ? `[${address}]` : address
  return pinned.href
}
