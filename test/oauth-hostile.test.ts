// Property-based hostile input for the OAuth endpoints: authorization (signed in and out, and the consent
// form), token, revocation and registration. Whatever the parameters, the body or its content type, the answer is
// never a 5xx, a JSON endpoint's error is an RFC 6749 body, and the authorization endpoint never redirects
// anywhere but sign-in or a registered redirect URI. Fixed seeds keep every run, and every failure, reproducible.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { redirectUriMatches } from '../src/oauth/clients'
import { harness, publicUrl } from './support/helpers'
import { approve, basic, formAction, hiddenField, pkce, postOAuth, register, signedIn } from './support/oauth-helpers'

// One harness per test and users signed in with argon2: slow on a busy machine, fast otherwise.

const seed = 42

// ---------------------------------------------------------------------------------------------------------
// Values

const odd = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\ud800',
  '\u202e',
  '😀',
  'é',
  '%',
  '%zz',
  '%ff',
  '%00',
  '+',
  '&',
  '=',
  '"',
  "'><script>",
  '\r\nx-injected: 1',
  'x'.repeat(10_000),
  '[object Object]',
  'null',
  '__proto__',
)

/** Short strings of any kind, odd constants, and full Unicode (lone surrogates included). */
const text = fc.oneof(fc.string(), odd, fc.string({ unit: 'binary', maxLength: 20 }))

const loopbackHost = fc.constantFrom(
  '127.0.0.1',
  'localhost',
  '[::1]',
  'LOCALHOST',
  '127.000.000.001',
  '[::ffff:7f00:1]',
)
const port = fc.oneof(
  fc.integer({ min: 0, max: 65_535 }).map(String),
  fc.integer({ min: 65_536, max: 10_000_000 }).map(String),
  fc.constantFrom('99999', '65536', '-1', '00080', '1e3', '', '0x50', '4294967297', '9'.repeat(30)),
)
const path = fc.oneof(
  fc.constantFrom('/callback', '/cb', '', '/', '/callback/', '/%2e%2e/x', '/cällback'),
  text.map((s) => `/${s}`),
)

/** Redirect URIs and other URLs a client might send: plausible, broken and dangerous ones. */
const url = fc.oneof(
  fc.tuple(loopbackHost, port, path).map(([host, p, rest]) => `http://${host}:${p}${rest}`),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.constantFrom(
    'http://127.0.0.1:99999/callback',
    'http://127.0.0.1:99999/cb',
    'http://[::1]:65536/callback',
    'http://localhost:0/callback',
    'http://127.0.0.1/callback#x',
    'http://127.0.0.1/callback?x=1&x=2',
    'http://user:pw@127.0.0.1/callback',
    'http://127.0.0.1/callback x',
    'http://127.0.0.1/callback\u0000',
    'http://127.0.0.1/cällback',
    'https://exämple.example/cb',
    'https://app.example/cb',
    'https://app.example/cb?x=1',
    'https://app.example:99999/cb',
    'https://[::1/cb',
    'https:/app.example/cb',
    '//app.example/cb',
    '/relative',
    'com.example.app:/cb',
    'com.example.app://cb',
    'com.example.app:',
    'cursor://anysphere/oauth',
    'view-source:https://app.example/',
    'jar:https://app.example/x!/',
    'x-javascript:alert(1)',
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'file:///etc/passwd',
    'blob:https://app.example/x',
    'about:blank',
    'urn:ietf:wg:oauth:2.0:oob',
    'a:',
    ':',
  ),
)

/** Where a JSON document expects a string: everything else too. */
const jsonish = fc.oneof(text, url, fc.jsonValue({ maxDepth: 2 }), fc.array(url, { maxLength: 3 }))

type Pairs = [string, string][]

/** Sets, appends (a repeated parameter) or removes one parameter. */
const mutation = (names: readonly string[], values: fc.Arbitrary<string>) =>
  fc.tuple(
    fc.constantFrom('set', 'append', 'delete'),
    fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: text }),
    values,
  )

