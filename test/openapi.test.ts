// The OpenAPI document is a deliverable: a third-party validator accepts it, it says exactly which media types and
// statuses each operation has, and a client generated from it by a third-party generator type-checks and holds a
// whole conversation with a real listening server.
//
// The client's types are generated in each run, into a temporary folder, rather than committed: the document is
// itself generated from the routes, so a committed copy would only be a second source of truth that every
// description edit puts out of date; generating it here still fails the run when the document stops producing a
// client that type-checks, or one whose types accept what the API refuses.
import { expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import SwaggerParser from '@apidevtools/swagger-parser'
import { createClient as createHeyApiClient } from '@hey-api/openapi-ts'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { type Harness, harness, publicUrl, ScriptedRunner } from './support/helpers'

const root = join(import.meta.dir, '..')
const threadsPath = '/api/v1/threads'
const messagePath = '/api/v1/threads/{threadId}/messages/{messageId}'

type Json = Record<string, unknown>
interface Answer {
  description?: string
  $ref?: string
  headers?: Json
  content?: Record<string, { schema?: Json }>
}
interface Operation {
  operationId?: string
  requestBody?: { content: Record<string, Json> }
  responses: Record<string, Answer>
  parameters?: { name: string; in: string; schema: Json }[]
}
interface Spec {
  openapi: string
  info: { description: string }
  paths: Record<string, Record<string, Operation>>
  components: { responses: Record<string, Answer> }
}

/** The operation, which the document must have. */
function operation(spec: Spec, method: string, path: string): Operation {
  const found = spec.paths[path]?.[method.toLowerCase()]
  if (!found) throw new Error(`${method} ${path} is not in the document`)
  return found
}

async function specOf(h: Harness): Promise<Spec> {
  const reply = await h.call('GET', '/swagger/json')
  expect(reply.status).toBe(200)
  return reply.body
}

function operations(spec: Spec): { id: string; path: string; method: string; op: Operation }[] {
  return Object.entries(spec.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, path, method, op })),
  )
}

/** Every problem the validator reports, as readable lines (empty when the document is valid). */
async function validationErrors(document: unknown): Promise<string[]> {
  try {
    await SwaggerParser.validate(structuredClone(document) as never)
    return []
  } catch (error) {
    const details = (error as { details?: { instancePath?: string; message?: string }[] }).details
    return details?.map((d) => `${d.instancePath} ${d.message}`) ?? [String(error)]
  }
}

test('the document is valid OpenAPI 3.1 for @apidevtools/swagger-parser, which does refuse a broken copy', async () => {
  await using h = await harness()
  const spec = await specOf(h)
  expect(spec.openapi).toMatch(/^3\.1\.\d+$/)
  expect(await validationErrors(spec)).toEqual([])
  // The validator looks at 3.1 documents: a response without a description is refused.
  const broken = structuredClone(spec)
  delete operation(broken, 'GET', threadsPath).responses['200']?.description
  expect((await validationErrors(broken)).length).toBeGreaterThan(0)
})

test('every operation has a short, unique camelCase operationId that its route chose', async () => {
  await using h = await harness()
  const spec = await specOf(h)
  const webhooks = operations({ ...spec, paths: (spec as { webhooks?: Spec['paths'] }).webhooks ?? {} })
  const ids = [...operations(spec), ...webhooks].map(({ id, op }) => ({ id, operationId: op.operationId }))
  for (const { id, operationId } of ids) {
    // The converter's fallback spells out the path (`getApiV1ThreadsByThreadId`): the document keeps only a route's
    // own `detail.operationId`, so a route that names none fails here.
    expect({ id, operationId }).toEqual({ id, operationId: expect.stringMatching(/^[a-z]+(?:[A-Z][a-z0-9]*)*$/) })
    expect({ id, operationId }).not.toEqual({ id, operationId: expect.stringMatching(/By[A-Z]|V1|Index$/) })
  }
  const counts = Map.groupBy(ids, ({ operationId }) => operationId)
  expect([...counts].filter(([, uses]) => uses.length > 1)).toEqual([])
  // The names clients are written against, pinned: renaming one breaks every generated client.
  const named = Object.fromEntries(ids.map(({ id, operationId }) => [id, operationId]))
  expect(named).toMatchObject({
    [`GET ${threadsPath}`]: 'listThreads',
    [`POST ${threadsPath}`]: 'createThread',
    [`GET ${threadsPath}/{threadId}`]: 'getThread',
    [`POST ${threadsPath}/{threadId}/messages`]: 'sendMessage',
    [`GET ${messagePath}/response`]: 'getResponse',
    [`GET ${messagePath}/response/stream`]: 'streamResponse',
    'POST thread.created': 'onThreadCreated',
    'POST answer.completed': 'onAnswerCompleted',
  })
})

