// Scopes and visibility: owner, same-organization member and other organization, each with read,
// read:own and write tokens.
import { expect, test } from 'bun:test'
import type { Scope } from '../src/auth/model'
import { type Harness, harness, publicUrl } from './support/helpers'

// Tests sign in and create users, hashing passwords with argon2 on purpose: slow on a busy machine.

async function world(h: Harness) {
  const owner = await h.user({ org: 'acme' })
  const mate = await h.user({ org: 'acme' })
  const stranger = await h.user({ org: 'other' })
  const make = async (body: object) =>
    (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'hi', ...body } })).body
  const open = await make({ name: 'public' })
  const secret = await make({ name: 'private', is_private: true })
  await h.app.decorator.engine.idle()
  return { owner, mate, stranger, open, secret }
}

test('visibility: public threads are the organization’s, private ones the owner’s, nothing crosses organizations', async () => {
  await using h = await harness()
  const { owner, mate, stranger, open, secret } = await world(h)
  const status = async (token: string, thread: { thread_id: string; message_id: string }) => {
    const paths = [
      `/api/v1/threads/${thread.thread_id}`,
      `/api/v1/threads/${thread.thread_id}/messages`,
      `/api/v1/threads/${thread.thread_id}/messages/${thread.message_id}/response`,
      `/api/v1/threads/${thread.thread_id}/messages/${thread.message_id}/response/stream`,
    ]
    return Promise.all(paths.map(async (path) => (await h.call('GET', path, { token })).status))
  }
  expect(await status(owner.token, open)).toEqual([200, 200, 200, 200])
  expect(await status(owner.token, secret)).toEqual([200, 200, 200, 200])
  expect(await status(mate.token, open)).toEqual([200, 200, 200, 200])
  expect(await status(mate.token, secret)).toEqual([404, 404, 404, 404])
  expect(await status(stranger.token, open)).toEqual([404, 404, 404, 404])

  const listed = async (token: string) =>
    (await h.call('GET', '/api/v1/threads', { token })).body.data.map((t: { name: string }) => t.name).sort()
  expect(await listed(owner.token)).toEqual(['private', 'public'])
  expect(await listed(mate.token)).toEqual(['public'])
  expect(await listed(stranger.token)).toEqual([])
})

test('only the owner may send to a thread; others who can see it get 403, others 404', async () => {
  await using h = await harness()
  const { mate, stranger, open, secret } = await world(h)
  const send = (token: string, threadId: string) =>
    h.call('POST', `/api/v1/threads/${threadId}/messages`, { token, body: { text: 'x' } })
  const forbidden = await send(mate.token, open.thread_id)
  expect(forbidden.status).toBe(403)
  expect(forbidden.body).toEqual({ error: 'forbidden', message: expect.any(String) })
  expect((await send(mate.token, secret.thread_id)).status).toBe(404)
  expect((await send(stranger.token, open.thread_id)).status).toBe(404)
})

test('members can rate answers in public threads they see', async () => {
  await using h = await harness()
  const { owner, mate, stranger, open } = await world(h)
  const answer = (
    await h.call('GET', `/api/v1/threads/${open.thread_id}/messages/${open.message_id}/response`, {
      token: owner.token,
    })
  ).body.messages[0].id
  const rate = (token: string) =>
    h.call('POST', `/api/v1/threads/${open.thread_id}/messages/${answer}/feedback`, { token, body: { positive: true } })
  expect((await rate(mate.token)).status).toBe(204)
  expect((await rate(stranger.token)).status).toBe(404)
})

test('scopes gate endpoints, never imply each other, and 403 names the required scope', async () => {
  await using h = await harness()
  const { open } = await world(h)
  const as = async (scopes: Scope[]) => (await h.user({ org: 'acme', scopes })).token
  const readOnly = await as(['threads:read'])
  const writeOnly = await as(['threads:write'])

  const denied = await h.call('POST', '/api/v1/threads', { token: readOnly, body: {} })
  expect(denied.status).toBe(403)
  expect(denied.body).toEqual({
    error: 'insufficient_scope',
    message: expect.any(String),
    required_scope: 'threads:write',
  })
  // RFC 6750 §3.1: the challenge names the scope, so an MCP client can ask for it (step-up authorization).
  expect(denied.headers.get('www-authenticate')).toBe(
    `Bearer realm="threadhouse", error="insufficient_scope", scope="threads:write", resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/api/v1"`,
  )

  const cannotRead = await h.call('GET', '/api/v1/threads', { token: writeOnly })
  expect(cannotRead.status).toBe(403)
  expect(cannotRead.body.required_scope).toBe('threads:read')
  expect((await h.call('GET', `/api/v1/threads/${open.thread_id}`, { token: writeOnly })).status).toBe(403)
  expect((await h.call('GET', `/api/v1/threads/${open.thread_id}`, { token: readOnly })).status).toBe(200)
  expect((await h.call('POST', '/api/v1/threads', { token: writeOnly, body: {} })).status).toBe(201)
})

test('threads:read:own is accepted where threads:read is, but only the user’s own threads exist for it', async () => {
  await using h = await harness()
  const { owner, open } = await world(h)
  const mate = await h.user({ org: 'acme', scopes: ['threads:read:own', 'threads:write'] })
  const mine = (await h.call('POST', '/api/v1/threads', { token: mate.token, body: { name: 'mine', text: 'q' } })).body
  await h.app.decorator.engine.idle()

  const list = await h.call('GET', '/api/v1/threads', { token: mate.token })
  expect(list.body.data.map((t: { name: string }) => t.name)).toEqual(['mine'])
  expect((await h.call('GET', `/api/v1/threads/${mine.thread_id}/messages`, { token: mate.token })).status).toBe(200)
  for (const path of [
    `/api/v1/threads/${open.thread_id}`,
    `/api/v1/threads/${open.thread_id}/messages`,
    `/api/v1/threads/${open.thread_id}/messages/${open.message_id}/response`,
  ]) {
    expect((await h.call('GET', path, { token: mate.token })).status).toBe(404)
  }
  const search = await h.call('GET', '/api/v1/threads?q=hi', { token: mate.token })
  expect(search.body.data).toEqual([])
  const cursor = await h.call('GET', `/api/v1/threads?after=${open.thread_id}`, { token: mate.token })
  expect(cursor.status).toBe(400)
  // A full-read token of the same organization sees the public thread the read:own user created.
  const ownerView = await h.call('GET', '/api/v1/threads', { token: owner.token })
  expect(ownerView.body.data.map((t: { name: string }) => t.name).sort()).toEqual(['mine', 'private', 'public'])
})

test('the token and the scope are checked before the request itself: 401 and 403 come before 400', async () => {
  await using h = await harness()
  const readOnly = (await h.user({ scopes: ['threads:read'] })).token
  const badQuery = await h.call('GET', '/api/v1/threads?limit=0')
  expect(badQuery.status).toBe(401)
  expect((await h.call('GET', '/api/v1/threads/not-a-uuid', { token: 'thp_unknown' })).status).toBe(401)
  const badBody = await h.call('POST', '/api/v1/threads', { token: readOnly, body: { bogus: 1 } })
  expect(badBody.status).toBe(403)
  expect(badBody.body.required_scope).toBe('threads:write')
  // With a valid token and the scope, the request's own problems are answered.
  expect((await h.call('GET', '/api/v1/threads?limit=0', { token: readOnly })).status).toBe(400)
})
