// Request bodies, read by us rather than by the framework, so that a hostile one is refused early and cheaply:
// only after the caller has been checked, only as the content type the route documents, never past its byte
// bound (counted as the body streams in, whatever Content-Length claimed), and for JSON never deeper than a few
// dozen levels or against its schema with more than one error looked at.
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
 * client went away, a malformed chunk) is the client's 400, never a server error.
 */
export async function readBounded(request: Request, limit: number): Promise<Uint8Array> {
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
    }
  } catch (error) {
    if (error instanceof AppError) throw error
    throw invalidRequest('The request body could not be read')
  }
  return Buffer.concat(chunks)
}

/** The media type without parameters, in lower case: `Application/JSON; charset=utf-8` is `application/json`. */
export function mediaTypeOf(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? ''
}

/**
 * The deepest nesting of arrays and objects in a JSON text, stopping as soon as it passes `limit`. Strings are
 * skipped, escapes included, so brackets inside them do not count. This is not a parser: JSON.parse still
 * judges the text, this only keeps a pathologically deep one away from it and from every later walk.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
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

/**
 * A JSON body read within `limit` (413 past it): its value, or why there is none. A text nested deeper than
 * `maxJsonDepth` is never handed to JSON.parse, whose cost grows with the depth, nor to any later walk.
 */
export async function readJson(
  request: Request,
  limit = maxJsonBodyBytes,
): Promise<{ value: unknown; holdsNul: boolean } | { problem: 'depth' | 'syntax' }> {
  const text = new TextDecoder().decode(await readBounded(request, limit))
  if (jsonDepthExceeds(text, maxJsonDepth)) return { problem: 'depth' }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { problem: 'syntax' }
  }
  // PostgreSQL's text cannot hold U+0000, so no route takes it, on either backend. JSON can only carry it escaped,
  // so bodies without the escape are not walked.
  return { value, holdsNul: text.includes('\\u0000') && holdsNul(value) }
}

const problems = {
  depth: `The body is nested more than ${maxJsonDepth} levels deep`,
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

function parseJsonBody(schema: TSchema) {
  const check = TypeCompiler.Compile(schema)
  return async function readJsonBody({ request }: { request: Request }): Promise<unknown> {
    // A guard's own parse hook must come first; a route that lists `json` before its guard is a bug, and
    // every route is exercised by the tests, so it fails there rather than reading anonymous bodies.
    if (!checkedCallers.has(request)) {
      throw new AppError(500, 'internal_error', 'This route reads its body before checking its caller')
    }
    if (mediaTypeOf(request) !== 'application/json') {
      if (request.body !== null && request.headers.get('content-length') !== '0') {
        throw unsupportedMediaType('application/json', request.method)
      }
      throw invalidRequest('The body must be a JSON object')
    }
    const read = await readJson(request)
    if ('problem' in read) throw invalidRequest(problems[read.problem])
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
function jsonBodyDetail(schema: TSchema): {
  requestBody: { required: boolean; description: string; content: Record<string, { schema: object }> }
  responses: DocumentedResponses
} {
  return {
    requestBody: {
      required: true,
      description: `A JSON object, sent as \`application/json\` with a Content-Length of at most ${maxJsonBodyBytes} bytes and nested at most ${maxJsonDepth} levels deep.`,
      content: { 'application/json': { schema } },
    },
    responses: { 413: sharedResponse('PayloadTooLarge'), 415: sharedResponse('UnsupportedMediaType') },
  }
}

/** The `json` macro behind jsonBody(), which routes use through that function. */
export const jsonBodies = new Elysia({ name: 'json-bodies' }).macro({
  json: (schema: TSchema) => ({ parse: parseJsonBody(schema), detail: jsonBodyDetail(schema) }),
})
