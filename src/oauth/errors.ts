// OAuth errors, one class per RFC error code (RFC 6749 §4.1.2.1 and §5.2, RFC 7009, RFC 7591 §3.2.2,
// RFC 8707 §2, RFC 6750 §3.1). The endpoints render them as `{ error, error_description }`.

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description)
  }
}

export class InvalidRequest extends OAuthError {
  constructor(description: string) {
    super('invalid_request', description)
  }
}

/** How the failed request tried to authenticate: only an Authorization header earns a Basic challenge. */
export type AttemptedClientAuth = 'client_secret_basic' | 'client_secret_post' | 'none'

export class InvalidClient extends OAuthError {
  /** `required`: the one method the client registered, when the failure is that it used another. */
  constructor(description: string, attempted: AttemptedClientAuth, required?: AttemptedClientAuth) {
    // RFC 6749 §5.2: a client that tried the Authorization header must get 401 with a matching challenge, and one
    // that must use Basic learns it the same way.
    const challenge: Record<string, string> =
      attempted === 'client_secret_basic' || required === 'client_secret_basic'
        ? { 'www-authenticate': 'Basic realm="threadhouse", charset="UTF-8"' }
        : {}
    super('invalid_client', description, 401, challenge)
  }
}

export class InvalidGrant extends OAuthError {
  constructor(description: string) {
    super('invalid_grant', description)
  }
}

export class UnauthorizedClient extends OAuthError {
  constructor(description: string) {
    super('unauthorized_client', description)
  }
}

export class UnsupportedGrantType extends OAuthError {
  constructor(description: string) {
    super('unsupported_grant_type', description)
  }
}

export class UnsupportedResponseType extends OAuthError {
  constructor(description: string) {
    super('unsupported_response_type', description)
  }
}

export class InvalidScope extends OAuthError {
  constructor(description: string) {
    super('invalid_scope', description)
  }
}

export class AccessDenied extends OAuthError {
  constructor(description: string) {
    super('access_denied', description, 403)
  }
}

/** RFC 8707: the `resource` names something these tokens cannot be used at. */
export class InvalidTarget extends OAuthError {
  constructor(description: string) {
    super('invalid_target', description)
  }
}

export class InvalidRedirectUri extends OAuthError {
  constructor(description: string) {
    super('invalid_redirect_uri', description)
  }
}

export class InvalidClientMetadata extends OAuthError {
  constructor(description: string) {
    super('invalid_client_metadata', description)
  }
}

/**
 * A registration token that is unknown, used or expired, or none where one is required. Per RFC 6750 §3.1 the
 * challenge names the error only when a token was sent.
 */
export class InvalidToken extends OAuthError {
  constructor(description: string, tokenSent: 'token sent' | 'no token') {
    const error =
      tokenSent === 'token sent'
        ? `, error="invalid_token", error_description="${description.replaceAll('"', "'")}"`
        : ''
    super('invalid_token', description, 401, { 'www-authenticate': `Bearer realm="threadhouse"${error}` })
  }
}

export class TemporarilyUnavailable extends OAuthError {
  constructor(description: string, retryAfterSeconds: number) {
    super('temporarily_unavailable', description, 429, { 'retry-after': String(retryAfterSeconds) })
  }
}

/** Token, revocation and registration responses must never be cached (RFC 6749 §5.1, RFC 7591 §3.2.1). */
export const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' } as const

export function oauthErrorResponse(error: OAuthError): Response {
  return Response.json(
    { error: error.error, error_description: error.description },
    { status: error.status, headers: { ...noStore, ...error.headers } },
  )
}
