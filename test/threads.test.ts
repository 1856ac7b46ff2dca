import { describe, expect, test } from 'bun:test'
import { createWorkerRunner } from '../src/generation/runner'
import { silentLogger } from '../src/shared/log'
import { harness, publicUrl, ScriptedRunner } from './support/helpers'

const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

describe('POST /threads', () => {
  test('without text: an empty ready thread and message_id null', async () => {
    await using h = await harness()
    const owner = await h.user({ name: 'Owen' })
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Plans' } })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({ thread_id: expect.any(String), message_id: null })

    const thread = await h.call('GET', `/api/v1/threads/${created.body.thread_id}`, { token: owner.token })
    expect(thread.body).toEqual({
      id: created.body.thread_id,
      name: 'Plans',
      state: 'ready',
      is_private: false,
      archived: false,
      owner: { id: owner.sub, name: 'Owen' },
      created_at: iso,
      updated_at: iso,
      app_url: `${publicUrl}/threads/${created.body.thread_id}`,
    })
    const messages = await h.call('GET', `/api/v1/threads/${created.body.thread_id}/messages`, { token: owner.token })
    expect(messages.body).toEqual({ data: [], first_id: null, last_id: null, has_more: false, limit: 50 })
  })

  test('with text: the initial message is stored and answered', async () => {
    await using h = await harness()
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'hello there' } })
    expect(created.status).toBe(201)
    const { thread_id, message_id } = created.body
    expect(message_id).toEqual(expect.any(String))
    await h.app.decorator.engine.idle()

    const messages = await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })
    expect(messages.body.data).toEqual([
      {
        id: message_id,
        thread_id,
        role: 'user',
        contents: [{ type: 'text', text: 'hello there' }],
        created_at: iso,
        app_url: `${publicUrl}/threads/${thread_id}#message-${message_id}`,
      },
      {
        id: expect.any(String),
        thread_id,
        role: 'assistant',
        contents: [{ type: 'text', text: 'Echo (turn 1): you said “hello there”.' }],
        created_at: iso,
        app_url: expect.stringMatching(new RegExp(`^${publicUrl}/threads/${thread_id}#message-`)),
      },
    ])
    expect((await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })).body.state).toBe('ready')
  })

  test('a thread created without a name is named by its first message’s words: at creation, or at its first send', async () => {
    await using h = await harness()
    const owner = await h.user()
    const nameOf = async (id: string) =>
      (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body.name
    const fenced = await h.call('POST', '/api/v1/threads', {
      token: owner.token,
      body: { text: '```js\nconsole.log(1)\n```\nWhy does [this](https://example.com/x) print **one**?' },
    })
    expect(await nameOf(fenced.body.thread_id)).toBe('Why does this print one?')
    // Files first: empty and unnamed until the first message, which names it; later messages rename nothing.
    const empty = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
    const { thread_id } = empty.body
    expect(await nameOf(thread_id)).toBeNull()
    const long = `Summarise the attached quarterly report for the northern region ${'and more '.repeat(20)}`
    expect(
      (await h.call('POST', `/api/v1/threads/${thread_id}/messages`, { token: owner.token, body: { text: long } }))
        .status,
    ).toBe(201)
    expect(await nameOf(thread_id)).toBe(
      'Summarise the attached quarterly report for the northern region and more and…',
    )
    await h.app.decorator.engine.idle()
    await h.call('POST', `/api/v1/threads/${thread_id}/messages`, { token: owner.token, body: { text: 'Second' } })
    expect(await nameOf(thread_id)).toBe(
      'Summarise the attached quarterly report for the northern region and more and…',
    )
    // A name given is kept as given.
    const named = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Mine', text: 'Hello' } })
    expect(await nameOf(named.body.thread_id)).toBe('Mine')
    await h.app.decorator.engine.idle()
  })

  test('identical bodies create distinct threads (create never answers 409)', async () => {
    await using h = await harness()
    const owner = await h.user()
    const a = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'same' } })
    const b = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'same' } })
    expect([a.status, b.status]).toEqual([201, 201])
    expect(a.body.thread_id).not.toBe(b.body.thread_id)
  })

  test.each([
    [{ text: '' }, 'text'],
    [{ extra: true }, 'extra'],
    [{ is_private: 'yes' }, 'is_private'],
    [{ name: 5 }, 'name'],
  ])('rejects %j with 400 invalid_request', async (body, field) => {
    await using h = await harness()
    const owner = await h.user()
    const reply = await h.call('POST', '/api/v1/threads', { token: owner.token, body })
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual({ error: 'invalid_request', message: expect.stringContaining(field) })
  })

  test('malformed JSON is 400 invalid_request', async () => {
    await using h = await harness()
    const owner = await h.user()
    const reply = await h.call('POST', '/api/v1/threads', { token: owner.token, body: '{"text":' })
    expect(reply.status).toBe(400)
    expect(reply.body.error).toBe('invalid_request')
  })

  test('the body must be a JSON object: no body, null, a number or an array is 400', async () => {
    await using h = await harness()
    const owner = await h.user()
    for (const body of [undefined, 'null', '5', 'true', '[]']) {
      const reply = await h.call('POST', '/api/v1/threads', { token: owner.token, body })
      expect({ status: reply.status, body: reply.body }).toEqual({
        status: 400,
        body: { error: 'invalid_request', message: 'The body must be a JSON object' },
      })
    }
    expect((await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).status).toBe(201)
  })
})

