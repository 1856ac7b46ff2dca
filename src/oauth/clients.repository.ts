// The storage contract for OAuth clients and the registration tokens that let a client register into an
// organization (one of two contracts of this folder; grants.repository.ts holds codes, grants and tokens).
// Plain data in and out, so that SQLite and PostgreSQL can both implement it.
import type { Scope } from '../auth/model'
import type { AuditEntry } from '../shared/audit'

/** How a client came to exist; only `builtin` and `settings` clients have names Threadhouse vouches for. */
export const clientOrigins = ['builtin', 'settings', 'token_registration', 'open_registration'] as const
export type ClientOrigin = (typeof clientOrigins)[number]

export const clientAuthMethods = ['client_secret_basic', 'client_secret_post', 'none'] as const
export type ClientAuthMethod = (typeof clientAuthMethods)[number]

/** A client as stored; timestamps are epoch ms. */
export interface NewClient {
  clientId: string
  origin: ClientOrigin
  /** Null for an openly registered client until the first organization approves it (and for `builtin`). */
  organizationId: number | null
  /** The member who created it (settings) or issued its registration token; null for open registration. */
  ownerId: number | null
  name: string
  redirectUris: string[]
  scopes: Scope[]
  grantTypes: string[]
  responseTypes: string[]
  authMethod: ClientAuthMethod
  /** Whether `authMethod` was named at registration rather than defaulted. */
  authMethodDeclared: boolean
  /** SHA-256 of the client secret; null for public clients. */
  secretHash: string | null
  clientUri: string | null
  logoUri: string | null
  tosUri: string | null
  policyUri: string | null
  createdAt: number
}

export interface Client extends NewClient {
  id: number
  lastUsedAt: number | null
}

/** A client with the member who owns it, as the settings and administration screens list it. */
export interface ManagedClient extends Client {
  owner: { sub: string; name: string | null; email: string } | null
}

export interface NewRegistrationToken {
  tokenHash: string
  /** The member who issued it: the owner of the client registered with it. */
  userId: number
  /** The organization the client registered with it belongs to. */
  organizationId: number
  createdAt: number
  expiresAt: number
}

export interface ClientRepository {
  /** The client registered under this client_id, or null. */
  findByClientId(clientId: string): Promise<Client | null>
  /**
   * The client with this client_id, stored first when there is none (for the built-in client, whose row grants and
   * tokens reference). An insert that does nothing when the client_id exists, so concurrent first uses store one row.
   */
  findOrCreate(client: NewClient): Promise<Client>
  /** Stores a client, recording the event `audit` makes of it in the same transaction. */
  create(client: NewClient, audit: (client: Client) => AuditEntry): Promise<Client>
  /** Stores a registration token (its hash only), recording the event `audit` makes of its ID with it. */
  createRegistrationToken(token: NewRegistrationToken, audit: (tokenId: number) => AuditEntry): Promise<void>
  /** Whether a registration token with this hash exists, is unused and has not expired at `now`. */
  registrationTokenUsable(tokenHash: string, now: number): Promise<boolean>
  /**
   * Registers a client with a registration token: consumes the token and stores the client in the token's
   * organization, owned by its issuer, in one unit of work. Single use: the token is consumed by a conditional
   * update (unused and unexpired at `now`), so of two registrations racing on one token exactly one stores a
   * client; and a registration that fails to store leaves the token usable. Null, storing nothing, when the token
   * is unknown, expired or already used. The event `audit` makes of the client and the token is recorded with them.
   */
  registerWithToken(
    tokenHash: string,
    client: Omit<NewClient, 'organizationId' | 'ownerId'>,
    now: number,
    audit: (client: Client, tokenId: number) => AuditEntry,
  ): Promise<Client | null>
  /** The organization's clients, newest first. */
  listInOrganization(organizationId: number): Promise<ManagedClient[]>
  /** The clients this member owns in this organization, newest first. */
  listOwned(userId: number, organizationId: number): Promise<ManagedClient[]>
  /** One client of this organization; null for other organizations' clients, unclaimed ones and unknown ones. */
  findInOrganization(organizationId: number, clientId: string): Promise<ManagedClient | null>
  /** Replaces a client's secret (its hash): the old one stops working at once. Records `audit` with it. */
  replaceSecret(id: number, secretHash: string, audit: AuditEntry): Promise<void>
  /**
   * Deletes a client of this organization, and with it every code, grant and token it had, so all of its tokens
   * stop working at once, recording `audit`. False when the organization has no such client (nothing recorded).
   */
  deleteInOrganization(organizationId: number, clientId: string, audit: AuditEntry): Promise<boolean>
}