/** OpenAPI 3.1's Schema Object: JSON Schema 2020-12's vocabularies and OpenAPI's own few keywords. */
const schemaKeywords = new Set([
  // core
  ...['$schema', '$id', '$ref', '$anchor', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$comment', '$defs'],
  // applicators
  ...['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', 'prefixItems', 'items'],
  ...['contains', 'properties', 'patternProperties', 'additionalProperties', 'propertyNames'],
  ...['unevaluatedItems', 'unevaluatedProperties'],
  // validation
  ...['type', 'enum', 'const', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum'],
  ...['maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains'],
  ...['maxProperties', 'minProperties', 'required', 'dependentRequired'],
  // meta-data, format, content
  ...['title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', 'examples', 'format'],
  ...['contentEncoding', 'contentMediaType', 'contentSchema'],
  // OpenAPI 3.1
  ...['discriminator', 'xml', 'externalDocs', 'example'],
])
const schemaMaps = ['properties', 'patternProperties', '$defs', 'dependentSchemas']
const schemaLists = ['allOf', 'anyOf', 'oneOf', 'prefixItems']
const subschemas = ['not', 'if', 'then', 'else', 'items', 'contains', 'additionalProperties', 'propertyNames']
const moreSubschemas = ['unevaluatedItems', 'unevaluatedProperties', 'contentSchema']

/** `where: key` for each key of `schema` and its subschemas that no vocabulary defines (`x-` extensions allowed). */
function foreignKeys(schema: unknown, where: string): string[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return []
  const node = schema as Json
  const own = Object.keys(node)
    .filter((key) => !schemaKeywords.has(key) && !key.startsWith('x-'))
    .map((key) => `${where}: ${key}`)
  const children = [
    ...schemaMaps.flatMap((key) =>
      Object.entries((node[key] as Json | undefined) ?? {}).map(([name, child]) => [`${where}.${key}.${name}`, child]),
    ),
    ...schemaLists.flatMap((key) =>
      ((node[key] as unknown[] | undefined) ?? []).map((child, i) => [`${where}.${key}[${i}]`, child]),
    ),
    ...[...subschemas, ...moreSubschemas].map((key) => [`${where}.${key}`, node[key]]),
  ]
  return [...own, ...children.flatMap(([path, child]) => foreignKeys(child, path as string))]
}

/** Every schema of the document: components, parameters, bodies, answers and their headers, webhooks too. */
function documentSchemas(spec: Spec & { webhooks?: Spec['paths']; components: Json }): [string, unknown][] {
  const media = (where: string, content: Record<string, { schema?: Json }> | undefined): [string, unknown][] =>
    Object.entries(content ?? {}).map(([type, m]) => [`${where} ${type}`, m.schema])
  const answer = (where: string, response: Answer): [string, unknown][] => [
    ...media(where, response.content),
    ...Object.entries(response.headers ?? {}).map(([name, h]): [string, unknown] => [
      `${where} header ${name}`,
      (h as Json).schema,
    ]),
  ]
  const operationSchemas = (where: string, op: Operation): [string, unknown][] => [
    ...(op.parameters ?? []).map((p): [string, unknown] => [`${where} ${p.in} ${p.name}`, p.schema]),
    ...media(`${where} body`, op.requestBody?.content as Record<string, { schema?: Json }> | undefined),
    ...Object.entries(op.responses).flatMap(([status, response]) => answer(`${where} ${status}`, response)),
  ]
  const all = (paths: Spec['paths'] | undefined, prefix: string) =>
    Object.entries(paths ?? {}).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, op]) => operationSchemas(`${prefix}${method} ${path}`, op)),
    )
  return [
    ...Object.entries((spec.components.schemas as Json | undefined) ?? {}).map(([name, schema]): [string, unknown] => [
      `components.schemas.${name}`,
      schema,
    ]),
    ...Object.entries(spec.components.responses as Record<string, Answer>).flatMap(([name, response]) =>
      answer(`components.responses.${name}`, response),
    ),
    ...all(spec.paths, ''),
    ...all(spec.webhooks, 'webhook '),
  ]
}

