// The authorization matrix, generated: every API endpoint × token kind (personal or OAuth) × token state ×
// scope set × who is asking
// (owner, member of the same organization, member of another organization) × public or private thread.
// The expected status comes from a small oracle written from the specification, not from the code.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Scope } from '../src/auth/model'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { createClient, validateClientMetadata } from '../src/oauth/clients'
import { newTokens } from '../src/oauth/tokens'
import { hashSecret } from '../src/shared/security'
import { testEvent, testOrigin, tokenHolder } from './support/audit'
import { type Harness, harness, ManualClock } from './support/helpers'

type Who = 'owner' | 'member' | 'stranger'
type TokenState = 'none' | 'malformed' | 'revoked' | 'expired' | 'valid'
type TokenKind = 'personal' | 'oauth'
type Requirement = 'read' | 'write' | 'any'

interface Endpoint {
  name: string
  requirement: Requirement
  /** Whether only the thread's owner may use it (403 for others who can see the thread). */
  ownerOnly: boolean
  /** Whether it concerns one thread (and so answers 404 for threads the caller cannot see). */
  onThread: boolean
  success: number
  request(h: Harness, t: Fixture, token: string | undefined): Promise<number>
}

interface Fixture {
  thread: string
  question: string
  answer: string
  attachment: string
}

const scopeSets: Scope[][] = [
  ['threads:read'],
  ['threads:read:own'],
  ['threads:write'],
  ['threads:read', 'threads:write'],
  ['threads:read:own', 'threads:write'],
]

function call(h: Harness, method: string, path: string, token: string | undefined, body?: unknown) {
  return h.call(method, path, { ...(token ? { token } : {}), ...(body !== undefined ? { body } : {}) })
}

const endpoints: Endpoint[] = [
  {
    name: 'GET /me',
    requirement: 'any',
    ownerOnly: false,
    onThread: false,
    success: 200,
    request: async (h, _t, token) => (await call(h, 'GET', '/api/v1/me', token)).status,
  },
  {
    name: 'GET /limits',
    requirement: 'any',
    ownerOnly: false,
    onThread: false,
    success: 200,
    request: async (h, _t, token) => (await call(h, 'GET', '/api/v1/limits', token)).status,
  },
  {
    name: 'GET /threads',
    requirement: 'read',
    ownerOnly: false,
    onThread: false,
    success: 200,
    request: async (h, _t, token) => (await call(h, 'GET', '/api/v1/threads', token)).status,
  },
  {
    name: 'POST /threads',
    requirement: 'write',
    ownerOnly: false,
    onThread: false,
    success: 201,
    request: async (h, _t, token) => (await call(h, 'POST', '/api/v1/threads', token, {})).status,
  },
  {
    name: 'GET /threads/{id}',
    requirement: 'read',
    ownerOnly: false,
    onThread: true,
    success: 200,
    request: async (h, t, token) => (await call(h, 'GET', `/api/v1/threads/${t.thread}`, token)).status,
  },
  {
    name: 'GET messages',
    requirement: 'read',
    ownerOnly: false,
    onThread: true,
    success: 200,
    request: async (h, t, token) => (await call(h, 'GET', `/api/v1/threads/${t.thread}/messages`, token)).status,
  },
  {
    name: 'POST messages',
    requirement: 'write',
    ownerOnly: true,
    onThread: true,
    success: 201,
    request: async (h, t, token) => {
      const status = (await call(h, 'POST', `/api/v1/threads/${t.thread}/messages`, token, { text: 'hi' })).status
      await h.app.decorator.engine.idle()
      return status
    },
  },
  {
    name: 'POST feedback',
    requirement: 'write',
    ownerOnly: false,
    onThread: true,
    success: 204,
    request: async (h, t, token) =>
      (await call(h, 'POST', `/api/v1/threads/${t.thread}/messages/${t.answer}/feedback`, token, { positive: true }))
        .status,
  },
  {
    name: 'GET response',
    requirement: 'read',
    ownerOnly: false,
    onThread: true,
    success: 200,
    request: async (h, t, token) =>
      (await call(h, 'GET', `/api/v1/threads/${t.thread}/messages/${t.question}/response`, token)).status,
  },
  {
    name: 'GET response/stream',
    requirement: 'read',
    ownerOnly: false,
    onThread: true,
    success: 200,
    request: async (h, t, token) =>
      (await call(h, 'GET', `/api/v1/threads/${t.thread}/messages/${t.question}/response/stream`, token)).status,
  },
  {
    name: 'POST attachments',
    requirement: 'write',
    ownerOnly: true,
    onThread: true,
    success: 201,
    request: async (h, t, token) => {
      const form = new FormData()
      form.append('attachments[0]', new File(['a note'], 'note.txt'))
      return (await call(h, 'POST', `/api/v1/threads/${t.thread}/attachments`, token, form)).status
    },
  },
  {
    name: 'PATCH /threads/{id}',
    requirement: 'write',
    ownerOnly: true,
    onThread: true,
    success: 200,
    request: async (h, t, token) =>
      (await call(h, 'PATCH', `/api/v1/threads/${t.thread}`, token, { archived: false })).status,
  },
  {
    name: 'GET attachment',
    requirement: 'read',
    ownerOnly: false,
    onThread: true,
    success: 200,
    request: async (h, t, token) =>
      (await call(h, 'GET', `/api/v1/threads/${t.thread}/attachments/${t.attachment}`, token)).status,
  },
]

