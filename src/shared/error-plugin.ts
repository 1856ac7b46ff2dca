// The one plugin that renders every failure: the spec's `{ error, message }` everywhere, except on routes that
// opt into the bare `{ message, ...extra }` the spec gives the attachment upload. Kept apart from the errors
// themselves (errors.ts), which every layer throws, since the plugin reads the request's bookkeeping (http.ts).
import { Elysia } from 'elysia'
import { AppError, describeIssue, invalidRequest, RequestRefusal, type ValidationIssue } from './errors'
import { requestIdOf, settleAddressCount } from './http'
import type { Logger } from './log'
import type { AllowedMethods } from './methods'
import { rateLimited } from './rate-limit'

/** Paths that answer in their own shape, and how a `RequestRefusal` is said in it; the API's is the default. */
export interface ErrorSurface {
  paths: RegExp
  render(failure: AppError): Response
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

/** Every failure as an AppError, so that one place decides the body's shape. */
function toAppError(
  code: string | number,
  error: unknown,
  path: string,
  request: Request,
  log: Logger,
  allowed?: AllowedMethods,
): AppError {
  if (error instanceof AppError) return error
  // Elysia wraps whatever a parse hook throws, our body readers' refusals included.
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof AppError) return error.cause
  switch (code) {
    case 'VALIDATION': {
      // `valueError` is the first failure, which Elysia has already found; its `all` would look for every other.
      const { type, valueError } = error as { type?: string; valueError?: ValidationIssue }
      return invalidRequest(describeIssue(type ?? 'request', valueError))
    }
    case 'PARSE':
      return invalidRequest('The request body could not be parsed')
    case 'NOT_FOUND': {
      const methods = allowed?.of(path) ?? []
      if (methods.length === 0) return new AppError(404, 'not_found', 'No such endpoint')
      const allow = methods.join(', ')
      const message = `${request.method} is not allowed here; this path answers ${allow}`
      return new AppError(405, 'method_not_allowed', message, {}, { allow })
    }
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

/**
 * How failures of page requests are shown (src/web/errors.tsx): a response, or null where the request is the
 * API's and gets JSON. `unmatched` says no route matched the request.
 */
export type PageFailures = (failure: AppError, request: Request, unmatched: boolean) => Promise<Response | null>

/** Requests whose route asked for bare client-error bodies (see `errorShapes`). */
const bareRequests = new WeakSet<Request>()
/** The statuses a bare route renders without `error`; 401, 403 and 404 keep the usual `{ error, message }`. */
const bareStatuses = new Set([400, 413, 422])

export const errorPlugin = (
  log: Logger,
  allowed?: AllowedMethods,
  surfaces: ErrorSurface[] = [],
  pages?: PageFailures,
) =>
  new Elysia({ name: 'errors' })
    .error({ AppError })
    .onError({ as: 'global' }, async ({ code, error, path, set, request }) => {
      // An API request that failed before its token was checked (an unknown path, a refused body) counts
      // against its address.
      const retryAfter = settleAddressCount(request, false)
      const failure =
        retryAfter === null ? toAppError(code, error, path, request, log, allowed) : rateLimited(retryAfter)
      const body =
        bareRequests.has(request) && bareStatuses.has(failure.status)
          ? { message: failure.message, ...failure.extra }
          : { error: failure.code, message: failure.message, ...failure.extra }
      set.status = failure.status // read by the access log
      // Pages first: a page request, or a web address, gets a page whatever failed (src/web/errors.tsx).
      const page = retryAfter === null ? await pages?.(failure, request, code === 'NOT_FOUND') : null
      if (page) {
        set.status = page.status
        return page
      }
      const surface = failure instanceof RequestRefusal ? surfaces.find(({ paths }) => paths.test(path)) : undefined
      if (surface) return surface.render(failure)
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