test('no schema carries a key outside the OpenAPI 3.1 and JSON Schema vocabularies, as the server runs', async () => {
  // Production does not check answers against their schemas, and Elysia marks those it skips (`noValidate`).
  await using h = await harness({ validateResponses: false })
  const spec = await specOf(h)
  const found = documentSchemas(spec as never).flatMap(([where, schema]) => foreignKeys(schema, where))
  expect(found).toEqual([])
  expect(documentSchemas(spec as never).length).toBeGreaterThan(100)
  // The check does see a foreign key.
  expect(foreignKeys({ type: 'object', properties: { a: { type: 'string', noValidate: true } } }, 's')).toEqual([
    's.properties.a: noValidate',
  ])
  expect(await validationErrors(spec)).toEqual([])
  // The same document whether or not answers are checked.
  await using checking = await harness()
  expect(spec).toEqual(await specOf(checking))
})

test('request bodies: JSON only as application/json, the upload as multipart, forms where OAuth says so', async () => {
  await using h = await harness()
  const spec = await specOf(h)
  const bodies = Object.fromEntries(
    operations(spec)
      .filter(({ op }) => op.requestBody)
      .map(({ id, op }) => [id, Object.keys(op.requestBody?.content ?? {})]),
  )
  const json = ['application/json']
  const form = ['application/x-www-form-urlencoded']
  expect(bodies).toEqual({
    [`POST ${threadsPath}`]: json,
    [`PATCH ${threadsPath}/{threadId}`]: json,
    [`PATCH ${threadsPath}/{threadId}/settings`]: json,
    [`POST ${threadsPath}/{threadId}/messages`]: json,
    [`POST ${messagePath}/feedback`]: json,
    [`POST ${messagePath}/regenerate`]: json,
    [`POST ${messagePath}/edit`]: json,
    [`POST ${threadsPath}/{threadId}/attachments`]: ['multipart/form-data'],
    [`POST ${threadsPath}/{threadId}/shares`]: json,
    'POST /oauth/authorize': form,
    'POST /oauth/token': form,
    'POST /oauth/token/revoke': form,
    'POST /oauth/register': json,
    'POST /settings/api/oauth-clients': json,
  })
})

