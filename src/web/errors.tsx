// How every page reports a failure. Page routes throw (an AppError from a service, or a PageError with words of
// their own) and the app's one error plugin hands the failure to `pageErrors`, which answers a page request with
// an HTML page: its status, a title and a message in a person's words, and one way on. It also decides which
// requests are pages: those whose route resolved a `session`, and any path outside the API that matched no route,
// so an unknown web address gets an HTML 404 while the API keeps its JSON. Two failures are not pages but
// redirects: a page that needs a session sends the visitor to sign in, and a GET on an address only a form posts
// to (a reload of the page a form answered with) goes to the page that form belongs to. A refusal met before any
// route (U+0000 in the URL) is a page on a web address too.

import { findSession } from '../auth/sessions'
import type { SessionRepository } from '../auth/sessions.repository'
import type { PageFailures } from '../shared/error-plugin'
import { AppError, RequestRefusal } from '../shared/errors'
import type { AllowedMethods } from '../shared/methods'
import type { Clock } from '../shared/time'
import { sessionCsrfToken } from './csrf'
import { cookieNames, pageHeaders, pageSessionOf, seeOther, signInPath } from './index'
import { type Viewer, viewerOf } from './layout'
import { MessagePage } from './message'

/** A failure with a page's own words: the title and, where it helps, the one link that leads on. */
export class PageError extends AppError {
  readonly action?: PageAction
  readonly detail?: string

  constructor(
    status: number,
    readonly title: string,
    message: string,
    options: PageErrorOptions = {},
  ) {
    super(status, options.code ?? codeOf(status), message)
    this.action = options.action
    this.detail = options.detail
  }
}

export interface PageAction {
  href: string
  label: string
}

export interface PageErrorOptions {
  /** The one link on, instead of the page a form was on or the enclosing page. */
  action?: PageAction
  /** A technical detail for developers, such as an OAuth error code, shown small under the message. */
  detail?: string
  /** The code in the log's terms; by default the API's code for the status. */
  code?: string
}

function codeOf(status: number): string {
  if (status === 403) return 'forbidden'
  if (status === 404) return 'not_found'
  return status >= 500 ? 'internal_error' : 'invalid_request'
}

/** Titles by status, for failures that bring no words of their own (services speak to the API). */
const titles: Record<number, string> = {
  400: 'That could not be done',
  401: 'Sign in first',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not available here',
  409: 'That could not be done',
  413: 'That is too large',
  415: 'That could not be done',
  429: 'Too many requests',
  503: 'Not available right now',
}

/**
 * Paths that answer JSON (or a protocol's own format) whatever happens: their failures keep the API's shape even
 * where no route matched. Every other path is a web address, the authorization endpoint's consent page among them.
 */
const apiPrefixes = [
  '/api/',
  '/oauth/',
  '/.well-known/',
  '/mcp/',
  '/settings/api/',
  '/swagger/',
  '/healthz/',
  '/readyz/',
]

export function isApiPath(path: string): boolean {
  if (path === '/oauth/authorize') return false
  return apiPrefixes.some((prefix) => path === prefix.replace(/\/$/, '') || path.startsWith(prefix))
}

/** The failure in a person's words: what a page shows, whoever threw it. */
function wordsOf(failure: AppError, unmatched: boolean): { title: string; message: string } {
  if (failure instanceof PageError) return { title: failure.title, message: failure.message }
  if (unmatched && failure.status === 404) {
    return {
      title: 'Page not found',
      message: 'There is no page at this address. Check the address, or start again from your threads.',
    }
  }
  if (failure.status === 404) {
    // A service's "Thread not found": the thing it names is the title.
    return { title: failure.message, message: 'It may have been deleted, or it is not visible to you.' }
  }
  if (failure.status >= 500) {
    return {
      title: 'Something went wrong',
      message: 'Something went wrong on our side, and nothing was changed. Try again in a moment.',
    }
  }
  return { title: titles[failure.status] ?? 'That could not be done', message: failure.message }
}

async function htmlResponse(status: number, page: JSX.Element, headers: Record<string, string>): Promise<Response> {
  return new Response(`<!doctype html>${await page}`, {
    status,
    headers: { ...pageHeaders, 'content-type': 'text/html; charset=utf-8', ...headers },
  })
}

export interface PageErrorDeps {
  sessions: SessionRepository
  clock: Clock
  publicUrl: string
}

export function pageErrors(deps: PageErrorDeps, allowed: AllowedMethods): PageFailures {
  const sessionCookie = cookieNames(deps.publicUrl).session

  /**
   * The page a form at this path belongs to: the path itself where it answers GET, else its nearest enclosing
   * path that does (`/threads/{id}/messages` → `/threads/{id}`), found in the app's own route table, so a new
   * form is covered without a list to update.
   */
  const formPage = (url: URL): string =>
    allowed.of(url.pathname).includes('GET') ? url.pathname + url.search : enclosingPage(url)

  /** The nearest path above this one that answers GET: where a page that failed leads on to. */
  const enclosingPage = (url: URL): string => {
    const segments = url.pathname.split('/')
    while (segments.length > 1) {
      segments.pop()
      const candidate = segments.join('/') || '/'
      if (allowed.of(candidate).includes('GET')) return candidate
    }
    return '/'
  }

  const leadOn = (failure: AppError, url: URL, reading: boolean): PageAction => {
    if (failure instanceof PageError && failure.action) return failure.action
    if (!reading) return { href: formPage(url), label: 'Back' }
    const up = enclosingPage(url)
    return up === '/' ? { href: '/', label: 'Go to the home page' } : { href: up, label: `Go to ${up}` }
  }

  /**
   * Who is signed in, for the navigation of a page no route resolved (an unknown address). Only read: an error
   * page never renews a session, so the cookie's lifetime and the stored one stay the same.
   */
  const viewerFromCookie = async (request: Request): Promise<Viewer | undefined> => {
    const token = new Bun.CookieMap(request.headers.get('cookie') ?? '').get(sessionCookie)
    if (!token) return undefined
    const row = await findSession(deps.sessions, token, deps.clock.now())
    if (!row) return undefined
    return viewerOf({ user: row.user, token, csrf: sessionCsrfToken(token) })
  }

  return async (failure, request, unmatched) => {
    const url = new URL(request.url)
    const session = pageSessionOf(request)
    // A refusal that met the request before any route (U+0000 in the URL, src/shared/nul.ts) goes by the path too.
    const beforeRoute = unmatched || (failure instanceof RequestRefusal && session === undefined)
    const isPage = session !== undefined || (beforeRoute && !isApiPath(url.pathname))
    if (!isPage) return null
    const reading = request.method === 'GET' || request.method === 'HEAD'
    if (failure.status === 401 && session !== undefined) {
      return seeOther(signInPath(reading ? url.pathname + url.search : formPage(url)))
    }
    if (failure.status === 405 && reading) return seeOther(formPage(url))
    const viewer = session ? viewerOf(session) : session === null ? undefined : await viewerFromCookie(request)
    const { title, message } = wordsOf(failure, unmatched)
    const detail = failure instanceof PageError ? failure.detail : undefined
    const action = leadOn(failure, url, reading)
    const page = <MessagePage title={title} message={message} detail={detail} viewer={viewer} action={action} />
    return htmlResponse(failure.status, page, failure.headers)
  }
}
