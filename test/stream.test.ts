// The response stream: SSE framing, joining mid-answer, resuming with Last-Event-ID, replay after the
// end, errors, heartbeats, and clients that go away.
import { expect, test } from 'bun:test'
import { Heartbeats } from '../src/shared/streams/sse'
import {
  collect,
  harness,
  listening,
  openStream,
  parseEvents,
  publicUrl,
  ScriptedRunner,
  stalledClient,
  tokensOf,
  until,
} from './support/helpers'

async function started(runner: ScriptedRunner, h: Awaited<ReturnType<typeof harness>>, token: string) {
  const created = (await h.call('POST', '/api/v1/threads', { token, body: { text: 'tell me' } })).body
  const job = await runner.started(created.message_id)
  const path = `/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response/stream`
  return { ...created, job, path }
}

test('the real worker streams tokens that concatenate to the stored answer, then done', async () => {
  await using h = await harness({ echoDelayMs: 1 })
  const owner = await h.user()
  const { thread_id, message_id } = (
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'stream this please' } })
  ).body
  const stream = await openStream(h, `/api/v1/threads/${thread_id}/messages/${message_id}/response/stream`, owner.token)
  expect(stream.status).toBe(200)
  expect(stream.headers.get('content-type')).toStartWith('text/event-stream')
  const events = await collect(stream.events)
  expect(events.at(-1)).toMatchObject({ event: 'done', data: '{}' })
  expect(events.filter((e) => e.event === 'token').length).toBeGreaterThan(1)
  const stored = (await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })).body.data[1]
  expect(tokensOf(events)).toBe(stored.contents[0].text)
  // `done` is sent only once the thread is ready again.
  expect((await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })).body.state).toBe('ready')
})

test('raw framing: id, event and data lines, then a blank line', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  job.token('Hi')
  job.token(' there')
  job.done()
  const response = await h.app.handle(
    new Request(`${publicUrl}${path}`, {
      headers: { authorization: `Bearer ${owner.token}`, 'x-request-id': 'stream-1' },
    }),
  )
  // The stream's own headers and every response's security headers and request ID.
  expect(Object.fromEntries(response.headers)).toEqual({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    'x-request-id': 'stream-1',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  })
  expect(await response.text()).toBe(
    'id: 8\nevent: token\ndata: {"token":"Hi there"}\n\nretry: 86400000\nid: 8\nevent: done\ndata: {}\n\n',
  )
})

test('tokens in the query string are refused; other query parameters (cache busters) are ignored', async () => {
  await using h = await harness()
  const owner = await h.user()
  const { thread_id, message_id } = (
    await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'hi' } })
  ).body
  const path = `/api/v1/threads/${thread_id}/messages/${message_id}/response/stream`
  const refused = await h.call('GET', `${path}?access_token=${owner.token}`)
  expect({ status: refused.status, body: refused.body }).toEqual({
    status: 401,
    body: {
      error: 'unauthorized',
      message: 'Send the token in the Authorization header: tokens in the query string are not accepted',
    },
  })
  const stream = await openStream(h, `${path}?_=1&lastEventId=`, owner.token)
  expect(stream.status).toBe(200)
  expect((await collect(stream.events)).at(-1)?.event).toBe('done')
})

test('a client joining mid-answer gets everything so far, then the live rest', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  job.token('Once ')
  job.token('upon ')
  const stream = await openStream(h, path, owner.token)
  const first = await stream.events.next()
  expect(first.value).toMatchObject({ event: 'token', id: '10', data: JSON.stringify({ token: 'Once upon ' }) })
  job.token('a time')
  job.done()
  const rest = await collect(stream.events)
  expect(rest.map((e) => [e.event, e.id, e.data])).toEqual([
    ['token', '16', JSON.stringify({ token: 'a time' })],
    ['done', '16', '{}'],
  ])
})

test('Last-Event-ID resumes without gaps or duplicates, live and after the end', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  const first = await openStream(h, path, owner.token)
  job.token('abc')
  job.token('def')
  const got = [(await first.events.next()).value, (await first.events.next()).value]
  expect(got.map((e) => e?.id)).toEqual(['3', '6'])
  await first.events.return(undefined) // the client drops the connection

  job.token('ghi')
  const resumed = await openStream(h, path, owner.token, { 'last-event-id': '3' })
  expect((await resumed.events.next()).value).toMatchObject({ id: '9', data: JSON.stringify({ token: 'defghi' }) })
  job.token('!')
  job.done()
  expect(tokensOf(await collect(resumed.events))).toBe('!')

  const afterEnd = await openStream(h, path, owner.token, { 'last-event-id': '6' })
  const replay = await collect(afterEnd.events)
  expect(replay.map((e) => [e.event, e.id, e.data])).toEqual([
    ['token', '10', JSON.stringify({ token: 'ghi!' })],
    ['done', '10', '{}'],
  ])
  const whole = await collect((await openStream(h, path, owner.token)).events)
  expect(tokensOf(whole)).toBe('abcdefghi!')
})

test('a resume past the text so far (an answer regenerated after a restart) gets only what lies beyond it', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  job.token('abc')
  const resumed = await openStream(h, path, owner.token, { 'last-event-id': '5' })
  job.token('d')
  job.token('efgh')
  job.token('ij')
  job.done()
  expect((await collect(resumed.events)).map((e) => [e.event, e.id, e.data])).toEqual([
    ['token', '8', JSON.stringify({ token: 'fgh' })],
    ['token', '10', JSON.stringify({ token: 'ij' })],
    ['done', '10', '{}'],
  ])
})