test('statuses: each with a description, shared ones by reference, the right media types for each answer', async () => {
  await using h = await harness()
  const spec = await specOf(h)
  const all = operations(spec)
  for (const { id, method, op } of all) {
    for (const [status, response] of Object.entries(op.responses)) {
      // A response object holds only response keys: no schema keywords leaked onto it.
      const keys = Object.keys(response).filter((key) => !['description', 'headers', 'content', '$ref'].includes(key))
      expect({ id, status, keys }).toEqual({ id, status, keys: [] })
      expect({ id, status, described: typeof response.description === 'string' || '$ref' in response }).toEqual({
        id,
        status,
        described: true,
      })
    }
    const statuses = Object.keys(op.responses)
    const upload = id === `POST ${threadsPath}/{threadId}/attachments`
    const expected = ['429', ...(method === 'get' || upload ? [] : ['411', '413'])]
    expect({ id, statuses }).toEqual({ id, statuses: expect.arrayContaining(expected) })
    const jsonBody = Object.keys(op.requestBody?.content ?? {}).join() === 'application/json'
    if (jsonBody && id !== 'POST /oauth/register')
      expect({ id, statuses }).toMatchObject({ statuses: expect.arrayContaining(['415']) })
    if (id.includes(' /api/v1/')) {
      expect({ id, statuses }).toEqual({ id, statuses: expect.arrayContaining(['401']) })
    }
  }
  const ref = (name: string) => ({ $ref: `#/components/responses/${name}` })
  const create = operation(spec, 'POST', threadsPath).responses
  expect(create).toMatchObject({
    411: ref('LengthRequired'),
    413: ref('PayloadTooLarge'),
    415: ref('UnsupportedMediaType'),
  })
  expect(Object.keys(spec.components.responses).sort()).toEqual([
    'LengthRequired',
    'MethodNotAllowed',
    'PayloadTooLarge',
    'TooManyRequests',
    'UnsupportedMediaType',
  ])
  expect(spec.components.responses.TooManyRequests).toMatchObject({ headers: { 'Retry-After': expect.any(Object) } })
  expect(spec.components.responses.MethodNotAllowed).toMatchObject({ headers: { Allow: expect.any(Object) } })

  const feedback = operation(spec, 'POST', `${messagePath}/feedback`).responses
  expect(feedback['204']).toEqual({ description: expect.any(String) })
  for (const path of ['/settings/api/connected-apps/{clientId}', '/settings/api/oauth-clients/{clientId}']) {
    expect(operation(spec, 'DELETE', path).responses['204']).toEqual({ description: expect.any(String) })
  }
  const stream = operation(spec, 'GET', `${messagePath}/response/stream`)
  expect(Object.keys(stream.responses['200']?.content ?? {})).toEqual(['text/event-stream'])
  expect(stream.responses['429']?.description).toContain('too_many_streams')
  expect(stream.parameters?.map((p) => `${p.in} ${p.name}`)).toContain('header last-event-id')
  const download = operation(spec, 'GET', `${threadsPath}/{threadId}/attachments/{attachmentId}`).responses
  expect(Object.keys(download['200']?.content ?? {}).sort()).toEqual(
    [
      'application/pdf',
      'image/gif',
      'image/jpeg',
      'image/png',
      'image/webp',
      'text/csv',
      'text/markdown',
      'text/plain',
    ].sort(),
  )
  expect(download['304']).toEqual({ description: expect.any(String) })
  // The upload's own client errors have no `error` field, as the specification shows.
  const upload = operation(spec, 'POST', `${threadsPath}/{threadId}/attachments`).responses
  for (const status of ['400', '413', '422']) {
    const schema = upload[status]?.content?.['application/json']?.schema
    expect({ status, fields: Object.keys((schema?.properties as Json | undefined) ?? {}) }).toEqual({
      status,
      fields: status === '422' ? ['message', 'reason'] : ['message'],
    })
  }
})

test('query integers are integers, and no OpenAPI 3.0 keyword is left in the 3.1 document', async () => {
  await using h = await harness()
  const spec = await specOf(h)
  for (const path of [threadsPath, `${threadsPath}/{threadId}/messages`]) {
    const limit = operation(spec, 'GET', path).parameters?.find((p) => p.name === 'limit')
    expect(limit?.schema).toEqual({ type: 'integer', minimum: 1, default: 50, description: expect.any(String) })
  }
  const text = JSON.stringify(spec)
  expect(text).not.toContain('"nullable"')
  expect(text).not.toContain('"format":"integer"')
})

