// The JSON operations behind the settings screens, for scripts and single-page clients (the server-rendered pages,
// src/settings/ and src/admin/, call the same services). Session-cookie authenticated; every write also
// needs the session's CSRF token in `X-CSRF-Token` and a same-origin request (the `trustedForm: 'header'` guard).
import { Elysia, t } from 'elysia'
import { isOrganizationAdmin, requireOrganizationAdmin } from '../auth/members'
import { AuthModel } from '../auth/model'
import { jsonBody } from '../shared/body'
import { noContent, type Responses } from '../shared/responses'
import { toIso } from '../shared/time'
import { pageOrigin, type WebDeps } from '../web/index'
import { trustedForms } from '../web/trusted-form'
import type { OAuthDeps } from './deps'
import {
  createConfidentialClient,
  deleteOrganizationClient,
  getOrganizationClient,
  listConnectedApps,
  listOrganizationClients,
  listOwnClients,
  revokeConnectedApp,
  rotateClientSecret,
} from './management'
import { OAuthModel } from './model'
import { createRegistrationToken } from './registration'

const error = AuthModel.error
const writeErrors = { 400: error, 401: error, 403: error, 404: error }
const tags = ['Settings']
// The session cookie is HttpOnly and the browser sends it by itself: no scheme can be filled in for it (an apiKey
// in a cookie made Swagger UI's Authorize write a cookie of that name from script), so these operations name none,
// and the Settings tag says how they are authenticated.
const security: [] = []

