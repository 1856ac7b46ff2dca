// The audit events of the authorization server's acts that grants and clients share: a grant taken back, by its
// client or because a code or refresh token came back a second time (a theft signal).
import { type AuditOrigin, auditEntry, target } from '../shared/audit'
import type { GrantAudit } from './grants.repository'

/** Why a grant was revoked without its person asking. */
export type GrantRevocation = 'client_request' | 'code_reused' | 'refresh_token_reused'

/** The event of a grant's revocation, in its person's organization, by whoever `origin` names (usually its client). */
export function grantRevoked(origin: AuditOrigin, now: number, reason: GrantRevocation, clientId: string): GrantAudit {
  return (grant) =>
    auditEntry(origin, now, {
      organizationId: grant.organizationId,
      action: 'oauth.grant_revoked',
      target: target('oauth_grant', grant.id),
      detail: { reason, client_id: clientId, user_id: grant.userId },
    })
}
