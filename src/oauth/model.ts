// TypeBox schemas of the OAuth endpoints and the settings operations: documentation and types from one source.
import { type Static, t } from 'elysia'
import type { Scope } from '../auth/model'
import { integer } from '../shared/responses'

/** What each scope lets an app do, in the words the consent page uses. */
export const scopeDescriptions: Record<Scope, string> = {
  'threads:read': 'Read every conversation you can see in your organization, including its messages and AI responses',
  'threads:read:own': 'Read only the conversations you own',
  'threads:write': 'Start conversations, upload files, send messages and rate AI responses as you',
  'audit:read':
    "Read your organization's audit log: who signed in, changed members, tokens, apps and settings, and from where (owners and admins only)",
}

const url = (description: string) => t.String({ format: 'uri', description })
const optionalUrl = (description: string) => t.Optional(url(description))
const timestamp = (description: string) => t.String({ format: 'date-time', description })

export namespace OAuthModel {
  export const error = t.Object(
    {
      error: t.String({ examples: ['invalid_grant'], description: 'RFC 6749 §5.2 / RFC 7591 §3.2.2 error code.' }),
      error_description: t.String(),
    },
    { description: 'OAuth error body (RFC 6749 §5.2).' },
  )

  export const authorizationServerMetadata = t.Object(
    {
      issuer: url('Exactly PUBLIC_URL.'),
      authorization_endpoint: url(''),
      token_endpoint: url(''),
      revocation_endpoint: url(''),
      registration_endpoint: url(''),
      scopes_supported: t.Array(t.String()),
      response_types_supported: t.Array(t.Literal('code')),
      response_modes_supported: t.Array(t.Literal('query')),
      grant_types_supported: t.Array(t.String()),
      token_endpoint_auth_methods_supported: t.Array(t.String()),
      revocation_endpoint_auth_methods_supported: t.Array(t.String()),
      code_challenge_methods_supported: t.Array(t.Literal('S256')),
      authorization_response_iss_parameter_supported: t.Literal(true),
      service_documentation: url('This Swagger UI.'),
    },
    { description: 'RFC 8414 authorization server metadata.' },
  )
  export type authorizationServerMetadata = Static<typeof authorizationServerMetadata>

  export const protectedResourceMetadata = t.Object(
    {
      resource: url(
        'The protected resource: PUBLIC_URL, or PUBLIC_URL/api/v1 or PUBLIC_URL/mcp for the path-suffixed documents.',
      ),
      authorization_servers: t.Array(t.String()),
      scopes_supported: t.Array(t.String()),
      bearer_methods_supported: t.Array(t.Literal('header'), { description: 'The Authorization header only.' }),
      resource_name: t.String(),
      resource_documentation: t.Optional(t.String({ description: 'The API’s Swagger UI; absent for /mcp.' })),
    },
    { description: 'RFC 9728 protected resource metadata.' },
  )
  export type protectedResourceMetadata = Static<typeof protectedResourceMetadata>

  export const authorizeQuery = t.Object({
    response_type: t.Literal('code', { description: 'Must be `code`.' }),
    client_id: t.String({ description: 'Registered client ID.' }),
    redirect_uri: t.String({
      description: 'Must exactly match a registered redirect URI; for http loopback URIs the port may differ.',
    }),
    scope: t.String({ description: 'Space-separated scopes, all registered for the client.' }),
    state: t.Optional(t.String({ description: 'Opaque value returned unchanged.' })),
    code_challenge: t.Optional(
      t.String({ description: 'BASE64URL(SHA256(code_verifier)); required for public clients.' }),
    ),
    code_challenge_method: t.Optional(t.Literal('S256', { description: 'Only `S256`.' })),
    resource: t.Optional(
      t.String({
        description:
          'RFC 8707 resource indicator: PUBLIC_URL/api/v1 or PUBLIC_URL/mcp (tokens only that resource accepts), ' +
          'or PUBLIC_URL (both).',
      }),
    ),
  })

  export const tokenRequest = t.Object(
    {
      grant_type: t.Union([t.Literal('authorization_code'), t.Literal('refresh_token')]),
      code: t.Optional(t.String({ description: 'authorization_code: the code from the redirect.' })),
      redirect_uri: t.Optional(
        t.String({ description: 'authorization_code: identical to the authorization request’s.' }),
      ),
      code_verifier: t.Optional(t.String({ description: 'authorization_code: the PKCE verifier.' })),
      refresh_token: t.Optional(t.String({ description: 'refresh_token: the current refresh token.' })),
      scope: t.Optional(
        t.String({ description: 'refresh_token: a narrower scope for the new access token (never wider).' }),
      ),
      client_id: t.Optional(t.String({ description: 'Required unless sent in the Basic header.' })),
      client_secret: t.Optional(
        t.String({ description: 'Confidential clients registered for `client_secret_post`, or for no method.' }),
      ),
      resource: t.Optional(
        t.String({
          description:
            'RFC 8707 resource indicator (optional): may narrow the authorization’s resource, never widen or change it.',
        }),
      ),
    },
    { description: 'application/x-www-form-urlencoded' },
  )