/** The specification's rules, in the order they apply. */
function expected(endpoint: Endpoint, state: TokenState, scopes: Scope[], who: Who, isPrivate: boolean): number {
  if (state !== 'valid') return 401
  const has = (scope: Scope) => scopes.includes(scope)
  if (endpoint.requirement === 'read' && !has('threads:read') && !has('threads:read:own')) return 403
  if (endpoint.requirement === 'write' && !has('threads:write')) return 403
  if (!endpoint.onThread) return endpoint.success
  // Only threads:read reveals the organization's public threads; anything else sees the user's own.
  const sees = who === 'owner' || (who === 'member' && !isPrivate && has('threads:read'))
  if (!sees) return 404
  if (endpoint.ownerOnly && who !== 'owner') return 403
  return endpoint.success
}

test('every endpoint × token state × scope set × caller × visibility answers the specified status', async () => {
  const clock = new ManualClock(Date.now())
  await using h = await harness({ clock, config: { RATE_LIMIT_API_PER_MINUTE: 0 } })
  const people: Record<Who, Awaited<ReturnType<Harness['user']>>> = {
    owner: await h.user({ org: 'acme' }),
    member: await h.user({ org: 'acme' }),
    stranger: await h.user({ org: 'globex' }),
  }
  const fixtures: Record<'public' | 'private', Fixture> = { public: await fixture(false), private: await fixture(true) }
  async function fixture(isPrivate: boolean): Promise<Fixture> {
    const created = (
      await h.call('POST', '/api/v1/threads', { token: people.owner.token, body: { text: 'q', is_private: isPrivate } })
    ).body
    await h.app.decorator.engine.idle()
    const poll = await h.call('GET', `/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response`, {
      token: people.owner.token,
    })
    const form = new FormData()
    form.append('attachments[0]', new File(['a note'], 'note.txt'))
    const uploaded = await h.call('POST', `/api/v1/threads/${created.thread_id}/attachments`, {
      token: people.owner.token,
      body: form,
    })
    return {
      thread: created.thread_id,
      question: created.message_id,
      answer: poll.body.messages[0].id,
      attachment: uploaded.body[0].id,
    }
  }
  const store = h.store
  const { client } = await createClient(
    store.oauthClients,
    {
      metadata: validateClientMetadata({ client_name: 'Matrix', redirect_uris: ['https://app.example/cb'] }),
      origin: 'open_registration',
      organizationId: null,
      ownerId: null,
    },
    clock.now(),
    testOrigin,
  )
  /** An OAuth access token as the token endpoint issues it, for a grant of these scopes. */
  async function oauthTokenFor(who: Who, scopes: Scope[], state: TokenState): Promise<string> {
    const issuedAt = state === 'expired' ? clock.now() - 2 * 3600_000 : clock.now()
    const { payload, tokens } = newTokens({ scopes, resource: null, grantTypes: ['authorization_code'] }, issuedAt)
    const { oauthAccessTokens, oauthGrants } = h.tables
    const [grant] = await h.orm
      .insert(oauthGrants)
      .values({
        clientId: client.id,
        userId: people[who].id,
        scopes: scopes.join(' '),
        createdAt: issuedAt,
        expiresAt: tokens.grantExpiresAt,
      })
      .returning()
    if (!grant) throw new Error('the grant was not stored')
    await h.orm.insert(oauthAccessTokens).values({ ...tokens.access, grantId: grant.id, createdAt: issuedAt })
    if (state === 'revoked')
      await store.oauthGrants.revokeGrant(grant.id, clock.now(), () => testEvent('oauth.grant_revoked'))
    return payload.access_token
  }
  async function tokenFor(kind: TokenKind, who: Who, scopes: Scope[], state: TokenState): Promise<string | undefined> {
    if (state === 'none') return undefined
    if (state === 'malformed') return kind === 'oauth' ? 'tho_this-is-not-a-token' : 'thp_this-is-not-a-token'
    if (kind === 'oauth') return oauthTokenFor(who, scopes, state)
    const token = await createPersonalAccessToken(
      h.store.accessTokens,
      {
        user: await tokenHolder(h.store, people[who].id),
        name: 'matrix',
        scopes,
        expiresAt: state === 'expired' ? clock.now() - 1 : null,
      },
      clock.now(),
      testOrigin,
    )
    if (state === 'revoked') {
      const { personalAccessTokens } = h.tables
      await h.orm
        .update(personalAccessTokens)
        .set({ revokedAt: clock.now() })
        .where(eq(personalAccessTokens.tokenHash, hashSecret(token)))
    }
    return token
  }

  const mismatches: string[] = []
  let cases = 0
  const states: TokenState[] = ['none', 'malformed', 'revoked', 'expired', 'valid']
  const callers: Who[] = ['owner', 'member', 'stranger']
  for (const kind of ['personal', 'oauth'] as TokenKind[]) {
    for (const endpoint of endpoints) {
      for (const state of states) {
        for (const scopes of scopeSets) {
          for (const who of callers) {
            for (const visibility of ['public', 'private'] as const) {
              const token = await tokenFor(kind, who, scopes, state)
              const want = expected(endpoint, state, scopes, who, visibility === 'private')
              const got = await endpoint.request(h, fixtures[visibility], token)
              cases += 1
              const label = `${kind} ${endpoint.name} ${state} [${scopes.join(' ')}] ${who} ${visibility}`
              if (got !== want) mismatches.push(`${label}: ${got}, expected ${want}`)
            }
          }
        }
      }
    }
  }
  expect(mismatches).toEqual([])
  expect(cases).toBe(2 * endpoints.length * states.length * scopeSets.length * callers.length * 2)
})
