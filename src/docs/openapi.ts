// The OpenAPI 3.1 document, built from the app's routes: @elysiajs/openapi's converter turns each route's TypeBox
// schemas into an operation, and this file finishes the document in one place with what the converter cannot know.
// A route's own `detail.requestBody` and `detail.responses` win over what it derives from `body` and `response`
// (which is how a JSON body says `application/json` only, or a 204 says it has no content); query integers are
// integers, not Elysia's "numeric string or integer"; statuses that every operation shares because they come from
// src/shared/http.ts and the rate limits are named once under `components.responses`, and the `{ error, message }`
// body once under `components.schemas`; OpenAPI 3.0's `nullable` and Elysia's `noValidate` go; each operation is
// named by its route's `detail.operationId` alone.
import { toOpenAPISchema, unwrapSchema } from '@elysiajs/openapi/openapi'
import type { AnyElysia } from 'elysia'
import { AuthModel } from '../auth/model'
import { maxJsonBodyBytes, maxJsonDepth } from '../shared/body'
import { type SharedResponse, sharedResponse } from '../shared/responses'

const openapiVersion = '3.1.1'

/** The parts of an OpenAPI document this file reads and writes; the rest passes through untouched. */
type Schema = Record<string, unknown>
interface MediaType {
  schema?: Schema
}
interface Answer {
  description?: string
  $ref?: string
  content?: Record<string, MediaType>
}
interface Parameter {
  name: string
  in: string
  schema?: Schema
}
interface Operation {
  operationId?: string
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, MediaType> }
  responses?: Record<string, Answer>
}
type Paths = Record<string, Record<string, Operation>>
export type OpenAPIDocument = Record<string, unknown> & { paths: Paths; components: Record<string, unknown> }

/** What a route's `detail` may say about its body and answers, with TypeBox schemas in it. */
interface RouteDetail {
  operationId?: string
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, MediaType> }
  responses?: Record<string, Answer>
}

const errorSchema = '#/components/schemas/Error'
const errorContent = { 'application/json': { schema: { $ref: errorSchema } } }
const header = (description: string, schema: Schema = { type: 'string' }) => ({ description, schema })

/** Answers that come from no single route: the body and rate checks every request passes (src/shared/http.ts). */
const sharedResponses: Record<SharedResponse, object> = {
  LengthRequired: {
    description:
      'A body sent without Content-Length (`length_required`). Only the attachment upload takes a body of ' +
      'unknown length.',
    content: errorContent,
  },
  PayloadTooLarge: {
    description: `A body larger than ${maxJsonBodyBytes} bytes (\`payload_too_large\`), refused by its Content-Length before it is read.`,
    content: errorContent,
  },
  UnsupportedMediaType: {
    description:
      'A body that is not `application/json` (`unsupported_media_type`). A body nested more than ' +
      `${maxJsonDepth} levels deep, or that is not a JSON object, is 400 \`invalid_request\` instead.`,
    headers: { Accept: header('The media type this operation takes: `application/json`.') },
    content: errorContent,
  },
  TooManyRequests: {
    description:
      'Over a rate limit (`rate_limited`): requests with a valid API token count against the token, all others ' +
      'against the client address. Retry after the seconds in `Retry-After`.',
    headers: { 'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', minimum: 1 }) },
    content: errorContent,
  },
  MethodNotAllowed: {
    description:
      'The path exists but does not answer this method (`method_not_allowed`); `Allow` lists the methods it answers.',
    headers: { Allow: header('The methods this path answers, for example `GET, HEAD, PATCH`.') },
    content: errorContent,
  },
}

/**
 * A description for an answer whose route gave none (the converter writes "Response for status 200", or the
 * schema's own description): the routes' `{ error, message }` answers by what they mean rather than by their shape.
 */
