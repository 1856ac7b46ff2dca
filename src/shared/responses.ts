// Response schemas as routes declare them. They always document the API (OpenAPI) and type the
// handlers; they are checked at run time only when the app is built to check them (tests do).
import { Type } from '@sinclair/typebox'
import { type TSchema, t } from 'elysia'

export type ResponseSchemas = Record<number, TSchema>
export type Responses = <T extends ResponseSchemas>(schemas: T) => T

/**
 * With `check` false, each schema is a copy marked NoValidate: the shared schema objects stay as they
 * are, so an app that checks and one that does not can live in the same process.
 */
export function responseSchemas(check: boolean): Responses {
  if (check) return (schemas) => schemas
  return (schemas) =>
    Object.fromEntries(
      Object.entries(schemas).map(([status, schema]) => [status, t.NoValidate({ ...schema })]),
    ) as typeof schemas
}

/**
 * An integer in an answer. Elysia's `t.Integer` also accepts numeric strings, as query strings need, and the
 * OpenAPI document would then call the field "string or integer".
 */
export const integer = Type.Integer

/**
 * Answers that many operations share, defined once among the OpenAPI document's `components.responses`
 * (src/docs/openapi.ts) and named from routes and from src/docs by these names.
 */
export type SharedResponse =
  | 'LengthRequired'
  | 'PayloadTooLarge'
  | 'UnsupportedMediaType'
  | 'TooManyRequests'
  | 'MethodNotAllowed'

export interface ResponseReference {
  $ref: string
}

export function sharedResponse(name: SharedResponse): ResponseReference {
  return { $ref: `#/components/responses/${name}` }
}

/** An OpenAPI response object; a media type's `schema` may be a TypeBox schema. */
export interface DocumentedResponse {
  description: string
  headers?: Record<string, { description: string; schema: object }>
  content?: Record<string, { schema?: object }>
}

/**
 * OpenAPI responses for `detail.responses`, for what `response` cannot say: a 204 with no body, an event
 * stream, a file. Each status given here replaces the one the document derives from `response`; the others
 * stay. A fresh object per route: macros merge their own `detail` into a route's.
 */
export type DocumentedResponses = Record<number, DocumentedResponse | ResponseReference>

export function noContent(description = 'Done; no content'): DocumentedResponses {
  return { 204: { description } }
}
