// TypeBox schemas of the audit log's API (GET /api/v1/audit): validation, types and the OpenAPI document from one
// source. The vocabulary itself (actions, actor and target kinds) is shared/audit.ts's.
import { type Static, t } from 'elysia'
import { actorKinds, auditActionNames, auditOutcomes, targetKinds } from '../shared/audit'
import { integer } from '../shared/responses'

/** The largest page; larger limits are clamped, as the thread list does. */
export const maxAuditPage = 200

export namespace AuditModel {
  export const event = t.Object(
    {
      id: t.String({ format: 'uuid', description: 'The event’s ID (UUIDv7): pass it as `after` for the next page.' }),
      seq: integer({ minimum: 1, description: 'Its place in the organization’s chain, from 1 without gaps.' }),
      at: t.String({ format: 'date-time', description: 'When it happened, ISO 8601 UTC.' }),
      action: t.UnionEnum(auditActionNames, {
        description: 'What happened: one of the closed list in docs/audit.md.',
      }),
      outcome: t.UnionEnum(auditOutcomes, {
        description: '`failure` only for refused sign-ins; refused acts are otherwise not recorded.',
      }),
      actor: t.Object(
        {
          kind: t.UnionEnum(actorKinds, {
            description: 'How the actor proved who they are, or `system` (the operator, the upkeep), `anonymous`.',
          }),
          id: t.Nullable(
            t.String({ description: 'The credential’s ID: a session’s, a token’s, a grant’s, a client’s client_id.' }),
          ),
          user_id: t.Nullable(integer({ description: 'The person acting (as `svc_user_id` of /me); null for none.' })),
        },
        { additionalProperties: false },
      ),
      address: t.Nullable(t.String({ description: 'The client address as the server resolved it (TRUST_PROXY).' })),
      user_agent: t.Nullable(t.String({ description: 'The User-Agent header, at most 256 characters.' })),
      target: t.Nullable(
        t.Object(
          {
            kind: t.UnionEnum(targetKinds),
            id: t.String({ description: 'Users by their numeric ID, threads by theirs, clients by client_id.' }),
          },
          { additionalProperties: false },
        ),
      ),
      organization_id: integer({ description: 'The organization whose chain holds it.' }),
      detail: t.Record(t.String(), t.Unknown(), {
        description: 'A few facts about the act, per action (docs/audit.md); never a secret or message content.',
      }),
      prev_hash: t.String({ description: 'SHA-256 (hex) of the event before it in the chain.' }),
      hash: t.String({ description: 'SHA-256 (hex) of this event’s canonical encoding (docs/audit.md).' }),
    },
    { additionalProperties: false },
  )
  export type event = Static<typeof event>

  export const eventList = t.Object(
    {
      data: t.Array(event),
      first_id: t.Nullable(t.String(), { description: 'ID of the first item; null when the page is empty.' }),
      last_id: t.Nullable(t.String(), { description: 'ID of the last item: pass it as `after` for the next page.' }),
      has_more: t.Boolean({ description: 'False when there are no more pages.' }),
      limit: integer({ minimum: 1, description: 'The limit applied to this request.' }),
    },
    { additionalProperties: false },
  )
  export type eventList = Static<typeof eventList>

  const date = t.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$',
  })

  export const listQuery = t.Object({
    actor: t.Optional(
      t.String({
        maxLength: 320,
        description:
          'Events by one actor: a user’s numeric ID or email (of your organization), or `system` or `anonymous`.',
      }),
    ),
    action: t.Optional(
      t.String({
        maxLength: 64,
        description: 'One action (`member.role_changed`), or a family of them (`member.*`).',
      }),
    ),
    target: t.Optional(
      t.String({
        maxLength: 200,
        description: 'Events about one kind of thing (`thread`), or one thing (`user:12`, `thread:0190…`).',
      }),
    ),
    from: t.Optional(t.String({ ...date, description: 'ISO 8601 date or date-time, inclusive.' })),
    to: t.Optional(
      t.String({ ...date, description: 'ISO 8601; a date includes that whole day, a date-time is exclusive.' }),
    ),
    limit: t.Optional(
      t.Integer({
        minimum: 1,
        default: 50,
        description: `Page size, default 50. Values above ${maxAuditPage} are clamped (the applied limit is echoed).`,
      }),
    ),
    after: t.Optional(
      t.String({ format: 'uuid', description: 'Events older than this one (the previous page’s `last_id`).' }),
    ),
  })
  export type listQuery = Static<typeof listQuery>
}
