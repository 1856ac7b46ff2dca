// TypeBox schemas of usage: an answer's usage (in a message's details, the JSON export and answer.completed webhooks)
// and GET /api/v1/usage, shared by validation, types and the OpenAPI document.
import { type Static, type TSchema, t } from 'elysia'
import { integer } from '../shared/responses'

/** A value or null, as `anyOf` (OpenAPI 3.1 has no `nullable`; the webhooks' document is not rewritten). */
export function orNull<T extends TSchema>(schema: T, options: { description?: string } = {}) {
  return t.Union([schema, t.Null()], options)
}

export const usageGroups = ['day', 'user', 'model', 'thread'] as const

/** The longest range GET /usage sums over. */
export const maxRangeDays = 400

export namespace UsageModel {
  export const answerUsage = t.Object(
    {
      input_tokens: integer({
        minimum: 0,
        description: 'Prompt tokens, cached ones included, of the answer and of any summary written before it.',
      }),
      output_tokens: integer({ minimum: 0 }),
      cached_input_tokens: integer({ minimum: 0, description: 'The part of input_tokens read from the cache.' }),
      estimated: t.Boolean({
        description:
          'The counts are the server’s estimate (about four characters per token): the provider reported none ' +
          '(the echo responder, a server without usage reports, an answer stopped before the report).',
      }),
      cost: orNull(
        t.Number({ minimum: 0, description: 'In `currency`, from the model’s configured price; null without one.' }),
      ),
      currency: orNull(t.String({ description: 'ISO 4217, such as USD; null without a price.' })),
      first_token_ms: orNull(
        integer({ minimum: 0, description: 'From the answer’s start to its first token; null when none came.' }),
      ),
      total_ms: orNull(integer({ minimum: 0, description: 'From the answer’s start to its end.' })),
    },
    { additionalProperties: false, description: 'What one answer used. An addition to the specification.' },
  )
  export type answerUsage = Static<typeof answerUsage>

  const date = t.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$',
    description: 'ISO 8601: a date (YYYY-MM-DD, UTC) or a date-time with its offset.',
  })

  export const usageQuery = t.Object({
    from: t.Optional(
      t.String({
        ...date,
        description: `${date.description} Inclusive. Default: the first day of the current month (UTC).`,
      }),
    ),
    to: t.Optional(
      t.String({
        ...date,
        description:
          `${date.description} A date includes that whole day; a date-time is exclusive. Default: today (UTC). ` +
          `At most ${maxRangeDays} days after \`from\`.`,
      }),
    ),
    group_by: t.Optional(
      t.Union([t.Literal('day'), t.Literal('user'), t.Literal('model'), t.Literal('thread')], {
        description:
          'What each row sums: `day` (key YYYY-MM-DD, UTC; the default), `user` (key: the member’s numeric ID, ' +
          'svc_user_id of GET /me), `model` (the configured model’s ID) or `thread` (the thread’s ID; kept for ' +
          'deleted threads).',
      }),
    ),
    scope: t.Optional(
      t.Union([t.Literal('own'), t.Literal('organization')], {
        description:
          '`own` (the default): answers in threads the caller owns. `organization`: every member’s; owners and ' +
          'admins only (403 otherwise).',
      }),
    ),
    format: t.Optional(
      t.Union([t.Literal('json'), t.Literal('csv')], {
        description:
          '`json` (the default) or `csv`: text/csv with the header row key,answers,input_tokens,output_tokens,cost.',
      }),
    ),
  })
  export type usageQuery = Static<typeof usageQuery>

  export const usageRow = t.Object(
    {
      key: t.String(),
      answers: integer({ minimum: 0 }),
      input_tokens: integer({ minimum: 0 }),
      output_tokens: integer({ minimum: 0 }),
      cost: orNull(t.Number({ minimum: 0, description: 'Of the answers whose model had a price; null when none.' })),
    },
    { additionalProperties: false },
  )

  export const usageList = t.Object(
    {
      data: t.Array(usageRow, { description: 'One row per key with answers in the range, ordered by key.' }),
      from: t.String({ description: 'The range’s start, as asked or defaulted.' }),
      to: t.String({ description: 'The range’s end, as asked or defaulted.' }),
      currency: orNull(
        t.String({
          description: 'The currency of every cost (the models list has one); null when no model is priced.',
        }),
      ),
    },
    { additionalProperties: false },
  )
  export type usageList = Static<typeof usageList>
}
