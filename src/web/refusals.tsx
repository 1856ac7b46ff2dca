// How the pages say a refusal that met the request before its page had a say (U+0000 in the URL or a form,
// src/shared/nul.ts): a page, as every other page error, rather than the API's JSON.
import type { AppError, ErrorSurface } from '../shared/errors'
import { pageHeaders } from './index'
import { MessagePage } from './pages/message'

/**
 * The paths people visit: the home page, sign-in, the thread pages, settings and administration (their JSON
 * operations under /settings/api excepted) and the authorization endpoint.
 */
const pagePaths = /^\/(?:$|login|logout|threads|settings(?!\/api(?:\/|$))|admin|oauth\/authorize)(?:\/|$)/

function refusalPage(failure: AppError): Response {
  const page = <MessagePage title="Request refused" message={failure.message} detail={failure.code} />
  return new Response(`<!doctype html>${page}`, {
    status: failure.status,
    headers: { ...pageHeaders, 'content-type': 'text/html; charset=utf-8', ...failure.headers },
  })
}

export const pageErrorSurface: ErrorSurface = { paths: pagePaths, render: refusalPage }
