// Helpers for the settings and administration page tests: posting a page's form with the session's CSRF token,
// and checks that every HTML answer carries the strict page headers.
import { expect } from 'bun:test'
import { type Browser, hiddenField } from './oauth-helpers'

/** The signed-in browser's CSRF token, read from a page's sign-out form as a person's browser would have it. */
export async function csrfOf(browser: Browser): Promise<string> {
  const page = await browser.get('/settings/password')
  if (page.status !== 200) throw new Error(`settings page answered ${page.status}`)
  return hiddenField(await page.text(), 'csrf')
}

export type Fields = Record<string, string | string[]>

function formBody(fields: Fields): URLSearchParams {
  const body = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) {
    for (const one of Array.isArray(value) ? value : [value]) body.append(name, one)
  }
  return body
}

/** Posts a form the way the page's own form would: the session's CSRF token plus same-origin fetch metadata. */
export async function submit(
  browser: Browser,
  path: string,
  fields: Fields = {},
  headers: Record<string, string> = {},
): Promise<Response> {
  const csrf = await csrfOf(browser)
  return browser.request('POST', path, {
    body: formBody({ csrf, ...fields }),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: browser.origin,
      'sec-fetch-site': 'same-origin',
      ...headers,
    },
  })
}

/** Posts without going through a page first: for CSRF refusals. */
export function post(browser: Browser, path: string, fields: Fields, headers: Record<string, string> = {}) {
  return browser.request('POST', path, {
    body: formBody(fields),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })
}

export function expectPageHeaders(response: Response): void {
  expect({
    type: response.headers.get('content-type'),
    csp: response.headers.get('content-security-policy'),
    frame: response.headers.get('x-frame-options'),
    cache: response.headers.get('cache-control'),
  }).toEqual({
    type: 'text/html; charset=utf-8',
    csp:
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; form-action 'self'; " +
      "frame-ancestors 'none'; base-uri 'none'",
    frame: 'DENY',
    cache: 'no-store',
  })
}

/** An error page (src/web/errors.tsx) has every page's headers, whichever page failed. */
export const expectErrorPageHeaders = expectPageHeaders

/** The one-time secret shown on a page, as a person would copy it. */
export function secretOn(html: string, id: string): string {
  const match = new RegExp(`<code id="${id}" class="secret"[^>]*>([^<]+)</code>`).exec(html)
  if (!match?.[1]) throw new Error(`no secret ${id} on the page`)
  return match[1]
}

/** Markup a hostile value would create if it were not escaped. */
export const hostile = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'

export function expectEscaped(html: string): void {
  expect(html).not.toContain('<script>window.pwned')
  expect(html).not.toContain('<img src=x')
  expect(html).toContain('&lt;script&gt;window.pwned=1&lt;/script&gt;')
}