function statusDescription(path: string, status: string, schema: Schema | undefined): string | undefined {
  const settings = path.startsWith('/settings/')
  switch (status) {
    case '200':
      return 'OK'
    case '201':
      return 'Created'
    case '202':
      return 'Accepted'
    case '400':
      return 'Invalid request (`invalid_request`): a path parameter, query parameter or body that this operation does not take.'
    case '401':
      return settings
        ? 'No valid session cookie (`unauthorized`).'
        : 'No valid bearer token (`unauthorized`): missing, unknown, expired or revoked, or sent in the query ' +
            'string. `WWW-Authenticate` names the protected resource metadata.'
    case '403':
      if (settings) {
        return (
          'Refused: `forbidden` where the operation needs an owner or admin; `csrf_failed` for a write without ' +
          'the session’s X-CSRF-Token or from another origin; `password_change_required` until the person has ' +
          'replaced a one-time password.'
        )
      }
      return Array.isArray(schema?.anyOf)
        ? 'The token lacks the scope (`insufficient_scope`, naming `required_scope`), or the caller may see the thread but not change it (`forbidden`).'
        : 'The token lacks the scope (`insufficient_scope`, naming `required_scope`).'
    case '404':
      return 'Not found (`not_found`), or not visible to the caller.'
    case '409':
      return 'Conflict with the current state (`conflict`); the description above says when.'
    default:
      return undefined
  }
}

/** Descriptions the converter writes when a route gave none of its own. */
const derivedDescriptions = new Set([AuthModel.error.description, AuthModel.scopeError.description])

/** Query and path parameters are text, so Elysia's `t.Integer` is "a numeric string or an integer": say integer. */
function plainParameter(schema: Schema | undefined): Schema | undefined {
  const branches = schema?.anyOf
  if (!schema || !Array.isArray(branches) || branches.length !== 2) return schema
  const text = branches.find((branch) => branch.type === 'string' && ['integer', 'numeric'].includes(branch.format))
  const number = branches.find((branch) => branch.type === 'integer' || branch.type === 'number')
  if (!text || !number) return schema
  const { anyOf: _, ...outer } = schema
  return { ...outer, ...number }
}

/** TypeBox schemas in a route's `detail`, converted as the converter converts the rest. */
function converted<T extends { content?: Record<string, MediaType> }>(declared: T): T {
  if (!declared.content) return declared
  const content = Object.fromEntries(
    Object.entries(declared.content).map(([type, media]) => [
      type,
      media.schema
        ? { ...media, schema: unwrapSchema(media.schema as never, undefined, 'output', openapiVersion) }
        : media,
    ]),
  )
  return { ...declared, content }
}

const byStatus = (a: [string, unknown], b: [string, unknown]): number => a[0].localeCompare(b[0])

/** Finishes one operation; `detail` is its route's, `operation` what the converter made of it (a fresh object). */
function finish(path: string, method: string, operation: Operation, detail: RouteDetail | undefined): Operation {
  const responses: Record<string, Answer> = {}
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const schema = response.content?.['application/json']?.schema
    const generic = !response.description || response.description.startsWith('Response for status')
    const described =
      generic || derivedDescriptions.has(response.description) ? statusDescription(path, status, schema) : undefined
    responses[status] = described ? { ...response, description: described } : response
  }
  for (const [status, response] of Object.entries(detail?.responses ?? {})) responses[status] = converted(response)
  const requestBody = detail?.requestBody ? converted(detail.requestBody) : operation.requestBody
  const mediaTypes = Object.keys(requestBody?.content ?? {})
  const multipartOnly = mediaTypes.length === 1 && mediaTypes[0] === 'multipart/form-data'
  // Every request passes src/shared/http.ts: a body needs a length within 1 MiB (multipart uploads aside), and
  // every request counts against a rate limit.
  if (method !== 'get' && method !== 'head' && !multipartOnly) {
    responses['411'] ??= sharedResponse('LengthRequired')
    responses['413'] ??= sharedResponse('PayloadTooLarge')
  }
  responses['429'] ??= sharedResponse('TooManyRequests')
  // Parameters from the route's schemas, then those only its `detail` names (headers it reads by hand).
  const derived = (operation.parameters ?? []).map((parameter) => ({
    ...parameter,
    schema: plainParameter(parameter.schema),
  }))
  const named = new Set(derived.map((parameter) => `${parameter.in} ${parameter.name}`))
  const extra = (detail?.parameters ?? []).filter((parameter) => !named.has(`${parameter.in} ${parameter.name}`))
  const parameters = [...derived, ...extra]
  // Only the name the route chose: the converter's fallback spells out the path (`getApiV1ThreadsByThreadId`),
  // and a generated client names its functions after it.
  const { operationId: _, ...rest } = operation
  return {
    ...rest,
    ...(detail?.operationId ? { operationId: detail.operationId } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(byStatus)),
  }
}

