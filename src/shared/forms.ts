import { maxJsonBodyBytes, mediaTypeOf, readBounded } from './body'
import { formHoldsNul, nulRefusal } from './nul'

/**
 * Form-encoded bodies read by hand rather than by the framework, so a handler sees repeated fields (which the
 * OAuth RFCs require us to refuse) and decides itself how to answer a malformed body. A field holding U+0000
 * (`%00`, or the raw byte) is refused here for every form: the error plugin answers in the path's shape.
 */
export async function readForm(request: Request): Promise<URLSearchParams | null> {
  if (mediaTypeOf(request) !== 'application/x-www-form-urlencoded') return null
  const form = new URLSearchParams(new TextDecoder().decode(await readBounded(request, maxJsonBodyBytes)))
  if (formHoldsNul(form)) throw nulRefusal()
  return form
}

/** Names that occur more than once in the parameters. */
export function repeatedNames(params: URLSearchParams): string[] {
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const name of params.keys()) {
    if (seen.has(name)) repeated.add(name)
    seen.add(name)
  }
  return [...repeated]
}

/** A parameter's value, with an empty value read as absent (RFC 6749 §3.1). */
export function param(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name)
  return value === null || value === '' ? undefined : value
}