test('a failure ends the stream with an error event after the partial answer', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  const live = await openStream(h, path, owner.token)
  job.token('partial')
  job.error('The model is unavailable')
  const events = await collect(live.events)
  expect(events.map((e) => [e.event, e.data])).toEqual([
    ['token', JSON.stringify({ token: 'partial' })],
    ['error', JSON.stringify({ message: 'The model is unavailable' })],
  ])
  const later = await collect((await openStream(h, path, owner.token)).events)
  expect(later.map((e) => e.event)).toEqual(['token', 'error'])
})

test('idle streams receive comment heartbeats', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  const response = await h.app.handle(
    new Request(`${publicUrl}${path}`, { headers: { authorization: `Bearer ${owner.token}` } }),
  )
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader()
  const chunk = await reader?.read()
  expect(chunk?.value).toBe(': keep-alive\n\n')
  await reader?.cancel()
  job.done()
})

test('heartbeats skip streams that sent anything since the last look', async () => {
  const runner = new ScriptedRunner()
  // An interval no test outlasts: the heartbeats look only when this test calls beat().
  const heartbeats = new Heartbeats(3_600_000)
  await using h = await harness({ runner, heartbeats })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  const response = await h.app.handle(
    new Request(`${publicUrl}${path}`, { headers: { authorization: `Bearer ${owner.token}` } }),
  )
  const text = response.text()
  heartbeats.beat() // the stream has only just opened: no comment
  job.token('one ')
  heartbeats.beat() // the token was news: no comment
  heartbeats.beat() // nothing since: a comment
  job.token('two')
  heartbeats.beat()
  job.done()
  const body = await text
  expect(body.split(': keep-alive\n\n').map((part) => part.match(/"token":"[^"]*"/g) ?? [])).toEqual([
    ['"token":"one "'],
    ['"token":"two"'],
  ])
})

test('a client that disconnects never stops or loses the generation', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path, thread_id, message_id } = await started(runner, h, owner.token)
  const response = await h.app.handle(
    new Request(`${publicUrl}${path}`, { headers: { authorization: `Bearer ${owner.token}` } }),
  )
  const events = parseEvents(response)
  job.token('kept ')
  await events.next()
  expect(h.app.decorator.engine.hub.listenerCount(message_id)).toBe(1)
  await events.return(undefined)
  // The stream left the hub (and its heartbeats) when the client went away.
  await until(() => h.app.decorator.engine.hub.listenerCount(message_id) === 0)
  job.token('going')
  job.done()
  await h.app.decorator.engine.idle()
  const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${message_id}/response`, {
    token: owner.token,
  })
  expect(poll.body.messages[0].contents).toEqual([{ type: 'text', text: 'kept going' }])
})

test('many listeners receive the same tokens', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const { job, path } = await started(runner, h, owner.token)
  const streams = await Promise.all(Array.from({ length: 20 }, () => openStream(h, path, owner.token)))
  for (const word of ['a', 'b', 'c']) job.token(word)
  job.done()
  const all = await Promise.all(streams.map((s) => collect(s.events)))
  for (const events of all) expect(tokensOf(events)).toBe('abc')
})

test('a stream whose client stops reading is cut off once its backlog passes the bound; a reader of the same answer is not, and the client resumes with Last-Event-ID', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner, config: { STREAM_BACKLOG_BYTES: 64 * 1024 } })
  await using server = listening(h)
  const owner = await h.user()
  const { job, path, message_id } = await started(runner, h, owner.token)
  const headers = { authorization: `Bearer ${owner.token}` }
  const events = parseEvents(await fetch(new URL(path, server.url), { headers }))
  using stalled = stalledClient(server.port, path, headers)
  await until(() => h.app.decorator.engine.hub.listenerCount(message_id) === 2)

  // 64 kB tokens, each read by the reader before the next: the stalled client's kernel buffers fill (a few MB on
  // loopback), then its backlog passes the bound.
  let text = ''
  for (let i = 0; i < 300 && stalled.open(); i++) {
    const token = `${i} `.padEnd(64 * 1024, 'x')
    job.token(token)
    text += token
    const event = (await events.next()).value
    expect([event?.event, event?.id, JSON.parse(event?.data ?? '{}').token]).toEqual(['token', `${text.length}`, token])
  }
  expect(stalled.open()).toBe(false)
  expect(await stalled.closed).toEqual({ reset: true })
  expect(h.app.decorator.engine.hub.listenerCount(message_id)).toBe(1)

  job.token('end')
  job.done()
  const rest = []
  for await (const event of events) rest.push(event)
  expect(rest.map((event) => event.event)).toEqual(['token', 'done'])
  // The cut-off client comes back from where it was (nothing read): the whole answer, in one event larger than the
  // bound, which a stream's first write may be.
  const back = await collect(
    parseEvents(await fetch(new URL(path, server.url), { headers: { ...headers, 'last-event-id': '0' } })),
  )
  expect(tokensOf(back)).toBe(`${text}end`)
  expect(back.at(-1)?.event).toBe('done')
})
