// Helpers for driving sign-in, consent and the OAuth endpoints the way a browser and a client would: a cookie
// jar, the contract's form fields, PKCE, and token requests. Work in-process (app.handle) or over real HTTP.
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import { sha256 } from '@oslojs/crypto/sha2'
import { encodeBase64urlNoPadding } from '@oslojs/encoding'
import { createSession } from '../../src/auth/sessions'
import { cookieNames } from '../../src/web'
import { signInOrigin, tokenHolder } from './audit'
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

export const loopbackRedirect = 'http://127.0.0.1/callback'

/** Registers a client through POST /oauth/register and returns the response body. */
export async function register(
  h: Harness,
  metadata: Record<string, unknown> = {},
  registrationToken?: string,
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
): Promise<any> {
  const reply = await h.call('POST', '/oauth/register', {
    body: {
      client_name: 'Test app',
      redirect_uris: [loopbackRedirect],
      token_endpoint_auth_method: 'none',
      ...metadata,
    },
    headers: registrationToken ? { authorization: `Bearer ${registrationToken}` } : {},
  })
  if (reply.status !== 201) throw new Error(`registration failed: ${reply.status} ${JSON.stringify(reply.body)}`)
  return reply.body
}

export interface AuthorizationOptions {
  clientId: string
  redirectUri?: string
  scope?: string
  state?: string
  /** Omit PKCE entirely (confidential clients may). */
  withoutPkce?: 'yes'
}

/** Runs sign-in-free authorization for a signed-in browser: approves, and returns the code and PKCE verifier. */
export async function approve(
  browser: Browser,
  options: AuthorizationOptions,
): Promise<{ code: string; verifier: string | undefined; location: URL }> {
  const { verifier, challenge } = pkce()
  const path = authorizeUrl({
    response_type: 'code',
    client_id: options.clientId,
    redirect_uri: options.redirectUri ?? 'http://127.0.0.1:53682/callback',
    scope: options.scope ?? 'threads:read threads:write',
    state: options.state ?? 'state-1',
    code_challenge: options.withoutPkce ? undefined : challenge,
    code_challenge_method: options.withoutPkce ? undefined : 'S256',
  })
  const response = await decide(browser, path, 'approve')
  const location = locationOf(response)
  const code = location.searchParams.get('code')
  if (!code) throw new Error(`no code in ${location.href}`)
  return { code, verifier: options.withoutPkce ? undefined : verifier, location }
}

/**
 * A signed-in browser for a new user of organization `org`. It holds a session opened as a successful sign-in opens
 * one (`createSession`, in the session cookie), without going through the sign-in page: that costs an argon2id
 * verification, a tenth of a second and 64 MiB, and the tests of signing in (sessions.test.ts and others) use
 * `Browser.signIn`, which does.
 */
export async function signedIn(
  h: Harness,
  options: Parameters<Harness['user']>[0] = {},
): Promise<{ browser: Browser; user: Awaited<ReturnType<Harness['user']>> }> {
  const user = await h.user(options)
  const browser = Browser.inProcess(h)
  const { token } = await createSession(
    h.store.sessions,
    await tokenHolder(h.store, user.id),
    h.clock.now(),
    signInOrigin,
    'password',
  )
  browser.cookies.set(cookieNames(browser.origin).session, token)
  return { browser, user }
}

/** Public client, signed-in user, approval and code exchange: the tokens of a fresh grant. */
export async function publicGrant(
  h: Harness,
  browser: Browser,
  clientId: string,
  scope = 'threads:read threads:write',
): Promise<TokenReply> {
  const redirectUri = 'http://127.0.0.1:53682/callback'
  const { code, verifier } = await approve(browser, { clientId, redirectUri, scope })
  return postOAuth(h, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: clientId,
    code_verifier: verifier ?? '',
  })
}

/** Calls a settings operation as the signed-in browser, with the session's CSRF token on writes. */
export async function settings(
  browser: Browser,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<TokenReply> {
  const session = await browser.get('/settings/api/session')
  const csrf = session.status === 200 ? ((await session.json()) as { csrf_token: string }).csrf_token : ''
  const response = await browser.request(method, `/settings/api${path}`, {
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: {
      ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) }
}

/** An MCP client's storage, as a desktop app keeps it; opening the browser is left to the test. */
export class McpClientProvider implements OAuthClientProvider {
  constructor(private readonly clientName = 'MCP test client') {}

  information: OAuthClientInformationMixed | undefined
  stored: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined
  private readonly stateValue = crypto.randomUUID()

  get redirectUrl(): string {
    return 'http://127.0.0.1:33418/callback'
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
  state(): string {
    return this.stateValue
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.information
  }
  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.information = information
  }
  tokens(): OAuthTokens | undefined {
    return this.stored
  }
  saveTokens(tokens: OAuthTokens): void {
    this.stored = tokens
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier
  }
  codeVerifier(): string {
    return this.verifier
  }
}
