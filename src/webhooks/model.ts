// TypeBox schemas of what webhooks send: the body's type (events.ts builds bodies of it) and, from the same
// schemas, the OpenAPI document's `webhooks` section, so a receiver's author reads the payloads beside the API.
import { type Static, t } from 'elysia'
import { ThreadsModel } from '../threads/model'
import { orNull, UsageModel } from '../usage/model'

export const webhookEventTypes = ['thread.created', 'answer.completed', 'answer.failed', 'answer.interrupted'] as const
export type WebhookEventType = (typeof webhookEventTypes)[number]
/** Sent by an admin's "Send a test event", whatever the endpoint's filter. */
export const testEventType = 'webhook.test'

export namespace WebhooksModel {
  export const data = t.Object(
    {
      thread_id: t.Optional(t.String({ format: 'uuid', description: 'The thread.' })),
      message_id: t.Optional(
        t.String({ format: 'uuid', description: 'Answer events: the user message the answer replies to.' }),
      ),
      model: t.Optional(
        t.Union([t.String(), t.Null()], {
          description:
            'answer.completed: the ID of the configured model that wrote the answer (GET /api/v1/models); sent for ' +
            'private threads too.',
        }),
      ),
      usage: t.Optional(
        orNull(UsageModel.answerUsage, {
          description:
            'answer.completed: what the answer used (tokens, cost, timings), as its message details show it; sent ' +
            'for private threads too (it says nothing of what was said).',
        }),
      ),
      state: t.Optional(t.String({ description: "The thread's state when the event was queued." })),
      app_url: t.Optional(t.String({ description: 'The thread in the web application.' })),
      messages: t.Optional(
        t.Array(ThreadsModel.message, {
          description: 'answer.completed: the messages stored; left out for a private thread.',
        }),
      ),
      endpoint_id: t.Optional(t.String({ description: 'webhook.test: the endpoint tested.' })),
    },
    { additionalProperties: false },
  )

  export const event = t.Object(
    {
      type: t.Union([...webhookEventTypes, testEventType].map((type) => t.Literal(type))),
      timestamp: t.String({ format: 'date-time', description: 'When the event happened, ISO 8601 UTC.' }),
      data,
    },
    { additionalProperties: false },
  )
  export type event = Static<typeof event>
}

const when: Record<string, string> = {
  'thread.created': 'A thread was created in the organization.',
  'answer.completed': 'An answer was stored complete; `data.messages` holds it (not for a private thread).',
  'answer.failed': 'An answer ended in error.',
  'answer.interrupted': 'An answer was stopped.',
  [testEventType]: 'An admin sent a test event.',
}

/** The OpenAPI 3.1 `webhooks` section: one POST per event type, signed as Standard Webhooks specifies. */
export function webhookDocumentation(): Record<string, unknown> {
  const signature = (name: string, description: string) => ({
    name,
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description,
  })
  return Object.fromEntries(
    [...webhookEventTypes, testEventType].map((type) => [
      type,
      {
        post: {
          // `thread.created` is `onThreadCreated`: a generated client's name for its handler.
          operationId: `on${type.replace(/(^|\.)(\w)/g, (_, _dot: string, letter: string) => letter.toUpperCase())}`,
          summary: type,
          description: `${when[type]} Sent to the organization's enabled endpoints that chose this event (see docs/webhooks.md).`,
          parameters: [
            signature('webhook-id', 'The delivery, the same on every retry.'),
            signature('webhook-timestamp', 'Seconds since 1970 when this attempt was signed.'),
            signature(
              'webhook-signature',
              '`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the whsec_ secret.',
            ),
          ],
          requestBody: { required: true, content: { 'application/json': { schema: WebhooksModel.event } } },
          responses: { '2XX': { description: 'Received; any other answer is retried with back-off for up to a day.' } },
        },
      },
    ]),
  )
}
