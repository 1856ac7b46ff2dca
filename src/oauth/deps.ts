// What the authorization server's behaviour needs: its storage, the time and its own address.
import type { Clock } from '../shared/time'
import type { ClientRepository } from './clients.repository'
import type { GrantRepository } from './grants.repository'

export interface OAuthDeps {
  oauthClients: ClientRepository
  oauthGrants: GrantRepository
  clock: Clock
  /** PUBLIC_URL: the issuer, and the base of every resource and redirect this server names. */
  publicUrl: string
}
