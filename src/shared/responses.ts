// Response schemas as routes declare them. They always document the API (OpenAPI) and type the
// handlers; they are checked at run time only when the app is built to check them (tests do).
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
