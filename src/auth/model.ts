// Roles, scopes, the authenticated caller and the identity (GET /me) schema.
import { type Static, t } from 'elysia'
import { integer } from '../shared/responses'

/** A person's role in their organization. */
export const roles = ['owner', 'admin', 'member'] as const
export type Role = (typeof roles)[number]

export const scopes = ['threads:read', 'threads:read:own', 'threads:write', 'audit:read'] as const
export type Scope = (typeof scopes)[number]

/**
 * Scopes only owners and admins may hold: reading the organization's audit log. Tokens and consents of members leave
 * them out, clients registered without `scope` are not registered for them, and the MCP server does not offer them.
 */
export const adminOnlyScopes: readonly Scope[] = ['audit:read']

export function isScope(value: string): value is Scope {
  return (scopes as readonly string[]).includes(value)
}

/** A bearer token resolved to its caller, with the time the token itself expires (null: never). */
export interface ResolvedToken {
  caller: Caller
  expiresAt: number | null
}

/** Who is calling, resolved once per request from the bearer token. */
export interface Caller {
  /** Which credential authenticated the request (for example `pat:12`): the key of per-token limits. */
  credential: string
  userId: number
  sub: string
  name: string | null
  email: string
  role: Role
  organizationId: number
  organizationSlug: string
  scopes: ReadonlySet<Scope>
  /**
   * Which threads exist for this caller. Only `threads:read` reveals the organization's public threads;
   * a token with `threads:read:own` (or only `threads:write`) sees its user's own threads and nothing else.
   */
  sees: 'organization' | 'own'
  /**
   * RFC 8707: the one protected resource (`/api/v1` or `/mcp`) an OAuth access token was issued for, which alone
   * accepts it. Absent for tokens good for every resource: personal access tokens, and OAuth tokens asked for with
   * no resource.
   */
  audience?: string
}

export namespace AuthModel {
  export const me = t.Object(
    {
      sub: t.String({ description: 'Stable string ID of the user (JWT subject).' }),
      name: t.Nullable(t.String()),
      email: t.Nullable(t.String()),
      svc_user_id: integer({ description: 'Internal numeric user ID.' }),
      svc_organization_id: integer({ description: 'Internal numeric organization ID.' }),
      svc_organization_slug: t.String(),
      role: t.Union([t.Literal('owner'), t.Literal('admin'), t.Literal('member')], {
        description: 'Role within the organization: `owner`, `admin` or `member`.',
      }),
    },
    { additionalProperties: false },
  )
  export type me = Static<typeof me>

  export const error = t.Object(
    { error: t.String({ examples: ['invalid_request'] }), message: t.String() },
    { additionalProperties: false, description: 'Error body: a machine-readable code and a readable message.' },
  )
  export const scopeError = t.Object(
    {
      error: t.Literal('insufficient_scope'),
      message: t.String(),
      required_scope: t.String({ examples: ['threads:read'] }),
    },
    { additionalProperties: false, description: 'The token lacks the scope this endpoint requires.' },
  )
}