test('what the server answers is what the document says, status and media type', async () => {
  await using h = await harness({ config: { RATE_LIMIT_API_PER_MINUTE: 5 } })
  const spec = await specOf(h)
  const { token } = await h.user()
  const auth = { authorization: `Bearer ${token}` }
  const send = (method: string, path: string, init: RequestInit = {}) =>
    h.app.handle(new Request(`${publicUrl}${path}`, { method, ...init }))
  const seen: number[] = []
  const documented = (method: string, template: string, response: Response): void => {
    seen.push(response.status)
    const declared = operation(spec, method, template).responses[String(response.status)]
    const shared = declared?.$ref ? spec.components.responses[declared.$ref.split('/').at(-1) ?? ''] : declared
    const type = response.headers.get('content-type')?.split(';')[0]
    const types = Object.keys(shared?.content ?? {})
    expect({ template, status: response.status, documented: declared !== undefined, types }).toEqual({
      template,
      status: response.status,
      documented: true,
      types: type ? expect.arrayContaining([type]) : [],
    })
  }
  const created = await send('POST', threadsPath, {
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{}',
  })
  documented('POST', threadsPath, created)
  const thread = ((await created.json()) as { thread_id: string }).thread_id
  documented(
    'POST',
    threadsPath,
    await send('POST', threadsPath, { headers: { ...auth, 'content-type': 'text/plain' }, body: '{}' }),
  )
  documented(
    'POST',
    threadsPath,
    await send('POST', threadsPath, {
      headers: { ...auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    }),
  )
  documented(
    'PATCH',
    `${threadsPath}/{threadId}`,
    await send('PATCH', `${threadsPath}/${thread}`, {
      headers: { ...auth, 'content-type': 'application/json' },
      body: `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`,
    }),
  )
  documented(
    'POST',
    `${threadsPath}/{threadId}/stop`,
    await send('POST', `${threadsPath}/${thread}/stop`, { headers: auth }),
  )
  // The fifth request with the token this minute is its last (the 411 never reached the token check).
  documented('GET', threadsPath, await send('GET', `${threadsPath}?limit=2`, { headers: auth }))
  documented('GET', threadsPath, await send('GET', threadsPath, { headers: auth }))
  expect(seen).toEqual([201, 415, 411, 400, 409, 200, 429])
  // 405 is described once, among the components.
  const put = await send('PUT', threadsPath, { headers: auth })
  expect({ status: put.status, allow: put.headers.get('allow') }).toEqual({ status: 405, allow: 'GET, HEAD, POST' })
  expect(spec.info.description).toContain('405')
})

test('the description tells the current rules and points at docs/api.md', async () => {
  await using h = await harness()
  const { info } = await specOf(h)
  for (const rule of [
    'Authorization: Bearer',
    '`access_token`',
    '415 `unsupported_media_type`',
    '32 levels',
    '405 `method_not_allowed`',
    'STREAM_LIMIT_PER_USER, default 64',
    'STREAM_LIMIT_TOTAL',
    '429 `too_many_streams`',
    'retry: 86400000',
    'docs/api.md',
  ]) {
    expect(info.description).toContain(rule)
  }
  expect(info.description).not.toContain('README')
})

/**
 * The generated client's whole conversation, type-checked by tsc against the generated types and then run.
 * `refusedByTheTypes` is never called: each of its lines must be a type error, or tsc reports the unused
 * `@ts-expect-error` and the run fails; that is what shows the types are not merely `any`.
 */
const clientSource = `import { EventSourceParserStream } from 'eventsource-parser/stream'
import createClient, { type Client } from 'openapi-fetch'
import type { paths } from './api'

export interface Conversation {
  events: string[]
  streamed: string
  retry: number | undefined
  pollStatus: number
  pollState: string
  answer: string
  feedbackStatus: number
  thread: { name: string | null; state: 'ready' | 'waiting' | 'active' | 'error' | 'interrupted' }
}

export async function converse(baseUrl: string, token: string): Promise<Conversation> {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } })
  const created = await client.POST('/api/v1/threads', { body: { text: 'Hello from a generated client', name: 'Generated' } })
  if (!created.data) throw new Error(\`create answered \${created.response.status}\`)
  const threadId: string = created.data.thread_id
  const messageId: string | null = created.data.message_id
  if (messageId === null) throw new Error('no message was created')
  const path = { threadId, messageId }

  const stream = await client.GET('/api/v1/threads/{threadId}/messages/{messageId}/response/stream', {
    params: { path },
    parseAs: 'stream',
  })
  if (!stream.data) throw new Error(\`stream answered \${stream.response.status}\`)
  let retry: number | undefined
  const events = stream.data
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream({ onRetry: (ms) => { retry = ms } }))
  const seen: string[] = []
  let streamed = ''
  for await (const event of events) {
    seen.push(event.event ?? 'message')
    if (event.event === 'token') streamed += (JSON.parse(event.data) as { token: string }).token
  }

  const poll = await client.GET('/api/v1/threads/{threadId}/messages/{messageId}/response', { params: { path } })
  if (!poll.data || !('messages' in poll.data)) throw new Error(\`poll answered \${poll.response.status}\`)
  const reply = poll.data.messages.find((message) => message.role === 'assistant')
  if (!reply) throw new Error('no assistant message')
  const answer = reply.contents.map((block) => (block.type === 'text' ? block.text : '')).join('')

  const rated = await client.POST('/api/v1/threads/{threadId}/messages/{messageId}/feedback', {
    params: { path: { threadId, messageId: reply.id } },
    body: { positive: true, feedback_text: 'Clear' },
  })
  if (rated.error) throw new Error(\`feedback answered \${rated.response.status}: \${rated.error.message}\`)

  const read = await client.GET('/api/v1/threads/{threadId}', { params: { path: { threadId } } })
  if (!read.data) throw new Error(\`thread answered \${read.response.status}\`)
  return {
    events: seen,
    streamed,
    retry,
    pollStatus: poll.response.status,
    pollState: poll.data.status,
    answer,
    feedbackStatus: rated.response.status,
    thread: { name: read.data.name, state: read.data.state },
  }
}

export function refusedByTheTypes(client: Client<paths>): void {
  // @ts-expect-error text is a string
  void client.POST('/api/v1/threads', { body: { text: 1 } })
  // @ts-expect-error limit is an integer, not a numeric string
  void client.GET('/api/v1/threads', { params: { query: { limit: '5' } } })
  void client.POST('/api/v1/threads/{threadId}/messages/{messageId}/feedback', {
    params: { path: { threadId: 'a', messageId: 'b' } },
    // @ts-expect-error positive is required
    body: { feedback_text: 'no rating' },
  })
  // @ts-expect-error there is no such path
  void client.GET('/api/v1/thread')
}
`

/** How the generated clients are type-checked: strictly, as a careful client author would. */
const clientCompilerOptions = {
  lib: ['ESNext', 'DOM', 'DOM.Iterable', 'DOM.AsyncIterable'],
  target: 'ESNext',
  module: 'Preserve',
  moduleResolution: 'bundler',
  strict: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: true,
  noEmit: true,
  types: [],
}

test('a client generated by openapi-typescript for openapi-fetch type-checks and holds a conversation', async () => {
  await using h = await harness()
  const { token } = await h.user()
  const server = h.app.listen({ port: 0, hostname: '127.0.0.1' }).server
  await using _ = {
    async [Symbol.asyncDispose]() {
      await h.app.stop()
    },
  }
  const baseUrl = `http://127.0.0.1:${server?.port}`
  const spec = (await (await fetch(`${baseUrl}/swagger/json`)).json()) as OpenAPI3

  // Inside node_modules so that the client finds openapi-fetch and eventsource-parser, for tsc and for Bun alike.
  const cache = join(root, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, 'threadhouse-openapi-client-'))
  await using _dir = { [Symbol.asyncDispose]: async () => rmSync(dir, { recursive: true, force: true }) }
  writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(spec)))
  writeFileSync(join(dir, 'client.ts'), clientSource)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: clientCompilerOptions, files: ['client.ts', 'api.d.ts'] }),
  )
  const tsc = Bun.spawn([process.execPath, join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], {
    stdout: 'pipe',
    stderr: 'pipe',
  })

  const { converse } = (await import(join(dir, 'client.ts'))) as {
    converse: (baseUrl: string, token: string) => Promise<Record<string, unknown>>
  }
  const conversation = await converse(baseUrl, token)
  expect(conversation).toEqual({
    events: expect.arrayContaining(['token']),
    streamed: expect.any(String),
    retry: 86_400_000,
    pollStatus: 200,
    pollState: 'complete',
    answer: conversation.streamed,
    feedbackStatus: 204,
    thread: { name: 'Generated', state: 'ready' },
  })
  expect((conversation.events as string[]).at(-1)).toBe('done')
  expect(conversation.streamed).toContain('Hello from a generated client')

  const typeErrors = (await new Response(tsc.stdout).text()) + (await new Response(tsc.stderr).text())
  expect({ exitCode: await tsc.exited, typeErrors }).toEqual({ exitCode: 0, typeErrors: '' })
})

