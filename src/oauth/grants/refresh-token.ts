// The refresh token grant at the token endpoint (RFC 6749 §6): refresh tokens rotate on every use, and a rotated
// one presented again revokes its whole grant (RFC 9700 §4.14.2). A refresh may narrow the scope or the resource,
// never widen them.
import type { AuditOrigin } from '../../shared/audit'
import { hashSecret } from '../../shared/security'
import { grantRevoked } from '../audit'
import { narrowedAudience } from '../checks/resource'
import { parseScopeParameter, withoutImpliedScopes } from '../checks/scope'
import { requireGrantType } from '../clients'
import type { Client } from '../clients.repository'
import type { OAuthDeps } from '../deps'
import { InvalidGrant, InvalidRequest, InvalidScope } from '../errors'
import { newTokens, type TokenPayload } from '../tokens'

/**
 * How long a rotated refresh token still refreshes. MCP clients refresh concurrently from one stored token (several
 * Claude Code sessions, parallel tool calls after an expiry); without this the losers' reuse revoked the family.
 */
export const refreshReuseGraceMs = 60_000

function revoked(): InvalidGrant {
  return new InvalidGrant('The refresh token has been revoked')
}

function reused(): InvalidGrant {
  return new InvalidGrant('The refresh token was already used; every token of this authorization is revoked')
}

export async function refreshAccessToken(
  deps: OAuthDeps,
  client: Client,
  form: URLSearchParams,
  origin: AuditOrigin,
): Promise<TokenPayload> {
  requireGrantType(client, 'refresh_token')
  const token = form.get('refresh_token')
  if (!token) throw new InvalidRequest('refresh_token is required')
  const now = deps.clock.now()
  const grants = deps.oauthGrants
  const stored = await grants.findRefreshToken(hashSecret(token))
  if (!stored || stored.clientId !== client.id) throw new InvalidGrant('The refresh token is invalid')
  if (stored.revokedAt !== null) throw revoked()
  const reuse = grantRevoked(origin, now, 'refresh_token_reused', client.clientId)
  if (stored.usedAt !== null && now - stored.usedAt > refreshReuseGraceMs) {
    // Rotation makes reuse a theft signal (RFC 9700 §4.14.2): whoever holds the family, nobody keeps it.
    await grants.revokeGrant(stored.grantId, now, reuse)
    throw reused()
  }
  if (stored.expiresAt <= now) throw new InvalidGrant('The refresh token has expired')
  const resource = narrowedAudience(stored.resource, form, deps.publicUrl)
  const granted = parseScopeParameter(stored.scopes)
  let scopes = granted
  const requested = withoutImpliedScopes(form.get('scope') ?? '')
  if (requested) {
    scopes = parseScopeParameter(requested)
    const wider = scopes.filter((scope) => !granted.includes(scope))
    if (wider.length > 0) throw new InvalidScope(`The original grant does not include ${wider.join(', ')}`)
  }
  const issued = newTokens({ scopes, resource, grantTypes: client.grantTypes }, now)
  // Decided again as the token is rotated, against its state at that moment.
  const rotation = await grants.rotateRefreshToken(
    {
      tokenId: stored.id,
      grantId: stored.grantId,
      clientId: client.id,
      tokens: issued.tokens,
      now,
      reuseGraceMs: refreshReuseGraceMs,
    },
    reuse,
  )
  if (rotation === 'revoked') throw revoked()
  if (rotation === 'reused') throw reused()
  return issued.payload
}
