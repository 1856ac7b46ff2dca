// The resources this server protects with bearer tokens and where each one's metadata is (RFC 9728): the API's 401s
// name it (index.ts), the authorization server serves it and checks that tokens are asked for one of them (src/oauth/).

/** The protected resources, as paths under PUBLIC_URL: what grants and tokens store as their audience. */
export const protectedResources = ['/api/v1', '/mcp'] as const
export type ProtectedResource = (typeof protectedResources)[number]

/**
 * Where a protected resource's metadata lives (RFC 9728 §3.1: the well-known path, then the resource's own path);
 * every 401 of that resource points here (§5.1).
 */
export function resourceMetadataUrl(publicUrl: string, resource: ProtectedResource = '/api/v1'): string {
  return `${publicUrl}/.well-known/oauth-protected-resource${resource}`
}
