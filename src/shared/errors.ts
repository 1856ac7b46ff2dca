// One error type for the whole API: a refusal says its status, its `error` code and a sentence; the error plugin
// (error-plugin.ts) renders it as the spec's `{ error, message }`.
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

/**
 * A refusal that can meet a request on any path, before or beside its route (today U+0000 in the URL or a form:
 * nul.ts). Routes answer in different shapes (the API's JSON, the OAuth endpoints' RFC 6749 JSON, pages), so the
 * error plugin answers it in the shape of the surface the path belongs to.
 */
export class RequestRefusal extends AppError {}

export const notFound = (what: string): AppError => new AppError(404, 'not_found', `${what} not found`)
export const invalidRequest = (message: string): AppError => new AppError(400, 'invalid_request', message)
export const conflict = (message: string): AppError => new AppError(409, 'conflict', message)
export const forbidden = (message: string): AppError => new AppError(403, 'forbidden', message)

/** One schema failure, as TypeBox reports it (`path` like `/attachment_ids/3`). */
export interface ValidationIssue {
  path?: string
  message?: string
}

/**
 * One readable sentence naming the offending field, from the first failure only: reporting every failure of a
 * hostile value would walk all of it.
 */
export function describeIssue(where: string, issue: ValidationIssue | undefined): string {
  if (!issue) return `Invalid ${where}`
  const field = issue.path ? issue.path.replace(/^\//, '').replaceAll('/', '.') : ''
  if (where === 'body' && !field && issue.message === 'Expected object') return 'The body must be a JSON object'
  const message = issue.message ?? 'is invalid'
  if (message === 'Unexpected property' || /additional/i.test(message)) return `Unknown ${where} property "${field}"`
  return field ? `Invalid ${where} field "${field}": ${message}` : `Invalid ${where}: ${message}`
}
