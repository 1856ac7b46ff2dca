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

type Documented = Record<number, { description: string; content?: Record<string, { schema?: object }> }>

/**
 * OpenAPI response objects for `detail.responses`, which replaces the list the plugin builds from `response`:
 * for routes that answer something other than JSON (an event stream, a 204 with no body) beside JSON errors.
 */
export function documented(others: Documented, schemas: ResponseSchemas): Documented {
  const json = Object.entries(schemas).map(([status, schema]) => [
    status,
    { description: schema.description ?? '', content: { 'application/json': { schema } } },
  ])
  return { ...others, ...Object.fromEntries(json) }
}

export const noContent: Documented = { 204: { description: 'No content' } }
