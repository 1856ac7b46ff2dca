// Discovery: RFC 8414 authorization server metadata, RFC 9728 protected resource metadata, and the API's 401
// challenge that points MCP clients at them.
import { expect, test } from 'bun:test'
import { adminOnlyScopes, scopes } from '../src/auth/model'
import { defaultClientScopes } from '../src/oauth/clients'
import { harness } from './support/helpers'

const base = 'http://threadhouse.test'

test('authorization server metadata (RFC 8414) names PUBLIC_URL as issuer and every endpoint', async () => {
  await using h = await harness()
  const reply = await h.call('GET', '/.well-known/oauth-authorization-server')
  expect(reply.status).toBe(200)
  expect(reply.body).toEqual({
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/token/revoke`,
    registration_endpoint: `${base}/oauth/register`,
    scopes_supported: ['threads:read', 'threads:read:own', 'threads:write', 'audit:read'],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${base}/swagger`,
  })
  expect(reply.headers.get('access-control-allow-origin')).toBe('*')
})

test('protected resource metadata (RFC 9728) for the host and for /api/v1', async () => {
  await using h = await harness()
  const common = {
    authorization_servers: [base],
    scopes_supported: ['threads:read', 'threads:read:own', 'threads:write', 'audit:read'],
    bearer_methods_supported: ['header'],
    resource_name: 'Threadhouse API',
    resource_documentation: `${base}/swagger`,
  }
  expect((await h.call('GET', '/.well-known/oauth-protected-resource')).body).toEqual({ resource: base, ...common })
  expect((await h.call('GET', '/.well-known/oauth-protected-resource/api/v1')).body).toEqual({
    resource: `${base}/api/v1`,
    ...common,
  })
})

test('every API 401 carries a Bearer challenge with resource_metadata', async () => {
  await using h = await harness()
  const metadata = `resource_metadata="${base}/.well-known/oauth-protected-resource/api/v1"`
  for (const path of ['/api/v1/me', '/api/v1/threads']) {
    const missing = await h.call('GET', path)
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toBe(`Bearer realm="threadhouse", ${metadata}`)
    const invalid = await h.call('GET', path, { token: 'tho_not-a-token' })
    expect(invalid.status).toBe(401)
    expect(invalid.headers.get('www-authenticate')).toBe(
      `Bearer realm="threadhouse", error="invalid_token", ${metadata}`,
    )
  }
})

test('browser clients on other origins may call discovery and the token endpoints (CORS preflight)', async () => {
  await using h = await harness()
  const discovery = [
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/api/v1',
  ]
  for (const path of ['/oauth/token', '/oauth/token/revoke', '/oauth/register', ...discovery]) {
    const response = await h.app.handle(
      new Request(`${base}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' },
      }),
    )
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('access-control-allow-headers')).toContain('Authorization')
  }
})

test('the admin-only scopes, named once, are left out of the MCP server metadata and of unregistered clients', async () => {
  await using h = await harness()
  expect(adminOnlyScopes).toEqual(['audit:read'])
  const threadScopes = scopes.filter((scope) => !adminOnlyScopes.includes(scope))
  const mcp = await h.call('GET', '/.well-known/oauth-protected-resource/mcp')
  expect(mcp.body.scopes_supported).toEqual(threadScopes)
  expect(defaultClientScopes).toEqual(threadScopes)
})