describe('state machine', () => {
  test('ready → waiting → active → ready, with 409 while busy', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    const state = async () => (await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })).body.state

    const sent = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
      token: owner.token,
      body: { text: 'one' },
    })
    expect(sent.status).toBe(201)
    const job = await runner.started(sent.body.message_id)
    expect(await state()).toBe('active')

    const busy = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
      token: owner.token,
      body: { text: 'x' },
    })
    expect(busy.status).toBe(409)
    expect(busy.body).toEqual({ error: 'conflict', message: expect.any(String) })

    job.token('partial')
    job.done()
    await h.app.decorator.engine.idle()
    expect(await state()).toBe('ready')
    const next = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
      token: owner.token,
      body: { text: 'two' },
    })
    expect(next.status).toBe(201)
  })

  test('a queued message waits in `waiting` while the concurrency limit is reached', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const sent = []
    for (let i = 0; i < 5; i++) {
      sent.push((await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: `t${i}` } })).body)
    }
    // The first four are claimed and started a moment after their threads are created.
    await Promise.all(sent.slice(0, 4).map((thread) => runner.started(thread.message_id)))
    expect(runner.jobs.size).toBe(4)
    const last = sent[4]
    expect((await h.call('GET', `/api/v1/threads/${last.thread_id}`, { token: owner.token })).body.state).toBe(
      'waiting',
    )
    const poll = await h.call('GET', `/api/v1/threads/${last.thread_id}/messages/${last.message_id}/response`, {
      token: owner.token,
    })
    expect(poll).toMatchObject({ status: 202, body: { status: 'processing' } })
    ;(await runner.started(sent[0].message_id)).done()
    await runner.started(last.message_id)
    expect((await h.call('GET', `/api/v1/threads/${last.thread_id}`, { token: owner.token })).body.state).toBe('active')
  })

  test('two concurrent sends to a ready thread: exactly one 201 and one 409', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    const send = () =>
      h.call('POST', `/api/v1/threads/${thread_id}/messages`, { token: owner.token, body: { text: 'race' } })
    const statuses = (await Promise.all([send(), send(), send()])).map((reply) => reply.status).sort()
    expect(statuses).toEqual([201, 409, 409])
  })

  test('a generator failure moves the thread to error, keeps the partial answer and refuses new messages', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id, message_id } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'boom' } })
    ).body
    const job = await runner.started(message_id)
    job.token('half an ')
    job.error('The model is unavailable')
    await h.app.decorator.engine.idle()

    const thread = await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })
    expect(thread.body.state).toBe('error')
    const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${message_id}/response`, {
      token: owner.token,
    })
    expect(poll.status).toBe(200)
    expect(poll.body).toEqual({
      status: 'error',
      messages: [expect.objectContaining({ role: 'assistant', contents: [{ type: 'text', text: 'half an ' }] })],
    })
    const again = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
      token: owner.token,
      body: { text: 'x' },
    })
    expect(again.status).toBe(409)
    const messages = await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })
    expect(messages.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant'])
  })

  test('a worker that exits without an error fails its answer; the next answer gets a fresh worker', async () => {
    const entry = new URL('./fixtures/exiting-generation-worker.ts', import.meta.url)
    await using h = await harness({
      runner: (blobs) => createWorkerRunner({ provider: 'echo', echoTokenDelayMs: 0 }, blobs, silentLogger, entry),
    })
    const owner = await h.user()
    const ask = async (text: string) =>
      (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text } })).body.thread_id
    const exited = await ask('exit now')
    await h.app.decorator.engine.idle()
    const state = async (id: string) =>
      (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body.state
    expect(await state(exited)).toBe('error')
    const next = await ask('hello again')
    await h.app.decorator.engine.idle()
    expect(await state(next)).toBe('ready')
  })

  test('interrupting keeps the partial answer and leaves the thread ready', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id, message_id } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'long story' } })
    ).body
    const job = await runner.started(message_id)
    job.token('Once upon')
    expect(await h.app.decorator.engine.interrupt(thread_id)).toBe(true)
    const thread = await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })
    expect(thread.body.state).toBe('ready')
    const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${message_id}/response`, {
      token: owner.token,
    })
    expect(poll.body).toEqual({
      status: 'interrupted',
      messages: [expect.objectContaining({ contents: [{ type: 'text', text: 'Once upon' }] })],
    })
    expect(await h.app.decorator.engine.interrupt(thread_id)).toBe(false)
  })
})