  export const tokenResponse = t.Object({
    access_token: t.String({ description: 'Bearer token for the API (`tho_…`).' }),
    token_type: t.Literal('Bearer'),
    expires_in: integer({ examples: [3600] }),
    refresh_token: t.Optional(t.String({ description: 'Rotating refresh token (`thr_…`); use each one once.' })),
    scope: t.String({ description: 'Granted scopes, space-separated.' }),
  })

  export const revocationRequest = t.Object(
    {
      token: t.String({ description: 'An access token or a refresh token.' }),
      token_type_hint: t.Optional(t.Union([t.Literal('access_token'), t.Literal('refresh_token')])),
      client_id: t.Optional(t.String()),
      client_secret: t.Optional(t.String()),
    },
    { description: 'application/x-www-form-urlencoded' },
  )

  const clientMetadataFields = {
    client_name: t.String({
      description: 'Shown on the consent screen (marked "not verified" for registered clients).',
    }),
    redirect_uris: t.Array(t.String(), {
      minItems: 1,
      description:
        'ASCII https URIs; http only for localhost, 127.0.0.1 and [::1]; private-use schemes for public clients ' +
        'only, as reverse domain names (com.example.app:/cb, RFC 8252 §7.1); no fragments; javascript:, data:, ' +
        'file: and the like never.',
    }),
    scope: t.Optional(t.String({ description: 'Space-separated; defaults to every scope.' })),
    token_endpoint_auth_method: t.Optional(
      t.Union([t.Literal('client_secret_basic'), t.Literal('client_secret_post'), t.Literal('none')], {
        description:
          'Default `client_secret_basic`; `none` makes a public client (PKCE required). A named method is binding at ' +
          'the token and revocation endpoints; a client that names none may send its secret either way.',
      }),
    ),
    grant_types: t.Optional(
      t.Array(t.Union([t.Literal('authorization_code'), t.Literal('refresh_token')]), {
        description: 'Defaults to both.',
      }),
    ),
    response_types: t.Optional(t.Array(t.Literal('code'))),
    client_uri: optionalUrl('Homepage (https).'),
    logo_uri: optionalUrl('Logo shown on the consent screen (https).'),
    tos_uri: optionalUrl('Terms of service (https).'),
    policy_uri: optionalUrl('Privacy policy (https).'),
  }

  export const registrationRequest = t.Object(clientMetadataFields, {
    description: 'RFC 7591 client metadata. Unknown fields are ignored.',
  })

  export const registered = t.Object({
    client_id: t.String(),
    client_id_issued_at: integer({ description: 'Seconds since the epoch.' }),
    ...clientMetadataFields,
    client_secret: t.Optional(t.String({ description: 'Confidential clients only, shown this once (`ths_…`).' })),
    client_secret_expires_at: t.Optional(t.Literal(0, { description: '0: the secret does not expire.' })),
  })
  export type registered = Static<typeof registered>

  export const connectedApp = t.Object({
    client_id: t.String(),
    client_name: t.String(),
    verified: t.Boolean({ description: 'False for self-registered clients.' }),
    scopes: t.Array(t.String(), { description: 'Every scope the app holds for you.' }),
    connected_at: timestamp('First approval still in force.'),
    last_used_at: t.Nullable(timestamp('Last API call or refresh with its tokens (to the minute).')),
  })
  export type connectedApp = Static<typeof connectedApp>

  export const clientSummary = t.Object({
    client_id: t.String(),
    client_name: t.String(),
    owner: t.Nullable(
      t.Object({ id: t.String(), name: t.Nullable(t.String()), email: t.String() }, { description: 'Creator.' }),
    ),
    redirect_uris: t.Array(t.String()),
    token_endpoint_auth_method: t.String(),
    verified: t.Boolean(),
    registered_via: t.Union(
      [t.Literal('builtin'), t.Literal('settings'), t.Literal('token_registration'), t.Literal('open_registration')],
      { description: 'How the client was created.' },
    ),
    created_at: timestamp('Creation time.'),
    last_used_at: t.Nullable(timestamp('Last token issued or used (to the minute).')),
  })
  export type clientSummary = Static<typeof clientSummary>

  export const clientDetail = t.Object({
    ...clientSummary.properties,
    scope: t.String(),
    grant_types: t.Array(t.String()),
    response_types: t.Array(t.String()),
    client_uri: t.Nullable(t.String()),
    logo_uri: t.Nullable(t.String()),
    tos_uri: t.Nullable(t.String()),
    policy_uri: t.Nullable(t.String()),
  })
  export type clientDetail = Static<typeof clientDetail>

  export const rotatedSecret = t.Object({
    client_id: t.String(),
    client_secret: t.String({ description: 'The new secret, shown this once; the old one no longer works.' }),
  })
  export type rotatedSecret = Static<typeof rotatedSecret>

  export const registrationToken = t.Object({
    registration_token: t.String({ description: 'Send as `Authorization: Bearer …` to POST /oauth/register, once.' }),
    expires_at: timestamp('60 minutes after creation.'),
  })

  export const settingsSession = t.Object({
    user: t.Object({
      id: t.String(),
      email: t.String(),
      name: t.Nullable(t.String()),
      role: t.String(),
      organization_slug: t.String(),
    }),
    csrf_token: t.String({ description: 'Send as the `X-CSRF-Token` header on every write.' }),
  })

  export const clientParams = t.Object({ clientId: t.String() })
}