/** The `{ error, message }` body as every route's answers have it, converted once. */
const errorBody = unwrapSchema(AuthModel.error, undefined, 'output', openapiVersion)

/** Answers whose body is exactly the shared error body name it, as `components.schemas.Error`, instead of a copy. */
function referenceErrorBodies(paths: Paths, error: string): void {
  const named = (schema: Schema | undefined): Schema | undefined =>
    JSON.stringify(schema) === error ? { $ref: errorSchema } : schema
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const media of Object.values(response.content ?? {})) {
          if (!media.schema) continue
          media.schema = named(media.schema)
          if (Array.isArray(media.schema?.anyOf)) media.schema.anyOf = media.schema.anyOf.map(named)
        }
      }
    }
  }
}

const openapiPath = (path: string): string => path.replace(/:([^/]+)/g, '{$1}')

interface Route {
  method: string
  path: string
  hooks?: { detail?: unknown }
}

/**
 * Every route of the app that uses `plugin`: once used, a plugin's global routes are the app's. Elysia's types call
 * this protected; its own OpenAPI plugin reads the routes the same way.
 */
export function appRoutes(plugin: AnyElysia): readonly Route[] {
  return (plugin as unknown as { getGlobalRoutes(): Route[] }).getGlobalRoutes()
}

/**
 * Keys that are not OpenAPI 3.1's nor JSON Schema's, dropped: `nullable` is OpenAPI 3.0's word, which TypeBox's
 * nullable types keep beside the 3.1 form the converter adds (`type: ["string", "null"]`), dropped where that form
 * says the same; `noValidate` is Elysia's mark on the answer schemas it does not check (src/shared/responses.ts).
 * A property named either holds a schema, never a boolean, so it stays.
 */
function dropForeignKeys(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) dropForeignKeys(item)
  } else if (value !== null && typeof value === 'object') {
    const schema = value as Schema
    if (schema.nullable === true && Array.isArray(schema.type) && schema.type.includes('null')) delete schema.nullable
    if (typeof schema.noValidate === 'boolean') delete schema.noValidate
    for (const child of Object.values(schema)) dropForeignKeys(child)
  }
}

/**
 * The whole document for `app`, whose routes are all registered. `base` holds what no route says: info, servers,
 * tags, security schemes. The result is plain JSON, detached from the routes' schema objects.
 */
export function buildDocument(app: AnyElysia, base: { components?: Record<string, unknown> }): OpenAPIDocument {
  // Options routes are CORS preflights; every path with a dot is kept, or /.well-known would go.
  const generated = toOpenAPISchema(
    app,
    { methods: ['options'], staticFile: false },
    undefined,
    undefined,
    openapiVersion,
  )
  const details = new Map<string, RouteDetail | undefined>()
  for (const route of appRoutes(app)) {
    details.set(`${route.method.toLowerCase()} ${openapiPath(route.path)}`, route.hooks?.detail as RouteDetail)
  }
  const paths: Paths = {}
  for (const [path, operations] of Object.entries(generated.paths as Paths)) {
    paths[path] = Object.fromEntries(
      Object.entries(operations).map(([method, operation]) => [
        method,
        finish(path, method, operation, details.get(`${method} ${path}`)),
      ]),
    )
  }
  const document = {
    ...base,
    openapi: openapiVersion,
    paths,
    components: {
      ...base.components,
      schemas: {
        ...generated.components.schemas,
        Error: errorBody,
      },
      responses: sharedResponses,
    },
  }
  // Through JSON: TypeBox's symbol keys go, and nothing in the document is shared with a live schema.
  const detached: OpenAPIDocument = JSON.parse(JSON.stringify(document))
  dropForeignKeys(detached)
  referenceErrorBodies(detached.paths, JSON.stringify(errorBody))
  return detached
}
