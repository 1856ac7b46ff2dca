// The audit log's API: GET /api/v1/audit. HTTP in, HTTP out; behaviour in service.ts.
import { Elysia, t } from 'elysia'
import { type AuthDeps, auth } from '../auth'
import { AuthModel } from '../auth/model'
import type { UserRepository } from '../auth/users.repository'
import type { Responses } from '../shared/responses'
import { AuditModel, maxAuditPage } from './model'
import type { AuditRepository } from './repository'
import { listEvents } from './service'

export interface AuditRoutesDeps extends AuthDeps {
  audit: AuditRepository
  users: Pick<UserRepository, 'findByEmail'>
  responses: Responses
}

const error = AuthModel.error

export const auditRoutes = (deps: AuditRoutesDeps) =>
  new Elysia({ name: 'audit', prefix: '/api/v1' })
    .use(auth(deps))
    .get('/audit', ({ caller, query }) => listEvents(deps, caller, query), {
      scope: 'audit:read',
      query: AuditModel.listQuery,
      response: deps.responses({
        200: AuditModel.eventList,
        400: error,
        401: error,
        403: t.Union([AuthModel.scopeError, error]),
      }),
      detail: {
        operationId: 'listAuditEvents',
        summary: 'The organization’s audit log, newest first',
        tags: ['Audit'],
        description:
          'An addition to the specification. The security-relevant acts of the caller’s organization (sign-ins, ' +
          'members, tokens, apps and clients, webhooks, MCP servers, settings, thread deletions, exports and ' +
          'shares; docs/audit.md lists every action and its detail), newest first. Needs `audit:read` and an ' +
          'owner or admin of the organization (403 `forbidden` for members, whatever their token holds). Filters ' +
          'combine: `actor` (a user ID or email, `system`, `anonymous`), `action` (one, or `family.*`), `target` ' +
          '(`kind` or `kind:id`), `from` and `to`. Keyset pages as the thread list’s: `limit` (default 50, at ' +
          `most ${maxAuditPage}), \`after\` the previous page’s \`last_id\`, \`has_more\`. Each event carries the ` +
          'SHA-256 `hash` chaining it to the one before it in the organization (`prev_hash`).',
      },
    })