/**
 * A second generator, of another make: @hey-api/openapi-ts writes an SDK of one function per operation, named by
 * its operationId. The conversation is create → poll → follow-up → poll, and the test decides when each answer
 * ends (ScriptedRunner), so the first poll of each answer is a 202 and nothing waits on time.
 */
const heyClientSource = `import { createClient, createConfig } from './api/client'
import { createThread, getResponse, getThread, listMessages, sendMessage } from './api/sdk.gen'

export interface Steps {
  /** Ends the answer to this user message (the test's runner); resolves once the runner was told. */
  answer(messageId: string, text: string): Promise<void>
}

export async function converse(baseUrl: string, token: string, steps: Steps) {
  // Each call passes throwOnError: a refusal throws, and the result's data is typed as the success body.
  const client = createClient(createConfig({ baseUrl, auth: token }))
  const statuses: number[] = []

  /** Polls until the answer has ended: a 202 first, since the runner has not finished it yet. */
  async function poll(threadId: string, messageId: string, text: string): Promise<string> {
    const path = { threadId, messageId }
    const first = await getResponse({ client, path, throwOnError: true })
    statuses.push(first.response.status)
    await steps.answer(messageId, text)
    for (;;) {
      const { data, response } = await getResponse({ client, path, throwOnError: true })
      if (!('messages' in data)) continue
      statuses.push(response.status)
      const reply = data.messages.find((message) => message.role === 'assistant')
      return reply?.contents.map((block) => (block.type === 'text' ? block.text : '')).join('') ?? ''
    }
  }

  const created = await createThread({ client, body: { text: 'What is a keyset?', name: 'Paging' }, throwOnError: true })
  const threadId: string = created.data.thread_id
  const first = created.data.message_id
  if (first === null) throw new Error('no message was created')
  const answers = [await poll(threadId, first, 'A cursor.')]

  const followUp = await sendMessage({ client, path: { threadId }, body: { text: 'And its limit?' }, throwOnError: true })
  answers.push(await poll(threadId, followUp.data.message_id, '200.'))

  const thread = await getThread({ client, path: { threadId }, throwOnError: true })
  const messages = await listMessages({ client, path: { threadId }, throwOnError: true })
  return {
    statuses,
    answers,
    thread: { name: thread.data.name, state: thread.data.state },
    roles: messages.data.data.map((message) => message.role),
  }
}

export function refusedByTheTypes(): void {
  // @ts-expect-error text is a string
  void createThread({ body: { text: 1 } })
  // @ts-expect-error the path needs threadId
  void getResponse({ path: { messageId: 'b' } })
  // @ts-expect-error limit is an integer
  void listMessages({ path: { threadId: 'a' }, query: { limit: '5' } })
}
`