function mutate(base: Pairs, mutations: [string, string, string][]): Pairs {
  let pairs = [...base]
  for (const [kind, name, value] of mutations) {
    if (kind === 'delete') pairs = pairs.filter(([key]) => key !== name)
    else if (kind === 'append') pairs.push([name, value])
    else pairs = [...pairs.filter(([key]) => key !== name), [name, value]]
  }
  return pairs
}

/** A request a client could not send at all (a header value with a newline, say) is not a server failure. */
function requestOrNull(input: string, init: RequestInit): Request | null {
  try {
    return new Request(input, init)
  } catch {
    return null
  }
}

async function expectOAuthAnswer(response: Response, context: unknown): Promise<void> {
  const text = await response.text()
  expect({ status: response.status < 500, context, text }).toEqual({ status: true, context, text })
  if (response.status < 400) return
  expect(JSON.parse(text)).toEqual({ error: expect.any(String), error_description: expect.any(String) })
}

// ---------------------------------------------------------------------------------------------------------
// A world with every kind of client, a signed-in person, and a few codes and tokens to exchange

const publicUris = ['http://127.0.0.1/callback', 'com.example.app:/cb']
const confidentialUris = ['https://app.example/cb', 'https://app.example/cb?x=1', 'http://localhost/cb']

async function world() {
  const h = await harness()
  const publicClient = await register(h, { redirect_uris: publicUris })
  const basicClient = await register(h, {
    redirect_uris: confidentialUris,
    token_endpoint_auth_method: 'client_secret_basic',
  })
  const postClient = await register(h, {
    redirect_uris: confidentialUris,
    token_endpoint_auth_method: 'client_secret_post',
  })
  const defaultClient = await register(h, { redirect_uris: confidentialUris, token_endpoint_auth_method: undefined })
  const clients = [publicClient, basicClient, postClient, defaultClient]
  const { browser } = await signedIn(h)
  const { challenge } = pkce()
  // Unused codes for each client (the public one's with its PKCE verifier) and a live refresh token.
  const publicGrant = await approve(browser, {
    clientId: publicClient.client_id,
    redirectUri: 'http://127.0.0.1:5000/callback',
  })
  const codes = [publicGrant.code]
  for (const client of [basicClient, postClient, defaultClient]) {
    const redirectUri = 'https://app.example/cb'
    codes.push((await approve(browser, { clientId: client.client_id, redirectUri, withoutPkce: 'yes' })).code)
  }
  const forRefresh = await approve(browser, {
    clientId: publicClient.client_id,
    redirectUri: 'http://127.0.0.1/callback',
  })
  const tokens = await postOAuth(h, '/oauth/token', {
    grant_type: 'authorization_code',
    code: forRefresh.code,
    redirect_uri: 'http://127.0.0.1/callback',
    client_id: publicClient.client_id,
    code_verifier: forRefresh.verifier ?? '',
  })
  const refreshToken: string = tokens.body.refresh_token
  const accessToken: string = tokens.body.access_token
  return {
    h,
    browser,
    clients,
    publicClient,
    basicClient,
    postClient,
    defaultClient,
    codes,
    refreshToken,
    accessToken,
    verifier: publicGrant.verifier ?? '',
    challenge,
  }
}

type World = Awaited<ReturnType<typeof world>>

// ---------------------------------------------------------------------------------------------------------
// Authorization endpoint

const authorizeNames = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
  'response_mode',
  'prompt',
] as const

function authorizeBases(w: World): Pairs[] {
  return w.clients.flatMap((client) =>
    client.redirect_uris.map(
      (redirectUri: string): Pairs => [
        ['response_type', 'code'],
        ['client_id', client.client_id],
        ['redirect_uri', redirectUri.startsWith('http://') ? redirectUri.replace('/c', ':4000/c') : redirectUri],
        ['scope', 'threads:read threads:write'],
        ['state', 'xyz'],
        ['code_challenge', w.challenge],
        ['code_challenge_method', 'S256'],
      ],
    ),
  )
}

