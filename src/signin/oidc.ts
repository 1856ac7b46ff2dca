// Optional sign-in through an OpenID Connect provider (Google, Microsoft Entra ID, Keycloak, Authentik, Okta,
// GitLab…): authorization code flow with PKCE, state and nonce, through arctic's generic OAuth 2.0 client; the ID
// token is verified with jose against the provider's published keys. A person is matched to an existing
// Threadhouse user by verified email only: unknown emails are refused, never created.
import { CodeChallengeMethod, generateCodeVerifier, generateState, OAuth2Client } from 'arctic'
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose'
import { findUserByEmail } from '../auth/users'
import type { UserRepository } from '../auth/users.repository'
import type { Config } from '../config'

export interface OidcSettings {
  issuer: string
  clientId: string
  /** Null for a public client. */
  clientSecret: string | null
  /** The provider as the sign-in button names it. */
  name: string
  redirectUri: string
}

export const oidcCallbackPath = '/login/oidc/callback'

export function oidcSettings(config: Config): OidcSettings | null {
  if (config.OIDC_ISSUER === undefined || config.OIDC_CLIENT_ID === undefined) return null
  return {
    issuer: config.OIDC_ISSUER,
    clientId: config.OIDC_CLIENT_ID,
    clientSecret: config.OIDC_CLIENT_SECRET ?? null,
    name: config.OIDC_NAME,
    redirectUri: `${config.PUBLIC_URL}${oidcCallbackPath}`,
  }
}

/** Why a sign-in through the provider did not open a session; `reason` is shown to the person. */
export class OidcRefusal extends Error {
  constructor(
    readonly status: 400 | 403 | 502,
    readonly reason: string,
  ) {
    super(reason)
  }
}

interface Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  userinfo_endpoint?: string
}

/** What the browser carries between leaving for the provider and coming back, in a short-lived cookie. */
export interface PendingSignIn {
  state: string
  verifier: string
  nonce: string
  next: string
}

export interface OidcIdentity {
  subject: string
  email: string
}

const scopes = ['openid', 'email', 'profile']

function isDiscovery(value: unknown): value is Discovery {
  const document = value as Partial<Record<keyof Discovery, unknown>> | null
  return (
    typeof document?.issuer === 'string' &&
    typeof document.authorization_endpoint === 'string' &&
    typeof document.token_endpoint === 'string' &&
    typeof document.jwks_uri === 'string'
  )
}

/** One provider: its discovery document and keys are fetched once, and again after a failure. */
export function createOidcClient(settings: OidcSettings, now: () => number) {
  const client = new OAuth2Client(settings.clientId, settings.clientSecret, settings.redirectUri)
  let discovered: Promise<{ document: Discovery; keys: ReturnType<typeof createRemoteJWKSet> }> | undefined

  async function discover() {
    const url = `${settings.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
    const response = await fetch(url, { headers: { accept: 'application/json' } })
    const document: unknown = response.ok ? await response.json() : null
    if (!isDiscovery(document)) throw new Error(`no usable discovery document at ${url}`)
    // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
    if (document.issuer !== settings.issuer) throw new Error(`the discovery document names ${document.issuer}`)
    return { document, keys: createRemoteJWKSet(new URL(document.jwks_uri)) }
  }

  function provider() {
    discovered ??= discover().catch((error: unknown) => {
      discovered = undefined
      throw new OidcRefusal(502, `${settings.name} could not be reached: ${String(error)}`)
    })
    return discovered
  }

  /** The email of the person, from the ID token or else from the userinfo endpoint, if the provider vouches for it. */
  async function verifiedEmail(claims: JWTPayload, accessToken: string, document: Discovery): Promise<string> {
    let email = claims.email
    let verified = claims.email_verified
    if (typeof email !== 'string' && document.userinfo_endpoint) {
      const response = await fetch(document.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}` } })
      const info = (response.ok ? await response.json() : {}) as JWTPayload
      // OpenID Connect Core §5.3.2: userinfo of another subject must not be used.
      if (info.sub === claims.sub) {
        email = info.email
        verified = info.email_verified
      }
    }
    if (typeof email !== 'string') throw new OidcRefusal(403, `${settings.name} did not share your email address.`)
    if (verified !== true && verified !== 'true') {
      throw new OidcRefusal(403, `${settings.name} has not verified your email address ${email}.`)
    }
    return email
  }

  return {
    name: settings.name,

    /** Where to send the browser, and what it must bring back. */
    async start(next: string): Promise<{ url: URL; pending: PendingSignIn }> {
      const { document } = await provider()
      const pending = { state: generateState(), verifier: generateCodeVerifier(), nonce: generateState(), next }
      const url = client.createAuthorizationURLWithPKCE(
        document.authorization_endpoint,
        pending.state,
        CodeChallengeMethod.S256,
        pending.verifier,
        scopes,
      )
      url.searchParams.set('nonce', pending.nonce)
      return { url, pending }
    },

    /** Exchanges the code (with the PKCE verifier) and checks the ID token's signature, issuer, audience and nonce. */
    async finish(code: string, pending: PendingSignIn): Promise<OidcIdentity> {
      const { document, keys } = await provider()
      let idToken: string
      let accessToken: string
      try {
        const tokens = await client.validateAuthorizationCode(document.token_endpoint, code, pending.verifier)
        idToken = tokens.idToken()
        accessToken = tokens.accessToken()
      } catch (error) {
        throw new OidcRefusal(400, `${settings.name} did not accept the sign-in: ${String(error)}`)
      }
      const claims = await jwtVerify(idToken, keys, {
        issuer: settings.issuer,
        audience: settings.clientId,
        currentDate: new Date(now()),
      }).then(
        (verified) => verified.payload,
        (error: unknown) => {
          throw new OidcRefusal(400, `The identity ${settings.name} sent could not be verified: ${String(error)}`)
        },
      )
      if (claims.nonce !== pending.nonce || typeof claims.sub !== 'string') {
        throw new OidcRefusal(400, `The identity ${settings.name} sent belongs to another sign-in.`)
      }
      return { subject: claims.sub, email: await verifiedEmail(claims, accessToken, document) }
    },
  }
}

export type OidcClient = ReturnType<typeof createOidcClient>

/** The Threadhouse user with this verified email; see the module comment for why nobody is created. */
export async function userForIdentity(
  users: UserRepository,
  identity: OidcIdentity,
  providerName: string,
): Promise<{ id: number; organizationId: number }> {
  const user = await findUserByEmail(users, identity.email)
  if (!user) {
    throw new OidcRefusal(
      403,
      `No Threadhouse account uses ${identity.email}. Ask an administrator to add you, then sign in with ${providerName} again.`,
    )
  }
  return { id: user.id, organizationId: user.organizationId }
}
