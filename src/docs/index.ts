// OpenAPI document (generated from the routes' TypeBox schemas) and a Swagger UI served from local
// files, so the documentation works on a machine with no internet access.
import { join } from 'node:path'
import { Elysia } from 'elysia'
// The package's main module evaluates the whole browser bundle (several MB of heap, a quarter of a
// second at start-up); absolute-path only says where the files are.
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path'
import { defaultClientScopes, docsClientId } from '../oauth/clients'
import { scopeDescriptions } from '../oauth/model'
import { webhookDocumentation } from '../webhooks/model'
import { appRoutes, buildDocument, type OpenAPIDocument } from './openapi'

const assets = getAbsoluteFSPath()
const assetFiles = new Set([
  'swagger-ui.css',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'favicon-32x32.png',
  'oauth2-redirect.html',
  'oauth2-redirect.js',
])

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Threadhouse API</title>
  <link rel="stylesheet" href="/swagger/assets/swagger-ui.css" />
  <link rel="icon" href="/swagger/assets/favicon-32x32.png" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/swagger/assets/swagger-ui-bundle.js"></script>
  <script src="/swagger/init.js"></script>
</body>
</html>`

// "Authorize" uses the built-in public client (see src/oauth/clients.ts) with PKCE, so it works against this
// server with nothing registered by hand.
const init = `window.ui = SwaggerUIBundle({
  url: '/swagger/json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  oauth2RedirectUrl: location.origin + '/swagger/assets/oauth2-redirect.html',
  persistAuthorization: true,
});
window.ui.initOAuth({ clientId: '${docsClientId}', usePkceWithAuthorizationCodeGrant: true, scopes: ${JSON.stringify(defaultClientScopes)} });`

export const description = `Persistent AI conversations (threads) and the OAuth 2.0 authorization server that guards them.

Authenticate with \`Authorization: Bearer <token>\` (the scheme in any case): a personal access token (\`thp_…\`) or an OAuth access token.
Tokens are accepted in that header only: a token in the query string (\`access_token\`) is refused with 401, as URLs end up in logs.
Each operation names the scope it needs in \`x-required-scope\`; scopes never imply each other, except that
\`threads:read:own\` is accepted where \`threads:read\` is (with only the token user's own threads visible).
The token and the scope are checked before path parameters, query and body, so 401 and 403 come before those 400s.
IDs are matched in the lower case the API writes them. Errors are \`{ "error": code, "message": text }\`; 403 for a missing scope adds \`required_scope\`.

JSON bodies are \`application/json\` only (415 \`unsupported_media_type\` otherwise), at most 1 MiB (413 \`payload_too_large\`,
judged by Content-Length before reading; a body sent without a length is 411 \`length_required\`), and nested at most
32 levels deep (400 \`invalid_request\`). Text holding U+0000, in a body, a path or a query string, is 400
\`invalid_request\` too, on every backend (PostgreSQL cannot store it). A method that a known path does not answer
is 405 \`method_not_allowed\`, with \`Allow\` listing the methods it does (\`components.responses.MethodNotAllowed\`).
API requests with a valid token are limited per token, all others per client address, and a request other than GET or
HEAD from an address over its limit is refused before its body is read (429 \`rate_limited\` with Retry-After).
Answer streams are limited per person (STREAM_LIMIT_PER_USER, default 64) and per process (STREAM_LIMIT_TOTAL,
default 10000): one more is 429 \`too_many_streams\` with Retry-After.

A stream says \`done\` only when the thread is \`ready\`: the stream of an older answer, opened while a newer one is queued
or running, waits for that one to end; the poll answers 202 while the thread is \`waiting\` or \`active\`. A stream's last
event carries \`retry: 86400000\`, so that an EventSource left open does not fetch the ended answer again and again.
The attachment upload, as the specification shows, answers 400 and 413 with \`{ "message" }\` and 422 with \`{ "message", "reason" }\`.
docs/api.md in the repository lists every choice made where the contract is open, and the rate limits.`

const documentation = (publicUrl: string) => ({
  info: { title: 'Threadhouse API', version: '1.0.0', description },
  servers: [{ url: publicUrl }],
  tags: [
    { name: 'Threads', description: 'Conversations' },
    { name: 'Messages', description: 'Messages, AI responses and feedback' },
    { name: 'Models', description: "The models an organization may use, and a thread's model and instructions" },
    { name: 'Attachments', description: 'Files uploaded to a thread, for messages to show and use' },
    { name: 'Share links', description: 'Read-only snapshots of a thread, for anyone holding the link' },
    { name: 'Usage', description: 'Tokens and cost of answers, by day, member, model or thread' },
    { name: 'Audit', description: 'Security-relevant acts of the organization, hash-chained (owners and admins)' },
    { name: 'Identity', description: 'Who the token belongs to' },
    { name: 'OAuth', description: 'OAuth 2.0 authorization server (outside /api/v1)' },
    {
      name: 'Settings',
      description:
        'Operations behind the settings screens, for the browser signed in at /login: its session cookie (HttpOnly, ' +
        'sent by the browser itself, so no scheme of this document) and, on writes, `X-CSRF-Token` from ' +
        '`GET /settings/api/session`. In this page, sign in at /login first, then try them.',
    },
  ],
  components: {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description:
          'Personal access token or OAuth access token. Scopes: threads:read, threads:read:own, threads:write, ' +
          'audit:read (owners and admins).',
      },
      oauth2: {
        type: 'oauth2',
        description: `Authorization code with PKCE. In this page, Authorize uses the built-in public client \`${docsClientId}\` (no secret).`,
        flows: {
          authorizationCode: {
            authorizationUrl: `${publicUrl}/oauth/authorize`,
            tokenUrl: `${publicUrl}/oauth/token`,
            refreshUrl: `${publicUrl}/oauth/token`,
            scopes: scopeDescriptions,
          },
        },
      },
      registrationToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'Registration token (thrg_…) for POST /oauth/register; single use, 60 minutes.',
      },
    },
  },
  security: [{ bearer: [] }, { oauth2: [] }],
  // What Threadhouse posts to organizations' webhook endpoints (docs/webhooks.md).
  webhooks: webhookDocumentation(),
})

export const docs = (publicUrl: string) => {
  const plugin = new Elysia({ name: 'docs' })
  // Built on first request, once every route is registered, and again only if routes were added since.
  let built: { routes: number; document: OpenAPIDocument } | undefined
  return plugin
    .get(
      '/swagger/json',
      () => {
        // Once used by the app, the plugin's route table is the app's.
        const routes = appRoutes(plugin).length
        if (built?.routes !== routes) built = { routes, document: buildDocument(plugin, documentation(publicUrl)) }
        return built.document
      },
      { detail: { hide: true } },
    )
    .get(
      '/swagger',
      ({ set }) => {
        set.headers['content-type'] = 'text/html; charset=utf-8'
        // Swagger UI sets inline styles; every script and stylesheet is served from here.
        set.headers['content-security-policy'] =
          "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
        return page
      },
      { detail: { hide: true } },
    )
    .get('/swagger/init.js', () => new Response(init, { headers: { 'content-type': 'text/javascript' } }), {
      detail: { hide: true },
    })
    .get(
      '/swagger/assets/:file',
      ({ params, status, set }) => {
        if (!assetFiles.has(params.file)) return status(404)
        // The OAuth redirect page only runs its companion script.
        if (params.file.endsWith('.html'))
          set.headers['content-security-policy'] = "default-src 'none'; script-src 'self'"
        return Bun.file(join(assets, params.file))
      },
      { detail: { hide: true } },
    )
}