test('a client generated by @hey-api/openapi-ts creates a thread, polls, follows up and polls again', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner, validateResponses: false })
  const { token } = await h.user()
  const server = h.app.listen({ port: 0, hostname: '127.0.0.1' }).server
  await using _ = { [Symbol.asyncDispose]: async () => void (await h.app.stop()) }
  const baseUrl = `http://127.0.0.1:${server?.port}`
  const spec = (await (await fetch(`${baseUrl}/swagger/json`)).json()) as Record<string, unknown>

  const cache = join(root, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, 'threadhouse-hey-api-client-'))
  await using _dir = { [Symbol.asyncDispose]: async () => rmSync(dir, { recursive: true, force: true }) }
  await createHeyApiClient({
    input: spec,
    output: { path: join(dir, 'api') },
    plugins: ['@hey-api/client-fetch', '@hey-api/sdk', '@hey-api/typescript'],
    logs: { level: 'silent' },
  })
  writeFileSync(join(dir, 'client.ts'), heyClientSource)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: clientCompilerOptions, include: ['**/*.ts'] }),
  )
  const tsc = Bun.spawn([process.execPath, join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], {
    stdout: 'pipe',
    stderr: 'pipe',
  })

  const { converse } = (await import(join(dir, 'client.ts'))) as {
    converse: (
      baseUrl: string,
      token: string,
      steps: { answer(messageId: string, text: string): Promise<void> },
    ) => Promise<unknown>
  }
  const answer = async (messageId: string, text: string) => {
    const job = await runner.started(messageId)
    job.token(text)
    job.done()
  }
  expect(await converse(baseUrl, token, { answer })).toEqual({
    statuses: [202, 200, 202, 200],
    answers: ['A cursor.', '200.'],
    thread: { name: 'Paging', state: 'ready' },
    roles: ['user', 'assistant', 'user', 'assistant'],
  })
  const typeErrors = (await new Response(tsc.stdout).text()) + (await new Response(tsc.stderr).text())
  expect({ exitCode: await tsc.exited, typeErrors }).toEqual({ exitCode: 0, typeErrors: '' })
})
