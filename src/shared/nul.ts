// U+0000 in a request's text. PostgreSQL's text cannot store it (a query holding it fails), so no route takes it,
// on either backend: SQLite is held to the same rule, so a client meets one behaviour wherever it runs. JSON bodies
// are judged as they are parsed (body.ts). The URL, every path and query parameter, is judged once per request:
// before any route (http.ts), or behind a token or a session once the caller has passed (body.ts, callerChecked),
// so that 401 and 403 still come first there. Form bodies are judged where they are read (forms.ts, and the
// thread pages' own reader), and a Basic header's client ID and secret at the OAuth endpoints. Each refusal is a
// `RequestRefusal`, which the error plugin answers in the shape of the path it came to: the API's JSON, RFC 6749's,
// or a page; /mcp answers in JSON-RPC, as for everything after its token check.
import { RequestRefusal } from './errors'

export const nulMessage = 'Text may not contain the NUL character (U+0000)'

export const nulRefusal = (): RequestRefusal => new RequestRefusal(400, 'invalid_request', nulMessage)

/** Whether any string in the value, or any key, holds U+0000. */
export function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (typeof value !== 'object' || value === null) return false
  if (Array.isArray(value)) return value.some(holdsNul)
  return Object.entries(value).some(([key, item]) => key.includes('\u0000') || holdsNul(item))
}

/**
 * Whether a request URL's path or query decodes to U+0000 anywhere. A URL carries it only percent-encoded (a raw
 * NUL never gets past the HTTP parser), and `%00` is its only encoding: `%2500` decodes to the text `%00`.
 */
export function urlHoldsNul(url: string): boolean {
  return url.includes('%00')
}

/**
 * Whether a parsed form holds U+0000 in a field's name or text value. Files are the upload's business: their names
 * lose every control character, U+0000 included (src/attachments/form.ts), and their bytes are checked by kind.
 */
export function formHoldsNul(form: Iterable<[string, unknown]>): boolean {
  for (const [name, value] of form) {
    if (name.includes('\u0000') || (typeof value === 'string' && value.includes('\u0000'))) return true
  }
  return false
}
