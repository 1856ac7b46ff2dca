// One error type for the whole API and one plugin that renders it: the spec's `{ error, message }` everywhere,
// except on routes that opt into the bare `{ message, ...extra }` the spec gives the attachment upload.
import { Elysia } from 'elysia'
import { requestIdOf, settleAddressCount } from './http'
import type { Logger } from './log'
import { rateLimited } from './rate-limit'

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra documented fields, such as `required_scope` on 403. */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const notFound = (what: string): AppError => new AppError(404, 'not_found', `${what} not found`)
export const invalidRequest = (message: string): AppError => new AppError(400, 'invalid_request', message)
export const conflict = (message: string): AppError => new AppError(409, 'conflict', message)
export const forbidden = (message: string): AppError => new AppError(403, 'forbidden', message)

interface ValidationIssue {
  path?: string
  message?: string
  summary?: string
}

/** Turns Elysia's validation error into one readable sentence naming the offending field. */
function describeValidation(error: { type?: string; all?: ValidationIssue[] }): string {
  const first = error.all?.[0]
  const where = error.type === 'body' ? 'body' : (error.type ?? 'request')
  if (!first) return `Invalid ${where}`
  const field = first.path ? first.path.replace(/^\//, '').replaceAll('/', '.') : ''
  if (where === 'body' && !field && first.message === 'Expected object') return 'The body must be a JSON object'
  const message = first.summary ?? first.message ?? 'is invalid'
  if (first.message === 'Unexpected property' || /additional/i.test(first.message ?? '')) {
    return `Unknown ${where} property "${field}"`
  }
  return field ? `Invalid ${where} field "${field}": ${message}` : `Invalid ${where}: ${message}`
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

/** Every failure as an AppError, so that one place decides the body's shape. */
function toAppError(code: string | number, error: unknown, path: string, request: Request, log: Logger): AppError {
  if (error instanceof AppError) return error
  switch (code) {
    case 'VALIDATION':
      return invalidRequest(describeValidation(error as Parameters<typeof describeValidation>[0]))
    case 'PARSE':
      return invalidRequest('The request body could not be parsed')
    case 'NOT_FOUND':
      return new AppError(404, 'not_found', 'No such endpoint')
    case 'INVALID_COOKIE_SIGNATURE':
      return invalidRequest('Invalid cookie')
    default:
      log.error('unhandled error', {
        requestId: requestIdOf(request),
        path,
        code: String(code),
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      })
      return new AppError(500, 'internal_error', 'Something went wrong on our side')
  }
}

/** Requests whose route asked for bare client-error bodies (see `errorShapes`). */
const bareRequests = new WeakSet<Request>()
/** The statuses a bare route renders without `error`; 401, 403 and 404 keep the usual `{ error, message }`. */
const bareStatuses = new Set([400, 413, 422])

export const errorPlugin = (log: Logger) =>
  new Elysia({ name: 'errors' })
    .error({ AppError })
    .onError({ as: 'global' }, ({ code, error, path, set, request }) => {
      // An API request that failed before its token was checked (an unknown path, a refused body) counts
      // against its address.
      const retryAfter = settleAddressCount(request, false)
      const failure = retryAfter === null ? toAppError(code, error, path, request, log) : rateLimited(retryAfter)
      const body =
        bareRequests.has(request) && bareStatuses.has(failure.status)
          ? { message: failure.message, ...failure.extra }
          : { error: failure.code, message: failure.message, ...failure.extra }
      set.status = failure.status // read by the access log
      return json(failure.status, body, failure.headers)
    })

/**
 * Route option `bareClientErrors: true`: the route's 400, 413 and 422 become `{ message, ...extra }`. The
 * request is marked in `transform`, which runs before validation, so malformed parameters are covered too.
 */
export const errorShapes = new Elysia({ name: 'error-shapes' }).macro({
  bareClientErrors: {
    transform({ request }) {
      bareRequests.add(request)
    },
  },
})