/** A registered redirect URI, slightly changed: another port (valid or not), host spelling, case or suffix. */
function nearRedirectUri(w: World): fc.Arbitrary<string> {
  const registered = w.clients.flatMap((client) => client.redirect_uris as string[])
  return fc
    .tuple(
      fc.constantFrom(...registered),
      port,
      fc.oneof({ weight: 3, arbitrary: fc.constant('') }, fc.constantFrom('/', 'x', '?y=2', '#f', '%20', 'é')),
    )
    .map(([uri, p, suffix]) => {
      const loopback = /^http:\/\/([^/]+)(\/.*)$/.exec(uri)
      return `${loopback ? `http://${loopback[1]}:${p}${loopback[2]}` : uri}${suffix}`
    })
}

function authorizeValues(w: World): fc.Arbitrary<string> {
  return fc.oneof(
    text,
    url,
    nearRedirectUri(w),
    fc.constantFrom(
      ...w.clients.map((client) => client.client_id),
      'threadhouse-docs',
      'code',
      'token',
      'S256',
      'plain',
      w.challenge,
      'threads:read',
      'threads:read offline_access',
      'threads:read threads:read',
      `${publicUrl}/api/v1`,
      'query',
      'fragment',
    ),
  )
}

/** A redirect from the authorization endpoint goes to sign-in, or to the requested redirect URI once it matched. */
function expectSafeLocation(response: Response, w: World, request: Request, context: unknown): void {
  const location = response.headers.get('location')
  if (location === null || location.startsWith('/login?')) return
  const requested = new URL(request.url).searchParams.get('redirect_uri') ?? ''
  const registered = w.clients.flatMap((client) => client.redirect_uris as string[])
  const safe =
    registered.some((uri) => redirectUriMatches(uri, requested)) &&
    location.startsWith(`${requested}${requested.includes('?') ? '&' : '?'}`)
  expect({ safe, location, context }).toEqual({ safe: true, location, context })
}

function authorizeProperty(w: World, send: (request: Request) => Promise<Response>, method: 'GET' | 'POST', csrf = '') {
  return fc.asyncProperty(
    fc.constantFrom(...authorizeBases(w)),
    fc.oneof(
      fc.array(mutation(authorizeNames, authorizeValues(w)), { maxLength: 3 }),
      nearRedirectUri(w).map((uri): [string, string, string][] => [['set', 'redirect_uri', uri]]),
    ),
    fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
    fc.constantFrom('approve', 'deny', '', 'maybe'),
    async (base, mutations, rawTail, decision) => {
      const query = new URLSearchParams(mutate(base, mutations)).toString()
      const target = `${publicUrl}/oauth/authorize?${query}${rawTail === undefined ? '' : `&${rawTail}`}`
      const init: RequestInit =
        method === 'GET'
          ? {}
          : {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded', origin: publicUrl },
              body: new URLSearchParams({ csrf, decision }),
            }
      const request = requestOrNull(target, init)
      if (!request) return
      const response = await send(request)
      const context = { method, target }
      expect({ status: response.status < 500, context }).toEqual({ status: true, context })
      expectSafeLocation(response, w, request, context)
      await response.arrayBuffer()
    },
  )
}

test('authorization endpoint, signed out and signed in, and the consent form: never a 5xx, never an open redirect', async () => {
  const w = await world()
  await using h = w.h
  const signedOut = (request: Request) => h.app.handle(request)
  const signedInSend = (request: Request) =>
    w.browser.request(request.method, request.url, {
      headers: Object.fromEntries(request.headers),
      body: request.method === 'POST' ? request.body : undefined,
    })
  const page = await w.browser.get(`/oauth/authorize?${new URLSearchParams(authorizeBases(w)[0])}`)
  const html = await page.text()
  expect(formAction(html)).toStartWith('/oauth/authorize?')
  const csrf = hiddenField(html, 'csrf')
  await fc.assert(authorizeProperty(w, signedOut, 'GET'), { seed, numRuns: 120 })
  await fc.assert(authorizeProperty(w, signedInSend, 'GET'), { seed, numRuns: 120 })
  await fc.assert(authorizeProperty(w, signedInSend, 'POST', csrf), { seed, numRuns: 120 })
})

