// What the authorization server's behaviour needs: its storage, the time and its own address.
import type { Clock } from '../shared/time'
import type { Store } from '../store'

export interface OAuthDeps {
  store: Store
  clock: Clock
  /** PUBLIC_URL: the issuer, and the base of every resource and redirect this server names. */
  publicUrl: string
}
