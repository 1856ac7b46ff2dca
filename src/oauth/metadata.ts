// Discovery documents: RFC 8414 authorization server metadata and RFC 9728 protected resource metadata.
import { adminOnlyScopes, scopes } from '../auth/model'
import type { ProtectedResource } from '../auth/resources'
import { clientAuthMethods } from './clients.repository'
import type { OAuthModel } from './model'

export function authorizationServerMetadata(publicUrl: string): OAuthModel.authorizationServerMetadata {
  return {
    issuer: publicUrl,
    authorization_endpoint: `${publicUrl}/oauth/authorize`,
    token_endpoint: `${publicUrl}/oauth/token`,
    revocation_endpoint: `${publicUrl}/oauth/token/revoke`,
    registration_endpoint: `${publicUrl}/oauth/register`,
    scopes_supported: [...scopes],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: [...clientAuthMethods],
    revocation_endpoint_auth_methods_supported: [...clientAuthMethods],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${publicUrl}/swagger`,
  }
}

/**
 * RFC 9728 §3.3: `resource` must be the identifier the well-known path was built from, so the root document
 * describes the whole host and each path-suffixed one (which MCP clients try first) its own resource: /api/v1,
 * or the MCP server at /mcp. Both take tokens in the Authorization header only (src/auth/index.ts).
 */
export function protectedResourceMetadata(
  publicUrl: string,
  path: '' | ProtectedResource,
): OAuthModel.protectedResourceMetadata {
  const common = {
    resource: `${publicUrl}${path}`,
    authorization_servers: [publicUrl],
    scopes_supported: [...scopes],
    bearer_methods_supported: ['header' as const],
  }
  // The MCP server's tools read and write threads; the audit log is read through /api/v1 alone.
  if (path === '/mcp') {
    const threadScopes = scopes.filter((scope) => !adminOnlyScopes.includes(scope))
    return { ...common, scopes_supported: threadScopes, resource_name: 'Threadhouse MCP server' }
  }
  return { ...common, resource_name: 'Threadhouse API', resource_documentation: `${publicUrl}/swagger` }
}