// ---------------------------------------------------------------------------------------------------------
// Token and revocation endpoints

const bodyKinds = ['form', 'form; charset=utf-8', 'json', 'text', 'multipart', 'none', 'FORM-UPPERCASE'] as const
type BodyKind = (typeof bodyKinds)[number]

function encode(pairs: Pairs, kind: BodyKind): { body?: RequestInit['body']; headers: Record<string, string> } {
  switch (kind) {
    case 'form':
      return { body: new URLSearchParams(pairs), headers: { 'content-type': 'application/x-www-form-urlencoded' } }
    case 'form; charset=utf-8':
      return {
        body: new URLSearchParams(pairs),
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      }
    case 'FORM-UPPERCASE':
      return { body: new URLSearchParams(pairs), headers: { 'content-type': 'APPLICATION/X-WWW-FORM-URLENCODED' } }
    case 'json':
      return { body: JSON.stringify(Object.fromEntries(pairs)), headers: { 'content-type': 'application/json' } }
    case 'text':
      return { body: new URLSearchParams(pairs).toString(), headers: { 'content-type': 'text/plain' } }
    case 'multipart': {
      const form = new FormData()
      for (const [name, value] of pairs) form.append(name, value)
      return { body: form, headers: {} }
    }
    case 'none':
      return { headers: {} }
  }
}

function authorizationHeader(w: World): fc.Arbitrary<string | undefined> {
  const confidential = [w.basicClient, w.postClient, w.defaultClient]
  return fc.option(
    fc.oneof(
      fc.constantFrom(
        ...confidential.map((client) => basic(client.client_id, client.client_secret)),
        basic(w.publicClient.client_id, ''),
        basic(w.basicClient.client_id, 'ths_wrong'),
        'Basic',
        'Basic ',
        'Basic !!!!',
        'Basic =',
        `Basic ${btoa('no-colon')}`,
        `Basic ${btoa('%zz:%zz')}`,
        `Basic ${btoa(':')}`,
        `Basic ${'A'.repeat(20_000)}`,
        'Bearer tho_x',
        'Digest x',
      ),
      fc.tuple(text, text).map(([id, secret]) => {
        try {
          return basic(id, secret)
        } catch {
          return `Basic ${id}`
        }
      }),
      fc.string().map((s) => `Basic ${s}`),
      text,
    ),
    { nil: undefined, freq: 2 },
  )
}

function tokenValues(w: World): fc.Arbitrary<string> {
  return fc.oneof(
    text,
    url,
    fc.constantFrom(
      ...w.clients.map((client) => client.client_id),
      ...[w.basicClient, w.postClient, w.defaultClient].map((client) => client.client_secret),
      ...w.codes,
      w.refreshToken,
      w.accessToken,
      w.verifier,
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'threads:read',
      'threads:admin',
      'access_token',
      'tho_x',
      'thr_x',
      `${publicUrl}/api/v1`,
      'https://other.example/',
    ),
  )
}

