// Idempotency keys, as Stripe has them: a client that sends `Idempotency-Key` with a POST may repeat the request
// (after a timeout, a dropped connection) and get the first response again instead of a second thread, message or
// upload. The first request reserves the key; a repeat finds it running (409) or finished (the stored response,
// marked `Idempotent-Replayed: true`); the same key with another request is refused (422). Keys are the user's,
// whichever of their tokens sends them, and last 24 hours. docs/api.md states the rules.
import type { Caller } from '../auth/model'
import { rawJsonBody } from '../shared/body'
import { AppError, invalidRequest } from '../shared/errors'
import type { Logger } from '../shared/log'
import { hashSecret } from '../shared/security'
import { type Clock, dayMs } from '../shared/time'
import type { IdempotencyRepository } from './repository'

/** How long a key answers repeats (Stripe keeps its keys at least as long). */
export const idempotencyKeyLifetimeMs = dayMs

/**
 * A key still running after this long lost its request to a crash and is free again. Far longer than any of the
 * routes runs: an upload's checks are cut off after a minute, and its body is read before the key is reserved.
 */
export const abandonedKeyMs = 10 * 60_000

export const idempotencyKeyHeader = 'idempotency-key'
export const replayedHeader = 'idempotent-replayed'

/** 1 to 255 printable ASCII characters, spaces included (Stripe allows up to 255). */
const validKey = /^[\x20-\x7e]{1,255}$/

/** The request's key, or null when it sent none; 400 for one that is not 1–255 printable ASCII characters. */
export function idempotencyKeyOf(request: Request): string | null {
  const key = request.headers.get(idempotencyKeyHeader)
  if (key === null) return null
  if (!validKey.test(key)) {
    throw invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters')
  }
  return key
}

/** What makes two requests the same: the method, the path and the body's bytes (SHA-256 of each, then of those). */
export function fingerprintOf(method: string, path: string, bodyDigest: string): string {
  return hashSecret(`${method}\n${path}\n${bodyDigest}`)
}

export function digestBytes(bytes: Uint8Array): string {
  return Bun.CryptoHasher.hash('sha256', bytes, 'hex')
}

/** The digest of a file's bytes, read as a stream: an upload's body may be many megabytes. */
export async function digestFile(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of Bun.file(path).stream()) hasher.update(chunk)
  return hasher.digest('hex')
}

export interface IdempotencyDeps {
  idempotency: IdempotencyRepository
  now: () => number
  log: Logger
}

/** Either the stored response of the first request, to send as it is, or what this request's own work made. */
export type Outcome<T> = { replay: Response } | { value: T }

/**
 * The code rides in the extra fields too: the upload route answers its 422 in the specification's bare
 * `{ message, ... }` form, and a client must still tell a key's refusal from a file's.
 */
const keyRefusal = (status: number, code: string, message: string): AppError =>
  new AppError(status, code, message, { error: code })

function replay(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/json', [replayedHeader]: 'true' },
  })
}

/**
 * Runs `work` once per key: the first request with `key` runs it and stores its response (`status`, and the value
 * as JSON); a repeat of the same request gets that response again without running it; a different request, or a
 * repeat while the first still runs, is refused. Only successes are stored: a refusal or failure releases the key,
 * since on these routes it leaves nothing done that a retry could do twice, and a retry is judged afresh.
 */
export async function once<T>(
  deps: IdempotencyDeps,
  caller: Caller,
  request: { key: string; fingerprint: string; status: number },
  work: () => Promise<T>,
): Promise<Outcome<T>> {
  const { key, fingerprint, status } = request
  const now = deps.now()
  const reservation = await deps.idempotency.reserve({
    userId: caller.userId,
    key,
    fingerprint,
    now,
    expiredBefore: now - idempotencyKeyLifetimeMs,
    abandonedBefore: now - abandonedKeyMs,
  })
  if (reservation.kind === 'taken') {
    if (reservation.fingerprint !== fingerprint) {
      throw keyRefusal(
        422,
        'idempotency_key_mismatch',
        'This Idempotency-Key was used with a different request: send a new key for a new request',
      )
    }
    if (reservation.status === null || reservation.body === null) {
      throw keyRefusal(
        409,
        'idempotency_key_in_use',
        'A request with this Idempotency-Key is still running: repeat it once that one has finished',
      )
    }
    return { replay: replay(reservation.status, reservation.body) }
  }
  const { claim } = reservation
  let value: T
  try {
    value = await work()
  } catch (error) {
    await deps.idempotency.release(caller.userId, key, claim).catch((failure) => {
      deps.log.error('could not release an idempotency key; it frees itself after a while', {
        error: String(failure),
      })
    })
    throw error
  }
  // The work is done: a response that cannot be stored is still sent, and the key frees itself in a while.
  await deps.idempotency
    .complete(caller.userId, key, claim, { status, body: JSON.stringify(value) })
    .catch((failure) => {
      deps.log.error('could not store the response of an idempotent request', { error: String(failure) })
    })
  return { value }
}

/**
 * `once` for a JSON route: the key from the request's header (none: `work` just runs), the body as the route read it
 * (shared/body.ts keeps the bytes of requests that send a key).
 */
export async function onceForJson<T>(
  deps: IdempotencyDeps,
  caller: Caller,
  request: Request,
  status: number,
  work: () => Promise<T>,
): Promise<Outcome<T>> {
  const key = idempotencyKeyOf(request)
  if (key === null) return { value: await work() }
  const fingerprint = fingerprintOf(request.method, new URL(request.url).pathname, digestBytes(rawJsonBody(request)))
  return once(deps, caller, { key, fingerprint, status }, work)
}

/** What `once` needs, from a feature's dependencies. */
export function idempotencyDeps(deps: { idempotency: IdempotencyRepository; clock: Clock; log: Logger }) {
  return { idempotency: deps.idempotency, now: () => deps.clock.now(), log: deps.log } satisfies IdempotencyDeps
}

/** The OpenAPI header parameter of the routes that take a key. */
export const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Optional, 1–255 printable ASCII characters (a UUID is a good choice). A repeat with the same key and the same ' +
    'request (method, path and body bytes) within 24 hours answers the first success again, with ' +
    '`Idempotent-Replayed: true`, without doing the work twice; the same key with another request is 422 ' +
    '`idempotency_key_mismatch`; a repeat while the first is still running is 409 `idempotency_key_in_use`. ' +
    'Refusals and failures are not stored: the key is free for a retry. The key is consulted only after the ' +
    'token, scope and body are checked (a 401, 403, 400, 413, 415 or 429 never touches it). A key held by a ' +
    'request lost in a crash answers 409 for ten minutes, then is free again. Keys are the user’s, whichever token ' +
    'sends them. See docs/api.md, “Idempotent requests”.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
} as const

/** What the descriptions of the routes that take a key add. */
export const idempotencyNote =
  ' Send `Idempotency-Key` to make a retry safe: a repeat within 24 hours gets the first success again ' +
  '(`Idempotent-Replayed: true`) rather than doing it twice.'
