// Helpers for driving sign-in, consent and the OAuth endpoints the way a browser and a client would: a cookie
// jar, the contract's form fields, PKCE, and token requests. Work in-process (app.handle) or over real HTTP.
import { sha256 } from '@oslojs/crypto/sha2'
import { encodeBase64urlNoPadding } from '@oslojs/encoding'
import type { Harness } from './helpers'

export const password = 'correct horse battery'

type Send = (request: Request) => Promise<Response>

/** A browser: keeps cookies, never follows redirects, and posts forms the way the pages describe them. */
export class Browser {
  readonly cookies = new Map<string, string>()

  constructor(
    private readonly send: Send,
    readonly origin: string,
    /** Headers a real browser adds to its own form posts; scripts send none. */
    private readonly formHeaders: Record<string, string> = {},
  ) {}

  static inProcess(h: Harness, origin = 'http://threadhouse.test'): Browser {
    return new Browser((request) => h.app.handle(request), origin)
  }

  static overHttp(origin: string): Browser {
    return new Browser((request) => fetch(request, { redirect: 'manual' }), origin)
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  private remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      const expired = attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute))
      if (expired || value === '') this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  async request(
    method: string,
    path: string,
    init: { body?: RequestInit['body']; headers?: Record<string, string> } = {},
  ) {
    const url = path.startsWith('http') ? path : `${this.origin}${path}`
    const headers: Record<string, string> = { ...init.headers }
    if (this.cookies.size > 0) headers.cookie = this.cookieHeader()
    const response = await this.send(new Request(url, { method, headers, body: init.body }))
    this.remember(response)
    return response
  }

  get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.request('GET', path, { headers })
  }

  postForm(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.request('POST', path, {
      body: new URLSearchParams(fields),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...this.formHeaders, ...headers },
    })
  }

  /** Signs in through the real page: GET /login, then POST the contract's fields with the form's csrf. */
  async signIn(email: string, secret = password, next = '/'): Promise<Response> {
    const page = await this.get(`/login?next=${encodeURIComponent(next)}`)
    const html = await page.text()
    return this.postForm('/login', { email, password: secret, csrf: hiddenField(html, 'csrf'), next })
  }
}

/** The value of a hidden input, unescaped as a browser would. */
export function hiddenField(html: string, name: string): string {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(html)
  if (!match?.[1] && match?.[1] !== '') throw new Error(`no hidden field ${name} in page`)
  return unescapeHtml(match[1])
}

export function formAction(html: string): string {
  const match = /<form method="post" action="([^"]*)"/.exec(html.slice(html.indexOf('<main')))
  if (!match?.[1]) throw new Error('no form in page')
  return unescapeHtml(match[1])
}

function unescapeHtml(value: string): string {
  return value
    .replaceAll('&#34;', '"')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&')
}

export function pkce(): { verifier: string; challenge: string } {
  const bytes = new Uint8Array(32)
  crypto.getRandomValues(bytes)
  const verifier = encodeBase64urlNoPadding(bytes)
  return { verifier, challenge: encodeBase64urlNoPadding(sha256(new TextEncoder().encode(verifier))) }
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value)
  return `/oauth/authorize?${query}`
}

/** Opens the consent page for a signed-in browser and answers it; returns the redirect's Location. */
export async function decide(browser: Browser, path: string, decision: 'approve' | 'deny'): Promise<Response> {
  const page = await browser.get(path)
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${await page.text()}`)
  const html = await page.text()
  return browser.postForm(formAction(html), { csrf: hiddenField(html, 'csrf'), decision })
}

export function locationOf(response: Response): URL {
  const location = response.headers.get('location')
  if (!location) throw new Error(`no Location header (status ${response.status})`)
  return new URL(location)
}

export function basic(clientId: string, secret: string): string {
  return `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`)}`
}

export interface TokenReply {
  status: number
  headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any
}

/** POSTs a form to an OAuth endpoint in-process and parses the JSON answer. */
export async function postOAuth(
  h: Harness,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<TokenReply> {
  const response = await h.app.handle(
    new Request(`http://threadhouse.test${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
    }),
  )
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) }
}