function tokenBases(w: World): Pairs[] {
  const [publicCode = '', ...confidentialCodes] = w.codes
  const secrets = [w.basicClient, w.postClient, w.defaultClient]
  return [
    [
      ['grant_type', 'authorization_code'],
      ['code', publicCode],
      ['redirect_uri', 'http://127.0.0.1:5000/callback'],
      ['client_id', w.publicClient.client_id],
      ['code_verifier', w.verifier],
    ],
    ...secrets.map(
      (client, index): Pairs => [
        ['grant_type', 'authorization_code'],
        ['code', confidentialCodes[index] ?? ''],
        ['redirect_uri', 'https://app.example/cb'],
        ['client_id', client.client_id],
        ['client_secret', client.client_secret],
      ],
    ),
    [
      ['grant_type', 'refresh_token'],
      ['refresh_token', w.refreshToken],
      ['client_id', w.publicClient.client_id],
      ['scope', 'threads:read'],
    ],
    // Revocation, by each kind of client (another client's token is left alone, but still answered 200).
    ...[w.publicClient, ...secrets].flatMap((client) =>
      [w.accessToken, w.refreshToken].map(
        (token): Pairs => [
          ['token', token],
          ['token_type_hint', token === w.accessToken ? 'access_token' : 'refresh_token'],
          ['client_id', client.client_id],
          ...(client.client_secret ? ([['client_secret', client.client_secret]] as Pairs) : []),
        ],
      ),
    ),
  ]
}

const tokenNames = [
  'grant_type',
  'code',
  'redirect_uri',
  'client_id',
  'client_secret',
  'code_verifier',
  'refresh_token',
  'scope',
  'resource',
  'token',
  'token_type_hint',
] as const

test('token and revocation endpoints: never a 5xx, always an RFC 6749 error body', async () => {
  const w = await world()
  await using h = w.h
  for (const endpoint of ['/oauth/token', '/oauth/token/revoke']) {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...tokenBases(w)),
        fc.array(mutation(tokenNames, tokenValues(w)), { maxLength: 3 }),
        fc.oneof({ weight: 4, arbitrary: fc.constant<BodyKind>('form') }, fc.constantFrom(...bodyKinds)),
        authorizationHeader(w),
        async (base, mutations, kind, authorization) => {
          const pairs = mutate(base, mutations)
          const { body, headers } = encode(pairs, kind)
          if (authorization !== undefined) headers.authorization = authorization
          const request = requestOrNull(`${publicUrl}${endpoint}`, { method: 'POST', headers, body })
          if (!request) return
          await expectOAuthAnswer(await h.app.handle(request), { endpoint, pairs, kind, authorization })
        },
      ),
      { seed, numRuns: 200 },
    )
  }
})

