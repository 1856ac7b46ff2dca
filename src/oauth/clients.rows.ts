// The mapping between a client's row and the contract's Client, the same for both dialects: their tables have the
// same columns with the same JavaScript types (the PostgreSQL twin keeps its lists as JSON text, as SQLite does).
import { isScope } from '../auth/model'
import type { Client, NewClient } from './clients.repository'
import type { oauthClients } from './oauth.table'

export type ClientRow = typeof oauthClients.$inferSelect
export type ClientValues = typeof oauthClients.$inferInsert

export function toClient(row: ClientRow): Client {
  return {
    id: row.id,
    clientId: row.clientId,
    origin: row.origin,
    organizationId: row.organizationId,
    ownerId: row.ownerId,
    name: row.name,
    redirectUris: row.redirectUris,
    scopes: row.scopes.split(' ').filter(isScope),
    grantTypes: row.grantTypes,
    responseTypes: row.responseTypes,
    authMethod: row.tokenEndpointAuthMethod,
    authMethodDeclared: row.tokenEndpointAuthMethodDeclared,
    secretHash: row.secretHash,
    clientUri: row.clientUri,
    logoUri: row.logoUri,
    tosUri: row.tosUri,
    policyUri: row.policyUri,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
  }
}

export function valuesOf(client: NewClient): ClientValues {
  return {
    clientId: client.clientId,
    origin: client.origin,
    organizationId: client.organizationId,
    ownerId: client.ownerId,
    name: client.name,
    redirectUris: client.redirectUris,
    scopes: client.scopes.join(' '),
    grantTypes: client.grantTypes,
    responseTypes: client.responseTypes,
    tokenEndpointAuthMethod: client.authMethod,
    tokenEndpointAuthMethodDeclared: client.authMethodDeclared,
    secretHash: client.secretHash,
    clientUri: client.clientUri,
    logoUri: client.logoUri,
    tosUri: client.tosUri,
    policyUri: client.policyUri,
    createdAt: client.createdAt,
  }
}
