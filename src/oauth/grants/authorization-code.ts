// The authorization code grant at the token endpoint (RFC 6749 §4.1.3): a single-use code, bound to its client,
// redirect URI, PKCE challenge and resource, becomes a grant and its first tokens.
import type { AuditOrigin } from '../../shared/audit'
import { hashSecret } from '../../shared/security'
import { grantRevoked } from '../audit'
import { codeExchangeChecks } from '../checks'
import { narrowedAudience } from '../checks/resource'
import { parseScopeParameter } from '../checks/scope'
import { requireGrantType } from '../clients'
import type { Client } from '../clients.repository'
import type { OAuthDeps } from '../deps'
import { InvalidGrant, InvalidRequest } from '../errors'
import { newTokens, type TokenPayload } from '../tokens'

function alreadyUsed(): InvalidGrant {
  return new InvalidGrant('The authorization code was already used; the tokens issued for it are revoked')
}

export async function exchangeAuthorizationCode(
  deps: OAuthDeps,
  client: Client,
  form: URLSearchParams,
  origin: AuditOrigin,
): Promise<TokenPayload> {
  requireGrantType(client, 'authorization_code')
  const code = form.get('code')
  if (!code) throw new InvalidRequest('code is required')
  if (!form.get('redirect_uri')) throw new InvalidRequest('redirect_uri is required')
  const now = deps.clock.now()
  const grants = deps.oauthGrants
  const stored = await grants.findAuthorizationCode(hashSecret(code))
  const replayed = grantRevoked(origin, now, 'code_reused', client.clientId)
  if (!stored) throw new InvalidGrant('The authorization code is invalid')
  if (stored.usedAt !== null) {
    // RFC 6749 §4.1.2: a code used twice was stolen or leaked; revoke everything its first use issued.
    if (stored.grantId !== null) await grants.revokeGrant(stored.grantId, now, replayed)
    throw alreadyUsed()
  }
  for (const check of codeExchangeChecks) check({ code: stored, client, params: form, publicUrl: deps.publicUrl, now })
  // The checks above accepted the request's `resource`: this is the audience they allow.
  const resource = narrowedAudience(stored.resource, form, deps.publicUrl)
  const issued = newTokens({ scopes: parseScopeParameter(stored.scopes), resource, grantTypes: client.grantTypes }, now)
  const redeemed = await grants.redeemAuthorizationCode(
    {
      codeId: stored.id,
      grant: { clientId: client.id, userId: stored.userId, scopes: stored.scopes, resource },
      tokens: issued.tokens,
      now,
    },
    replayed,
  )
  // Another exchange of the same code won meanwhile: this one is its replay.
  if (!redeemed) throw alreadyUsed()
  return issued.payload
}