test('token endpoint: raw bodies that are not well-formed forms', async () => {
  await using h = await harness()
  const client = await register(h)
  const raw = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      'grant_type=authorization_code&code=%zz',
      'grant_type=authorization_code&code=%ff%fe',
      `grant_type=refresh_token&client_id=${client.client_id}&refresh_token=%00`,
      '&&&===&&',
      '%',
      `${'a=1&'.repeat(5_000)}grant_type=refresh_token`,
      `grant_type=${'x'.repeat(100_000)}`,
    ),
  )
  await fc.assert(
    fc.asyncProperty(raw, fc.constantFrom('/oauth/token', '/oauth/token/revoke'), async (body, endpoint) => {
      const response = await h.app.handle(
        new Request(`${publicUrl}${endpoint}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body,
        }),
      )
      await expectOAuthAnswer(response, { endpoint, body: body.slice(0, 200) })
    }),
    { seed, numRuns: 100 },
  )
})

// ---------------------------------------------------------------------------------------------------------
// Registration endpoint

const metadataNames = [
  'client_name',
  'redirect_uris',
  'scope',
  'token_endpoint_auth_method',
  'grant_types',
  'response_types',
  'client_uri',
  'logo_uri',
  'tos_uri',
  'policy_uri',
  '__proto__',
  'constructor',
] as const

const metadataValue = fc.oneof(
  jsonish,
  fc.constantFrom(
    'none',
    'client_secret_basic',
    'client_secret_post',
    'private_key_jwt',
    ['authorization_code'],
    ['authorization_code', 'refresh_token'],
    ['refresh_token'],
    ['code'],
    ['token'],
    'threads:read threads:write',
    'offline_access',
    'https://app.example/logo.png',
  ),
)

const metadata = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      { client_name: 'App', redirect_uris: ['https://app.example/cb'] },
      { client_name: 'Native', redirect_uris: ['com.example.app:/cb'], token_endpoint_auth_method: 'none' },
      { client_name: 'CLI', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none' },
    ),
    fc.array(
      fc.tuple(
        fc.constantFrom('set', 'delete'),
        fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...metadataNames) }, { weight: 1, arbitrary: fc.string() }),
        metadataValue,
      ),
      { maxLength: 2 },
    ),
    fc.option(fc.array(url, { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 2 }),
  )
  .map(([base, mutations, redirectUris]) => {
    const body: Record<string, unknown> = { ...base }
    if (redirectUris) body.redirect_uris = redirectUris
    for (const [kind, name, value] of mutations) {
      if (kind === 'delete') delete body[name]
      else Object.defineProperty(body, name, { value, enumerable: true, configurable: true, writable: true })
    }
    return body
  })

test('registration endpoint: never a 5xx; whatever it accepts, the authorization flow then completes', async () => {
  const w = await world()
  await using h = w.h
  const registrationBody = fc.oneof(
    { weight: 4, arbitrary: metadata.map((body) => JSON.stringify(body)) },
    { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    {
      weight: 1,
      arbitrary: fc.oneof(text, fc.constantFrom('{', '[', 'null', '{"client_name":"a","client_name":"b"}')),
    },
  )
  await fc.assert(
    fc.asyncProperty(
      registrationBody,
      fc.oneof(
        { weight: 4, arbitrary: fc.constant('application/json') },
        fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', ''),
      ),
      // Mostly open registration: a registration token that is not one stops the request before the body.
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        fc.oneof(
          text,
          text.map((s) => `Bearer ${s}`),
          fc.constant('Bearer thrg_x'),
        ),
      ),
      async (body, type, authorization) => {
        const headers: Record<string, string> = type ? { 'content-type': type } : {}
        if (authorization !== undefined) headers.authorization = authorization
        const request = requestOrNull(`${publicUrl}/oauth/register`, { method: 'POST', headers, body })
        if (!request) return
        const response = await h.app.handle(request)
        const text = await response.clone().text()
        await expectOAuthAnswer(response, { body: body.slice(0, 500), type, authorization })
        if (response.status !== 201) return
        // A registered redirect URI must work: consent, approval, and the redirect back.
        const client = JSON.parse(text)
        for (const redirectUri of client.redirect_uris as string[]) {
          const query = new URLSearchParams({
            response_type: 'code',
            client_id: client.client_id,
            redirect_uri: redirectUri,
            scope: client.scope,
            state: 's',
            code_challenge: w.challenge,
            code_challenge_method: 'S256',
          })
          const context = { redirectUri }
          const page = await w.browser.get(`/oauth/authorize?${query}`)
          const html = await page.text()
          expect({ status: page.status, context }).toEqual({ status: 200, context })
          const answer = await w.browser.postForm(formAction(html), {
            csrf: hiddenField(html, 'csrf'),
            decision: 'approve',
          })
          expect({ status: answer.status, context }).toEqual({ status: 303, context })
        }
      },
    ),
    { seed, numRuns: 150 },
  )
})

test('signed-out visitors with odd cookies still get an answer, not a failure', async () => {
  await using h = await harness()
  const client = await register(h)
  const cookie = fc.oneof(
    text,
    text.map((s) => `threadhouse_session=${s}`),
    fc.constant(`a=${'b'.repeat(10_000)}`),
  )
  await fc.assert(
    fc.asyncProperty(cookie, async (value) => {
      const request = requestOrNull(
        `${publicUrl}/oauth/authorize?response_type=code&client_id=${client.client_id}&redirect_uri=${encodeURIComponent('http://127.0.0.1/callback')}&scope=threads:read&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
        { headers: { cookie: value } },
      )
      if (!request) return
      const response = await h.app.handle(request)
      expect(response.status).toBeLessThan(500)
    }),
    { seed, numRuns: 60 },
  )
})
