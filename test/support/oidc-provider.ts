// A small OpenID Connect provider on loopback for tests: discovery, an authorization endpoint that signs the
// person in at once and redirects back, a token endpoint that checks the client, the code and PKCE, signed ID
// tokens (ES256 through jose), published keys and userinfo. Each test says who signs in and how the provider
// misbehaves.
import { sha256 } from '@oslojs/crypto/sha2'
import { encodeBase64urlNoPadding } from '@oslojs/encoding'
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'

export interface FakePerson {
  sub: string
  email?: string
  emailVerified?: boolean
  /** Give the email only through userinfo, as some providers do. */
  emailOnlyInUserinfo?: boolean
}

export interface Misbehaviour {
  /** Sign ID tokens with a key that is not published. */
  foreignKey?: boolean
  /** Put another nonce in the ID token (a replayed token). */
  wrongNonce?: boolean
  /** Answer the authorization request with this error instead of a code. */
  error?: string
}

interface Grant {
  clientId: string
  redirectUri: string
  challenge: string
  nonce: string
  person: FakePerson
}

export interface FakeOidcProvider extends AsyncDisposable {
  issuer: string
  clientId: string
  clientSecret: string
  person: FakePerson
  misbehaviour: Misbehaviour
  /** The authorization requests received, for assertions on PKCE, state and nonce. */
  authorizations: URLSearchParams[]
}

export async function startFakeOidcProvider(): Promise<FakeOidcProvider> {
  const signing = await generateKeyPair('ES256')
  const foreign = await generateKeyPair('ES256')
  const jwk: JWK = { ...(await exportJWK(signing.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
  const grants = new Map<string, Grant>()
  const tokens = new Map<string, FakePerson>()
  let issuer = ''
  const provider = {
    clientId: 'threadhouse-test',
    clientSecret: 'test-secret',
    person: { sub: 'person-1', email: 'ada@example.com', emailVerified: true } as FakePerson,
    misbehaviour: {} as Misbehaviour,
    authorizations: [] as URLSearchParams[],
  }

  async function idToken(grant: Grant): Promise<string> {
    const { person } = grant
    const claims: Record<string, unknown> = {
      nonce: provider.misbehaviour.wrongNonce ? 'another-nonce' : grant.nonce,
    }
    if (!person.emailOnlyInUserinfo && person.email) {
      claims.email = person.email
      claims.email_verified = person.emailVerified ?? false
    }
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(grant.clientId)
      .setSubject(person.sub)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(provider.misbehaviour.foreignKey ? foreign.privateKey : signing.privateKey)
  }

  async function token(request: Request): Promise<Response> {
    const form = new URLSearchParams(await request.text())
    const basic = request.headers.get('authorization') ?? ''
    const expected = `Basic ${btoa(`${provider.clientId}:${provider.clientSecret}`)}`
    if (basic !== expected) return Response.json({ error: 'invalid_client' }, { status: 401 })
    const grant = grants.get(form.get('code') ?? '')
    grants.delete(form.get('code') ?? '')
    const verifier = form.get('code_verifier') ?? ''
    const challenge = encodeBase64urlNoPadding(sha256(new TextEncoder().encode(verifier)))
    if (!grant || grant.redirectUri !== form.get('redirect_uri') || grant.challenge !== challenge) {
      return Response.json({ error: 'invalid_grant' }, { status: 400 })
    }
    const accessToken = crypto.randomUUID()
    tokens.set(accessToken, grant.person)
    return Response.json({
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: 300,
      id_token: await idToken(grant),
    })
  }

  function authorize(url: URL): Response {
    const query = url.searchParams
    provider.authorizations.push(query)
    const back = new URL(query.get('redirect_uri') ?? '')
    back.searchParams.set('state', query.get('state') ?? '')
    if (provider.misbehaviour.error) {
      back.searchParams.set('error', provider.misbehaviour.error)
    } else {
      const code = crypto.randomUUID()
      grants.set(code, {
        clientId: query.get('client_id') ?? '',
        redirectUri: query.get('redirect_uri') ?? '',
        challenge: query.get('code_challenge') ?? '',
        nonce: query.get('nonce') ?? '',
        person: { ...provider.person },
      })
      back.searchParams.set('code', code)
    }
    return new Response(null, { status: 302, headers: { location: back.href } })
  }

  function userinfo(request: Request): Response {
    const person = tokens.get((request.headers.get('authorization') ?? '').replace(/^Bearer /, ''))
    if (!person) return new Response(null, { status: 401 })
    return Response.json({ sub: person.sub, email: person.email, email_verified: person.emailVerified ?? false })
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      switch (url.pathname) {
        case '/.well-known/openid-configuration':
          return Response.json({
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            userinfo_endpoint: `${issuer}/userinfo`,
            response_types_supported: ['code'],
            code_challenge_methods_supported: ['S256'],
          })
        case '/authorize':
          return authorize(url)
        case '/token':
          return token(request)
        case '/jwks':
          return Response.json({ keys: [jwk] })
        case '/userinfo':
          return userinfo(request)
        default:
          return new Response('not found', { status: 404 })
      }
    },
  })
  issuer = `http://127.0.0.1:${server.port}`
  return Object.assign(provider, {
    issuer,
    async [Symbol.asyncDispose]() {
      await server.stop(true)
    },
  })
}