describe('messages', () => {
  test('multi-turn history reaches the generator in order', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'first' } }))
      .body
    await h.app.decorator.engine.idle()
    const second = await h.call('POST', `/api/v1/threads/${thread_id}/messages`, {
      token: owner.token,
      body: { text: 'second' },
    })
    await h.app.decorator.engine.idle()
    const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${second.body.message_id}/response`, {
      token: owner.token,
    })
    expect(poll.body.status).toBe('complete')
    expect(poll.body.messages[0].contents).toEqual([{ type: 'text', text: 'Echo (turn 2): you said “second”.' }])
    const list = await h.call('GET', `/api/v1/threads/${thread_id}/messages`, { token: owner.token })
    expect(list.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  })

  test('send validates its body', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    const path = `/api/v1/threads/${thread_id}/messages`
    for (const body of [{}, { text: '' }, { text: 'x', more: 1 }, { text: 'x', attachment_ids: ['nope'] }]) {
      const reply = await h.call('POST', path, { token: owner.token, body })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toBe('invalid_request')
    }
    const tooMany = Array.from({ length: 26 }, () => crypto.randomUUID())
    expect(
      (await h.call('POST', path, { token: owner.token, body: { text: 'x', attachment_ids: tooMany } })).status,
    ).toBe(400)
  })

  test('unknown threads and messages are 404; malformed IDs are 400', async () => {
    await using h = await harness()
    const owner = await h.user()
    const ghost = crypto.randomUUID()
    for (const path of [
      `/api/v1/threads/${ghost}`,
      `/api/v1/threads/${ghost}/messages`,
      `/api/v1/threads/${ghost}/messages/${ghost}/response`,
      `/api/v1/threads/${ghost}/messages/${ghost}/response/stream`,
    ]) {
      const reply = await h.call('GET', path, { token: owner.token })
      expect(reply.status).toBe(404)
      expect(reply.body).toEqual({ error: 'not_found', message: expect.any(String) })
    }
    expect((await h.call('GET', '/api/v1/threads/not-a-uuid', { token: owner.token })).status).toBe(400)
  })

  test('polling a message that asked for no answer is 404', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { thread_id, message_id } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'q' } })
    ).body
    await h.app.decorator.engine.idle()
    const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${message_id}/response`, {
      token: owner.token,
    })
    const answerId = poll.body.messages[0].id
    const reply = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${answerId}/response`, {
      token: owner.token,
    })
    expect(reply.status).toBe(404)
  })
})

describe('feedback', () => {
  test('204, one rating per user per message, a repeat replaces it', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { thread_id, message_id } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'q' } })
    ).body
    await h.app.decorator.engine.idle()
    const answer = (
      await h.call('GET', `/api/v1/threads/${thread_id}/messages/${message_id}/response`, { token: owner.token })
    ).body.messages[0].id
    const path = `/api/v1/threads/${thread_id}/messages/${answer}/feedback`

    const first = await h.call('POST', path, { token: owner.token, body: { positive: true } })
    expect(first.status).toBe(204)
    expect(first.body).toBeNull()
    expect(
      (await h.call('POST', path, { token: owner.token, body: { positive: false, feedback_text: 'meh' } })).status,
    ).toBe(204)
    const { feedback } = h.tables
    const rows = await h.orm
      .select({ positive: feedback.positive, feedback_text: feedback.feedbackText })
      .from(feedback)
    expect(rows).toEqual([{ positive: false, feedback_text: 'meh' }])

    const tooLong = await h.call('POST', path, {
      token: owner.token,
      body: { positive: true, feedback_text: 'x'.repeat(1025) },
    })
    expect(tooLong.status).toBe(400)
    // Characters, not UTF-16 units: 1024 emoji fit, 1025 do not.
    const emoji = (count: number) => ({ positive: true, feedback_text: '👍'.repeat(count) })
    expect((await h.call('POST', path, { token: owner.token, body: emoji(1024) })).status).toBe(204)
    expect((await h.call('POST', path, { token: owner.token, body: emoji(1025) })).status).toBe(400)
    expect((await h.call('POST', path, { token: owner.token, body: { feedback_text: 'no rating' } })).status).toBe(400)
    const onUserMessage = await h.call('POST', `/api/v1/threads/${thread_id}/messages/${message_id}/feedback`, {
      token: owner.token,
      body: { positive: true },
    })
    expect(onUserMessage.status).toBe(400)
    const unknown = await h.call('POST', `/api/v1/threads/${thread_id}/messages/${crypto.randomUUID()}/feedback`, {
      token: owner.token,
      body: { positive: true },
    })
    expect(unknown.status).toBe(404)
  })
})
