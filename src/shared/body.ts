// Request bodies, read by us rather than by the framework, so that a hostile one is refused early and cheaply:
// only after the caller has been checked, only as the content type the route documents, never past its byte
// bound (counted as the body streams in, whatever Content-Length claimed), and for JSON never deeper than a few
// dozen levels, never wider than its reader allows (/mcp), and never against its schema with more than one error
// looked at.
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Elysia } from 'elysia'
import { AppError, describeIssue, invalidRequest } from './errors'
import { holdsNul, nulRefusal, urlHoldsNul } from './nul'
import { type DocumentedResponses, sharedResponse } from './responses'

/** JSON and form bodies are small; only multipart uploads may be larger (their route judges those). */
export const maxJsonBodyBytes = 1024 * 1024

/** No route's body is nested more than a few levels; 32 leaves room and bounds every walk over a value. */
export const maxJsonDepth = 32

export const payloadTooLarge = (limit: number): AppError =>
  new AppError(413, 'payload_too_large', `Request bodies are limited to ${limit} bytes`)

/**
 * The body's bytes, refused with 413 as soon as more than `limit` have arrived. A body that breaks off (the
 * client went away, a malformed chunk) is the client's 400, never a server error. With a `scan`, each chunk is
 * judged as it arrives and reading stops at the first problem, whatever is left to come: the bytes are then empty,
 * and the caller reads `scan.problem`.
 */
export async function readBounded(request: Request, limit: number, scan?: JsonShapeScan): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length'))
  if (declared > limit) throw payloadTooLarge(limit)
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for await (const chunk of request.body) {
      size += chunk.byteLength
      if (size > limit) throw payloadTooLarge(limit)
      chunks.push(chunk)
      if (scan?.feed(chunk)) break
    }
  } catch (error) {
    if (error instanceof AppError) throw error
    throw invalidRequest('The request body could not be read')
  }
  return scan?.problem ? new Uint8Array() : Buffer.concat(chunks)
}

/** The media type without parameters, in lower case: `Application/JSON; charset=utf-8` is `application/json`. */
export function mediaTypeOf(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? ''
}

/** What a JSON text may hold: nesting depth, and array elements and object members counted over the whole text. */
export interface JsonBounds {
  depth: number
  elements: number
}

/** The index of `byte` in `bytes` from `from` on, or the length of `bytes` when there is none. */
function nextIndex(bytes: Uint8Array, byte: number, from: number): number {
  const found = bytes.indexOf(byte, from)
  return found < 0 ? bytes.length : found
}

/**
 * The shape of a JSON text judged as its UTF-8 bytes arrive: refused once it is nested deeper than `bounds.depth`
 * or holds more than `bounds.elements` array elements and object members in all (as the MCP SDK counts tool
 * arguments). Strings are skipped, escapes included, so brackets and commas inside them do not count; no byte of a
 * multi-byte UTF-8 character can be mistaken for one of those. This is not a parser: JSON.parse still judges the
 * text. It keeps a pathologically deep or wide one away from JSON.parse and from every later walk, each of which
 * costs in proportion to the values a text holds rather than to its bytes, and it does so before the rest of the
 * body is even read.
 */
export class JsonShapeScan {
  problem: 'depth' | 'width' | null = null
  private depth = 0
  private elements = 0
  /** Just after `[` or `{`: the next byte that is not white space opens a first element, unless it closes. */
  private opened = false
  private inString = false
  /** In a string, the previous byte was a backslash: this one is escaped, whatever it is. */
  private escaped = false

  constructor(private readonly bounds: JsonBounds) {}

  /** Judges the next bytes of the text; the problem, once there is one. */
  feed(bytes: Uint8Array): 'depth' | 'width' | null {
    if (this.problem) return this.problem
    const end = bytes.length
    // Where the next quote and backslash are, found natively and looked for again only once passed, so that a long
    // string (a file in base64) costs two searches however many escapes it holds.
    let quote = -1
    let backslash = -1
    let i = 0
    while (i < end) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false
          i++
          continue
        }
        if (quote < i) quote = nextIndex(bytes, 0x22, i)
        if (backslash < i) backslash = nextIndex(bytes, 0x5c, i)
        if (backslash < quote) {
          this.escaped = true
          i = backslash + 1
        } else {
          this.inString = quote === end
          i = quote + 1
        }
        continue
      }
      const c = bytes[i++]
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue
      if (this.opened) {
        this.opened = false
        if (c !== 0x5d && c !== 0x7d) this.count()
      }
      if (c === 0x22) this.inString = true
      else if (c === 0x5b || c === 0x7b) {
        if (++this.depth > this.bounds.depth) this.problem = 'depth'
        this.opened = true
      } else if (c === 0x5d || c === 0x7d) this.depth--
      else if (c === 0x2c) this.count()
      if (this.problem) return this.problem
    }
    return null
  }

  private count(): void {
    if (++this.elements > this.bounds.elements) this.problem = 'width'
  }
}

/** 415, naming the accepted type the way RFC 9110 §15.5.16 suggests: Accept-Post or Accept-Patch (RFC 5789). */
export const unsupportedMediaType = (accepted: string, method = 'POST'): AppError =>
  new AppError(
    415,
    'unsupported_media_type',
    `Send the body as ${accepted}`,
    {},
    {
      [method === 'PATCH' ? 'accept-patch' : 'accept-post']: accepted,
    },
  )

/** Why a JSON body has no value: nested too deep, holding too many values, or not JSON at all. */
export type JsonProblem = 'depth' | 'width' | 'syntax'

