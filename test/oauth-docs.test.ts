// Swagger: every OAuth and settings operation is documented, and Swagger UI's "Authorize" works against this
// server through the built-in documentation client and its oauth2-redirect.html.
import { expect, test } from 'bun:test'
import { harness } from './support/helpers'
import { approve, postOAuth, signedIn } from './support/oauth-helpers'

const base = 'http://threadhouse.test'

test('OpenAPI documents every OAuth endpoint and settings operation with models and tags', async () => {
  await using h = await harness()
  const { body: spec } = await h.call('GET', '/swagger/json')
  const operations = Object.entries(spec.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap(
    ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, op })),
  )
  const ids = operations.map((operation) => operation.id)
  expect(ids).toEqual(
    expect.arrayContaining([
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/api/v1',
      'GET /oauth/authorize',
      'POST /oauth/authorize',
      'POST /oauth/token',
      'POST /oauth/token/revoke',
      'POST /oauth/register',
      'GET /settings/api/session',
      'GET /settings/api/connected-apps',
      'DELETE /settings/api/connected-apps/{clientId}',
      'POST /settings/api/oauth-clients',
      'GET /settings/api/oauth-clients',
      'GET /settings/api/oauth-clients/{clientId}',
      'POST /settings/api/oauth-clients/{clientId}/secret',
      'DELETE /settings/api/oauth-clients/{clientId}',
      'POST /settings/api/registration-tokens',
    ]),
  )
  expect(ids.filter((id) => id.includes('login') || id.includes('logout') || id.startsWith('OPTIONS'))).toEqual([])
  for (const { op } of operations) expect(op.tags?.length).toBeGreaterThan(0)
  const token = spec.paths['/oauth/token'].post
  expect(Object.keys(token.requestBody.content)).toEqual(['application/x-www-form-urlencoded'])
  expect(JSON.stringify(token.requestBody)).toContain('code_verifier')
  expect(JSON.stringify(token.responses['200'])).toContain('refresh_token')
  expect(JSON.stringify(spec.paths['/oauth/register'].post.requestBody)).toContain('redirect_uris')
  expect(spec.paths['/oauth/authorize'].get.parameters.map((p: { name: string }) => p.name)).toContain('code_challenge')
})

test('the OAuth security scheme points Swagger UI at this server, with the built-in client preset', async () => {
  await using h = await harness()
  const { body: spec } = await h.call('GET', '/swagger/json')
  expect(spec.components.securitySchemes.oauth2).toEqual({
    type: 'oauth2',
    description: expect.any(String),
    flows: {
      authorizationCode: {
        authorizationUrl: `${base}/oauth/authorize`,
        tokenUrl: `${base}/oauth/token`,
        refreshUrl: `${base}/oauth/token`,
        scopes: {
          'threads:read': expect.any(String),
          'threads:read:own': expect.any(String),
          'threads:write': expect.any(String),
          'audit:read': expect.any(String),
        },
      },
    },
  })
  expect(spec.security).toEqual([{ bearer: [] }, { oauth2: [] }])
  // An operation's own list replaces the root's: each keeps OAuth, or Authorize would not reach the API.
  expect(spec.paths['/api/v1/threads'].get.security).toEqual([{ bearer: [] }, { oauth2: ['threads:read'] }])
  expect(spec.paths['/api/v1/me'].get.security).toEqual([{ bearer: [] }, { oauth2: [] }])
  const init = await (await h.app.handle(new Request(`${base}/swagger/init.js`))).text()
  expect(init).toContain("clientId: 'threadhouse-docs'")
  expect(init).toContain('usePkceWithAuthorizationCodeGrant: true')
  // Authorize asks for the thread scopes unless the person ticks audit:read too.
  expect(init).toContain('scopes: ["threads:read","threads:read:own","threads:write"]')
  const redirect = await h.app.handle(new Request(`${base}/swagger/assets/oauth2-redirect.html`))
  expect(redirect.status).toBe(200)
})

test('Swagger UI’s Authorize flow: docs client, PKCE, oauth2-redirect.html, then the API', async () => {
  await using h = await harness()
  const { browser } = await signedIn(h)
  const redirectUri = `${base}/swagger/assets/oauth2-redirect.html`
  const { code, verifier } = await approve(browser, {
    clientId: 'threadhouse-docs',
    redirectUri,
    scope: 'threads:read',
  })
  // What Swagger UI posts: form parameters, client_id and no secret.
  const tokens = await postOAuth(h, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    client_id: 'threadhouse-docs',
    redirect_uri: redirectUri,
    code_verifier: verifier ?? '',
  })
  expect(tokens.status).toBe(200)
  expect((await h.call('GET', '/api/v1/threads', { token: tokens.body.access_token })).status).toBe(200)
})
