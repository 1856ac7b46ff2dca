// The share links API under a thread: HTTP in, HTTP out; behaviour lives in service.ts. The pages (the shared
// thread itself, its files, the confirmation, settings and administration) are in pages.tsx.

import { Elysia, t } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { callerOrigin } from '../auth/callers'
import { AuthModel } from '../auth/model'
import { jsonBodies, jsonBody } from '../shared/body'
import { noContent, type Responses } from '../shared/responses'
import { ThreadsModel } from '../threads/model'
import { SharesModel } from './model'
import { createShare, listShares, revokeShare, type ShareDeps } from './service'

export interface ShareRoutesDeps extends AuthDeps, ShareDeps {
  responses: Responses
}

/** Only what the share behaviour uses, out of a plugin's dependencies. */
export function shareDeps(deps: ShareDeps): ShareDeps {
  const { shares, threads, attachments } = deps
  return { shares, threads, attachments, links: deps.links, publicUrl: deps.publicUrl }
}

const error = AuthModel.error
const ownerErrors = { 400: error, 401: error, 403: t.Union([AuthModel.scopeError, error]), 404: error }
const ownerOnly =
  'Owner only (403 `forbidden` for other members who can see the thread, 404 for threads the caller cannot see).'

export const shareRoutes = (deps: ShareRoutesDeps) => {
  const shares = shareDeps(deps)
  return new Elysia({ name: 'shares', prefix: '/api/v1/threads/:threadId/shares' })
    .use(auth(deps))
    .use(jsonBodies)
    .post(
      '',
      async ({ caller, params, body, request, status }) =>
        status(
          201,
          await createShare(shares, caller, params.threadId, body, deps.clock.now(), callerOrigin(request, caller)),
        ),
      {
        scope: 'threads:write',
        params: ThreadsModel.threadParams,
        ...jsonBody(SharesModel.createShareBody),
        response: deps.responses({ 201: SharesModel.createdShare, ...ownerErrors }),
        detail: {
          operationId: 'createShare',
          summary: 'Share a read-only snapshot of a thread by link',
          tags: ['Share links'],
          description:
            'Makes a link, `{PUBLIC_URL}/s/{token}`, that shows anyone holding it the thread’s active messages as ' +
            'they are now, without signing in: later messages, renames and changes never reach it. The token ' +
            'is 192 random bits, answered only here and stored as a SHA-256 hash. `include_files` (default false) ' +
            `decides whether images and files are shown. ${ownerOnly} 403 \`sharing_disabled\` when an owner or ` +
            'admin has turned sharing off for the organization. The link answers 404 from the moment it is ' +
            'revoked, its thread is deleted (its links go with it), sharing is turned off, or its maker is removed ' +
            'from the organization. The body must be a JSON object: `{}` at least. An addition to the specification.',
        },
      },
    )
    .get('', ({ caller, params }) => listShares(shares, caller, params.threadId), {
      scope: 'threads:read',
      params: ThreadsModel.threadParams,
      response: deps.responses({ 200: SharesModel.shareList, ...ownerErrors }),
      detail: {
        operationId: 'listShares',
        summary: 'List the live share links of a thread',
        tags: ['Share links'],
        description: `Newest first, without their tokens (only their creation answered those). ${ownerOnly}`,
      },
    })
    .delete(
      '/:shareId',
      async ({ caller, params, request, set }) => {
        const origin = callerOrigin(request, caller)
        await revokeShare(shares, caller, params.threadId, params.shareId, deps.clock.now(), origin)
        set.status = 204
      },
      {
        scope: 'threads:write',
        parse: 'none', // no body: whatever is sent is left unread
        params: SharesModel.shareParams,
        response: deps.responses(ownerErrors),
        detail: {
          operationId: 'deleteShare',
          summary: 'Revoke a share link (204, no content)',
          tags: ['Share links'],
          description:
            `The link answers 404 from this moment on. ${ownerOnly} 404 too for a link that is not this ` +
            'thread’s, or was already revoked.',
          responses: noContent('Revoked; no content'),
        },
      },
    )
}
