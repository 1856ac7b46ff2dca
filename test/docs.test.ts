import { expect, test } from 'bun:test'
import { harness } from './support/helpers'

test('OpenAPI describes every API endpoint with schemas, security and tags', async () => {
  await using h = await harness()
  const { status, body: spec } = await h.call('GET', '/swagger/json')
  expect(status).toBe(200)
  expect(spec.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
  const operations = Object.entries(spec.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap(
    ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, op })),
  )
  expect(operations.map((o) => o.id).sort()).toEqual(
    [
      'GET /api/v1/me',
      'GET /api/v1/audit',
      'GET /api/v1/models',
      'GET /api/v1/search',
      'GET /api/v1/limits',
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/api/v1',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /oauth/authorize',
      'POST /oauth/authorize',
      'POST /oauth/register',
      'POST /oauth/token',
      'POST /oauth/token/revoke',
      'GET /settings/api/session',
      'GET /settings/api/connected-apps',
      'DELETE /settings/api/connected-apps/{clientId}',
      'GET /settings/api/oauth-clients',
      'POST /settings/api/oauth-clients',
      'GET /settings/api/oauth-clients/{clientId}',
      'DELETE /settings/api/oauth-clients/{clientId}',
      'POST /settings/api/oauth-clients/{clientId}/secret',
      'POST /settings/api/registration-tokens',
      'POST /api/v1/threads/{threadId}/attachments',
      'GET /api/v1/threads',
      'POST /api/v1/threads',
      'GET /api/v1/threads/events',
      'GET /api/v1/threads/{threadId}',
      'PATCH /api/v1/threads/{threadId}',
      'PATCH /api/v1/threads/{threadId}/settings',
      'DELETE /api/v1/threads/{threadId}',
      'GET /api/v1/threads/{threadId}/export',
      'POST /api/v1/threads/{threadId}/shares',
      'GET /api/v1/threads/{threadId}/shares',
      'GET /api/v1/usage',
      'DELETE /api/v1/threads/{threadId}/shares/{shareId}',
      'POST /api/v1/threads/{threadId}/stop',
      'POST /api/v1/threads/{threadId}/continue',
      'GET /api/v1/threads/{threadId}/attachments/{attachmentId}',
      'GET /api/v1/threads/{threadId}/messages',
      'POST /api/v1/threads/{threadId}/messages',
      'POST /api/v1/threads/{threadId}/messages/{messageId}/feedback',
      'POST /api/v1/threads/{threadId}/messages/{messageId}/regenerate',
      'POST /api/v1/threads/{threadId}/messages/{messageId}/edit',
      'POST /api/v1/threads/{threadId}/messages/{messageId}/activate',
      'GET /api/v1/threads/{threadId}/messages/{messageId}/versions',
      'GET /api/v1/threads/{threadId}/messages/{messageId}/details',
      'GET /api/v1/threads/{threadId}/messages/{messageId}/response',
      'GET /api/v1/threads/{threadId}/messages/{messageId}/response/stream',
      'GET /api/v1/threads/{threadId}/settings',
    ].sort(),
  )
  for (const { op } of operations) expect(op.tags?.length).toBeGreaterThan(0)
  const list = spec.paths['/api/v1/threads'].get
  expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(['200', '401', '403']))
  expect(JSON.stringify(spec.paths['/api/v1/threads'].post.requestBody)).toContain('is_private')
  for (const { id, op } of operations) {
    const statuses = Object.keys((op as { responses: object }).responses)
    if (id.includes(' /api/v1/')) expect({ id, statuses }).toMatchObject({ statuses: expect.arrayContaining(['401']) })
  }
})

test('OpenAPI states the contract’s shapes: 204 without a body, an event stream, integers as integers', async () => {
  await using h = await harness()
  const { body: spec } = await h.call('GET', '/swagger/json')
  const messagePath = '/api/v1/threads/{threadId}/messages/{messageId}'
  const feedback = spec.paths[`${messagePath}/feedback`].post.responses
  // The body and rate checks every request passes add 411, 413, 415 and 429 (test/openapi.test.ts).
  expect(Object.keys(feedback).sort()).toEqual(['204', '400', '401', '403', '404', '411', '413', '415', '429'])
  expect(feedback['204'].content).toBeUndefined()
  const stream = spec.paths[`${messagePath}/response/stream`].get.responses
  expect(Object.keys(stream).sort()).toEqual(['200', '400', '401', '403', '404', '429'])
  expect(Object.keys(stream['200'].content)).toEqual(['text/event-stream'])
  const me = spec.paths['/api/v1/me'].get.responses['200'].content['application/json'].schema.properties
  expect(me.svc_user_id).toMatchObject({ type: 'integer' })
  expect(me.svc_organization_id).toMatchObject({ type: 'integer' })
  const list = spec.paths['/api/v1/threads'].get.responses['200'].content['application/json'].schema.properties
  expect(list.limit).toMatchObject({ type: 'integer', minimum: 1 })
})

test('Swagger UI is served from local assets only', async () => {
  await using h = await harness()
  const page = await h.call('GET', '/swagger')
  expect(page.status).toBe(200)
  expect(page.body).toContain('/swagger/assets/swagger-ui-bundle.js')
  expect(page.body).not.toMatch(/https?:\/\//)
  const bundle = await h.app.handle(new Request('http://threadhouse.test/swagger/assets/swagger-ui-bundle.js'))
  expect(bundle.status).toBe(200)
  expect((await bundle.text()).length).toBeGreaterThan(100_000)
  expect((await h.call('GET', '/swagger/assets/..%2Fpackage.json')).status).toBe(404)
})

test('health and readiness answer without a token; readiness fails once shutdown begins', async () => {
  await using h = await harness()
  expect(await h.call('GET', '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } })
  expect(await h.call('GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } })
  await h.app.decorator.engine.close()
  expect(await h.call('GET', '/readyz')).toMatchObject({ status: 503, body: { status: 'stopping' } })
  expect((await h.call('GET', '/healthz')).status).toBe(200)
})

test('unknown routes are JSON 404s', async () => {
  await using h = await harness()
  const reply = await h.call('GET', '/api/v1/nothing-here')
  expect(reply).toMatchObject({ status: 404, body: { error: 'not_found', message: expect.any(String) } })
})
