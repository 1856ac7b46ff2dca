// One error type for the whole API and one plugin that renders it as the spec's `{ error, message }`.
import { Elysia } from 'elysia'
import { requestIdOf } from './http'
import type { Logger } from './log'

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

export const errorPlugin = (log: Logger) =>
  new Elysia({ name: 'errors' })
    .error({ AppError })
    .onError({ as: 'global' }, ({ code, error, path, set, request }) => {
      const respond = (status: number, body: unknown, headers?: Record<string, string>): Response => {
        set.status = status // read by the access log
        return json(status, body, headers)
      }
      if (error instanceof AppError) {
        return respond(error.status, { error: error.code, message: error.message, ...error.extra }, error.headers)
      }
      switch (code) {
        case 'VALIDATION':
          return respond(400, { error: 'invalid_request', message: describeValidation(error) })
        case 'PARSE':
          return respond(400, { error: 'invalid_request', message: 'The request body could not be parsed' })
        case 'NOT_FOUND':
          return respond(404, { error: 'not_found', message: 'No such endpoint' })
        case 'INVALID_COOKIE_SIGNATURE':
          return respond(400, { error: 'invalid_request', message: 'Invalid cookie' })
        default:
          log.error('unhandled error', {
            requestId: requestIdOf(request),
            path,
            code: String(code),
            error: error instanceof Error ? (error.stack ?? error.message) : String(error),
          })
          return respond(500, { error: 'internal_error', message: 'Something went wrong on our side' })
      }
    })
