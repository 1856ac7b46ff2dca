// Turning the user row behind any kind of bearer token (a personal access token, an OAuth access token) into the
// Caller every API route receives.
import { type AuditOrigin, credentialActor, requestOrigin } from '../shared/audit'
import { type Caller, isScope, type Scope } from './model'
import type { CallerRow } from './tokens.repository'

interface Grant {
  scopes: ReadonlySet<Scope>
  sees: Caller['sees']
}

/**
 * Each distinct `scopes` column parsed once: tokens share a handful of scope lists, and every API request needs
 * one. Bounded in case the column ever holds many distinct strings.
 */
const grants = new Map<string, Grant>()
function grantOf(scopes: string): Grant {
  let grant = grants.get(scopes)
  if (!grant) {
    const granted = new Set(scopes.split(' ').filter(isScope))
    grant = { scopes: granted, sees: granted.has('threads:read') ? 'organization' : 'own' }
    if (grants.size >= 64) grants.clear()
    grants.set(scopes, grant)
  }
  return grant
}

/** A Caller from a token's user row and its granted scopes; `credential` keys per-token limits. */
export function callerOf(row: CallerRow, credential: string): Caller {
  const granted = grantOf(row.scopes)
  return {
    credential,
    userId: row.userId,
    sub: row.sub,
    name: row.name,
    email: row.email,
    role: row.role,
    organizationId: row.organizationId,
    organizationSlug: row.organizationSlug,
    scopes: granted.scopes,
    sees: granted.sees,
  }
}

/** Who acts through the API, and from where: the caller's person and credential, for the audit log. */
export function callerOrigin(request: Request, caller: Pick<Caller, 'credential' | 'userId'>): AuditOrigin {
  return requestOrigin(request, credentialActor(caller.credential, caller.userId))
}