/**
 * A JSON body read within `bytes` (413 past it): its value and its bytes, or why there is none. A text nested deeper
 * than `maxJsonDepth`, or holding more than `elements` array elements and object members, is refused as soon as
 * that much of it has arrived: it is never read further, nor handed to JSON.parse, whose cost grows with both, nor to
 * any later walk.
 */
export async function readJson(
  request: Request,
  { bytes = maxJsonBodyBytes, elements = Number.POSITIVE_INFINITY } = {},
): Promise<{ value: unknown; bytes: Uint8Array; holdsNul: boolean } | { problem: JsonProblem }> {
  const scan = new JsonShapeScan({ depth: maxJsonDepth, elements })
  const read = await readBounded(request, bytes, scan)
  if (scan.problem) return { problem: scan.problem }
  const text = new TextDecoder().decode(read)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { problem: 'syntax' }
  }
  // PostgreSQL's text cannot hold U+0000, so no route takes it, on either backend. JSON can only carry it escaped,
  // so bodies without the escape are not walked.
  return { value, bytes: read, holdsNul: text.includes('\\u0000') && holdsNul(value) }
}

const problems = {
  depth: `The body is nested more than ${maxJsonDepth} levels deep`,
  width: 'The body holds too many values',
  syntax: 'The request body could not be parsed',
} as const

/** Requests whose caller a route's guard has checked: a body is read only for those. */
const checkedCallers = new WeakSet<Request>()

/**
 * Called by every guard (API tokens, settings sessions) once the caller may send this route a body. The request's
 * own content is judged from here on, its URL first: no path or query parameter may hold U+0000 (nul.ts).
 */
export function callerChecked(request: Request): void {
  if (urlHoldsNul(request.url)) throw nulRefusal()
  checkedCallers.add(request)
}

/** The bytes of JSON bodies sent with an Idempotency-Key, whose hash tells a repeat from another request. */
const rawBodies = new WeakMap<Request, Uint8Array>()

/** The bytes a JSON route read as its body, for requests that sent an Idempotency-Key; empty for the others. */
export function rawJsonBody(request: Request): Uint8Array {
  return rawBodies.get(request) ?? new Uint8Array()
}

function parseJsonBody(schema: TSchema, optional = false) {
  const check = TypeCompiler.Compile(schema)
  return async function readJsonBody({ request }: { request: Request }): Promise<unknown> {
    // A guard's own parse hook must come first; a route that lists `json` before its guard is a bug, and
    // every route is exercised by the tests, so it fails there rather than reading anonymous bodies.
    if (!checkedCallers.has(request)) {
      throw new AppError(500, 'internal_error', 'This route reads its body before checking its caller')
    }
    // An optional body left out (no content type, nothing sent) is the empty object.
    const absent = request.body === null || request.headers.get('content-length') === '0'
    if (optional && absent && !request.headers.has('content-type')) return {}
    if (mediaTypeOf(request) !== 'application/json') {
      if (request.body !== null && request.headers.get('content-length') !== '0') {
        throw unsupportedMediaType('application/json', request.method)
      }
      throw invalidRequest('The body must be a JSON object')
    }
    const read = await readJson(request)
    if ('problem' in read) throw invalidRequest(problems[read.problem])
    if (request.headers.has('idempotency-key')) rawBodies.set(request, read.bytes)
    if (read.holdsNul) throw nulRefusal()
    const { value } = read
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw invalidRequest('The body must be a JSON object')
    }
    // Only the first failure is looked at: the framework's own report walks and prints the whole value.
    if (!check.Check(value)) throw invalidRequest(describeIssue('body', check.Errors(value).First()))
    return value
  }
}

/**
 * The route options of a JSON body, spread into a route's options after its guard (`scope`, `account`):
 * `{ scope: 'threads:write', ...jsonBody(Schema) }`. The body is `application/json` (else 415) within 1 MiB
 * (else 413), nested at most `maxJsonDepth` levels, and matches the schema (else 400), all judged after the guard,
 * because macros run in the order they are written. `body` types the handler; the macro documents the route.
 */
export function jsonBody<Schema extends TSchema>(schema: Schema): { body: Schema; json: Schema } {
  return { body: schema, json: schema }
}

/**
 * What the OpenAPI document says of a JSON body: this media type only, and the statuses this file answers.
 * Left to itself, the document would offer every body as form data and plain text too. The route's own
 * `detail` keeps everything else; a fresh object per route, since Elysia merges it into the route's.
 */
function jsonBodyDetail(
  schema: TSchema,
  optional = false,
): {
  requestBody: { required: boolean; description: string; content: Record<string, { schema: object }> }
  responses: DocumentedResponses
} {
  return {
    requestBody: {
      required: !optional,
      description: `${optional ? 'Optional (none: `{}`). ' : ''}A JSON object, sent as \`application/json\` with a Content-Length of at most ${maxJsonBodyBytes} bytes and nested at most ${maxJsonDepth} levels deep.`,
      content: { 'application/json': { schema } },
    },
    responses: { 413: sharedResponse('PayloadTooLarge'), 415: sharedResponse('UnsupportedMediaType') },
  }
}

/** The `json` macro behind jsonBody(), which routes use through that function. */
export const jsonBodies = new Elysia({ name: 'json-bodies' }).macro({
  json: (schema: TSchema) => ({ parse: parseJsonBody(schema), detail: jsonBodyDetail(schema) }),
  optionalJson: (schema: TSchema) => ({ parse: parseJsonBody(schema, true), detail: jsonBodyDetail(schema, true) }),
})

/** jsonBody() for a body that may be left out altogether (no content type, nothing sent): it reads as `{}`. */
export function optionalJsonBody<Schema extends TSchema>(schema: Schema): { body: Schema; optionalJson: Schema } {
  return { body: schema, optionalJson: schema }
}