export const oauthSettings = (deps: WebDeps & OAuthDeps & { responses: Responses }) =>
  new Elysia({ name: 'oauth-settings', prefix: '/settings/api' })
    .use(trustedForms(deps))
    .onAfterHandle(({ set }) => {
      set.headers['cache-control'] = 'no-store'
    })
    .get(
      '/session',
      ({ account }) => ({
        user: {
          id: account.user.sub,
          email: account.user.email,
          name: account.user.name,
          role: account.user.role,
          organization_slug: account.user.organizationSlug,
        },
        csrf_token: account.csrf,
      }),
      {
        account: true,
        response: deps.responses({ 200: OAuthModel.settingsSession, 401: error, 403: error }),
        detail: {
          operationId: 'getSettingsSession',
          summary: 'The signed-in person and the CSRF token for writes',
          tags,
          security,
        },
      },
    )
    .get('/connected-apps', ({ account }) => listConnectedApps(deps.oauthGrants, account.user.id, deps.clock.now()), {
      account: true,
      response: deps.responses({ 200: t.Array(OAuthModel.connectedApp), 401: error, 403: error }),
      detail: {
        operationId: 'listConnectedApps',
        summary: 'Connected apps: apps holding live tokens for you',
        tags,
        security,
        description: 'One entry per app: its name, every scope it holds for you and when its tokens were last used.',
      },
    })
    .delete(
      '/connected-apps/:clientId',
      async ({ account, params, request, set }) => {
        const origin = pageOrigin(request, account)
        await revokeConnectedApp(deps.oauthGrants, account.user, params.clientId, deps.clock.now(), origin)
        set.status = 204
      },
      {
        account: true,
        trustedForm: 'header',
        parse: 'none', // no body: whatever is sent is left unread
        params: OAuthModel.clientParams,
        response: deps.responses(writeErrors),
        detail: {
          operationId: 'revokeConnectedApp',
          summary: 'Revoke a connected app (204)',
          responses: noContent('Revoked; no content'),
          tags,
          security,
          description: 'Every token the app holds for you stops working at once; other people’s grants are untouched.',
        },
      },
    )
    .post(
      '/oauth-clients',
      async ({ account, body, request, status }) => {
        const origin = pageOrigin(request, account)
        return status(
          201,
          await createConfidentialClient(deps.oauthClients, account.user, body, deps.clock.now(), origin),
        )
      },
      {
        account: true,
        trustedForm: 'header',
        ...jsonBody(OAuthModel.registrationRequest),
        response: deps.responses({ 201: OAuthModel.registered, ...writeErrors }),
        detail: {
          operationId: 'createOAuthClient',
          summary: 'Create a confidential OAuth client (any member)',
          tags,
          security,
          description:
            'RFC 7591 field names. `token_endpoint_auth_method` is `client_secret_basic` (default) or ' +
            '`client_secret_post`; public clients come only from dynamic registration. The secret is in this ' +
            'response only. The client belongs to your organization.',
        },
      },
    )
    .post(
      '/registration-tokens',
      async ({ account, request, status }) => {
        const origin = pageOrigin(request, account)
        const created = await createRegistrationToken(deps.oauthClients, account.user, deps.clock.now(), origin)
        return status(201, { registration_token: created.token, expires_at: toIso(created.expiresAt) })
      },
      {
        account: true,
        trustedForm: 'header',
        parse: 'none', // no body: whatever is sent is left unread
        response: deps.responses({ 201: OAuthModel.registrationToken, ...writeErrors }),
        detail: {
          operationId: 'createRegistrationToken',
          summary: 'Generate a registration token (any member)',
          tags,
          security,
          description:
            'Single use, valid 60 minutes. A client registered with it at POST /oauth/register belongs to your ' +
            'organization at once.',
        },
      },
    )
    .get(
      '/oauth-clients',
      ({ account }) =>
        isOrganizationAdmin(account.user.role)
          ? listOrganizationClients(deps.oauthClients, account.user.organizationId)
          : listOwnClients(deps.oauthClients, account.user),
      {
        account: true,
        response: deps.responses({ 200: t.Array(OAuthModel.clientSummary), 401: error, 403: error }),
        detail: {
          operationId: 'listOAuthClients',
          summary: 'List OAuth clients: all of the organization’s (owners and admins) or your own (members)',
          tags,
          security,
          description:
            'Owners and admins see every client of the organization; a member sees the clients they created ' +
            'here or registered with a registration token they generated.',
        },
      },
    )
    .get(
      '/oauth-clients/:clientId',
      ({ account, params }) => {
        requireOrganizationAdmin(account.user.role, 'manage OAuth clients')
        return getOrganizationClient(deps.oauthClients, account.user.organizationId, params.clientId)
      },
      {
        account: true,
        params: OAuthModel.clientParams,
        response: deps.responses({ 200: OAuthModel.clientDetail, 401: error, 403: error, 404: error }),
        detail: {
          operationId: 'getOAuthClient',
          summary: 'One OAuth client with its metadata (owners and admins)',
          tags,
          security,
        },
      },
    )
    .post(
      '/oauth-clients/:clientId/secret',
      ({ account, params, request }) => {
        requireOrganizationAdmin(account.user.role, 'manage OAuth clients')
        const origin = pageOrigin(request, account)
        return rotateClientSecret(
          deps.oauthClients,
          account.user.organizationId,
          params.clientId,
          deps.clock.now(),
          origin,
        )
      },
      {
        account: true,
        trustedForm: 'header',
        parse: 'none', // no body: whatever is sent is left unread
        params: OAuthModel.clientParams,
        response: deps.responses({ 200: OAuthModel.rotatedSecret, ...writeErrors, 409: error }),
        detail: {
          operationId: 'rotateOAuthClientSecret',
          summary: 'Rotate a confidential client’s secret (owners and admins)',
          tags,
          security,
          description: 'The old secret fails at once; the new one is in this response only. Issued tokens stay valid.',
        },
      },
    )
    .delete(
      '/oauth-clients/:clientId',
      async ({ account, params, request, set }) => {
        requireOrganizationAdmin(account.user.role, 'manage OAuth clients')
        const origin = pageOrigin(request, account)
        await deleteOrganizationClient(
          deps.oauthClients,
          account.user.organizationId,
          params.clientId,
          deps.clock.now(),
          origin,
        )
        set.status = 204
      },
      {
        account: true,
        trustedForm: 'header',
        parse: 'none', // no body: whatever is sent is left unread
        params: OAuthModel.clientParams,
        response: deps.responses(writeErrors),
        detail: {
          operationId: 'deleteOAuthClient',
          summary: 'Delete an OAuth client (owners and admins, 204)',
          responses: noContent('Deleted; no content'),
          tags,
          security,
          description: 'Removes the client and every code, grant and token it had; its tokens fail at once.',
        },
      },
    )
