// The thread operations behind the web application's buttons, as API routes: PATCH (rename, archive, privacy),
// stop, continue a thread in error, and downloading an attachment.
import { describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { continuationSummary } from '../src/threads/continuation'
import { harness, publicUrl, ScriptedRunner, sharedInspector } from './support/helpers'

// One pool of inspect processes for the tests that send files.
const inspector = sharedInspector()

async function png(): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(
    await sharp({ create: { width: 8, height: 6, channels: 3, background: '#36c' } })
      .png()
      .toBuffer(),
  )
}

function upload(files: { name: string; bytes: Uint8Array; type?: string }[]): FormData {
  const form = new FormData()
  files.forEach((file, index) => {
    form.append(`attachments[${index}]`, new File([file.bytes], file.name, { type: file.type ?? '' }))
  })
  return form
}

describe('PATCH /threads/{id}', () => {
  test('the owner renames, archives and makes private; every change is an update', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { name: 'Old' } })
    const id = created.body.thread_id
    const before = (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body
    const renamed = await h.call('PATCH', `/api/v1/threads/${id}`, {
      token: owner.token,
      body: { name: 'New', archived: true, is_private: true },
    })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toEqual({
      ...before,
      name: 'New',
      archived: true,
      is_private: true,
      updated_at: renamed.body.updated_at,
    })
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(before.updated_at))
    // Search follows the new name; null removes it.
    const found = await h.call('GET', '/api/v1/threads?q=new&archived=true', { token: owner.token })
    expect(found.body.data.map((thread: { id: string }) => thread.id)).toEqual([id])
    const cleared = await h.call('PATCH', `/api/v1/threads/${id}`, { token: owner.token, body: { name: null } })
    expect(cleared.body.name).toBeNull()
    // Archiving only files the thread away: it still takes messages, and an answer leaves it archived.
    const sent = await h.call('POST', `/api/v1/threads/${id}/messages`, { token: owner.token, body: { text: 'hi' } })
    expect(sent.status).toBe(201)
    ;(await runner.started(sent.body.message_id)).done()
    await h.app.decorator.engine.idle()
    const after = (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body
    expect(after).toMatchObject({ state: 'ready', archived: true })
  })

  test('other members get 403, a private thread is 404 to them, and bad bodies are 400', async () => {
    await using h = await harness({ runner: new ScriptedRunner() })
    const owner = await h.user()
    const member = await h.user()
    const readOnly = await h.user({ scopes: ['threads:read'] })
    const id = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id
    const path = `/api/v1/threads/${id}`
    expect((await h.call('PATCH', path, { token: member.token, body: { archived: true } })).body).toEqual({
      error: 'forbidden',
      message: 'Only the owner of a thread can change it',
    })
    expect((await h.call('PATCH', path, { token: readOnly.token, body: { archived: true } })).status).toBe(403)
    expect((await h.call('PATCH', path, { token: owner.token, body: {} })).status).toBe(400)
    expect((await h.call('PATCH', path, { token: owner.token, body: { state: 'ready' } })).body.error).toBe(
      'invalid_request',
    )
    expect((await h.call('PATCH', path, { token: owner.token, body: { name: 'x'.repeat(501) } })).status).toBe(400)
    await h.call('PATCH', path, { token: owner.token, body: { is_private: true } })
    expect((await h.call('PATCH', path, { token: member.token, body: { archived: true } })).status).toBe(404)
  })
})

describe('POST /threads/{id}/stop', () => {
  test('stops a running answer, keeping what was written; 409 when nothing runs', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const member = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'Go on' } })
    const { thread_id: id, message_id: question } = created.body
    const job = await runner.started(question)
    job.token('Half an ans')
    expect((await h.call('POST', `/api/v1/threads/${id}/stop`, { token: member.token })).status).toBe(403)
    const stopped = await h.call('POST', `/api/v1/threads/${id}/stop`, { token: owner.token })
    expect(stopped.status).toBe(202)
    // The scripted runner lets go at once, so the thread is already ready again.
    expect(stopped.body.state).toBe('ready')
    const poll = await h.call('GET', `/api/v1/threads/${id}/messages/${question}/response`, { token: owner.token })
    expect(poll.body.status).toBe('interrupted')
    expect(poll.body.messages[0].contents).toEqual([{ type: 'text', text: 'Half an ans' }])
    const again = await h.call('POST', `/api/v1/threads/${id}/stop`, { token: owner.token })
    expect(again.status).toBe(409)
    expect(again.body.error).toBe('conflict')
  })

  test('a queued answer is dropped before it starts', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, config: { GENERATION_CONCURRENCY: 1 } })
    const owner = await h.user()
    const first = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'one' } })).body
    const second = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'two' } })).body
    await runner.started(first.message_id)
    const stopped = await h.call('POST', `/api/v1/threads/${second.thread_id}/stop`, { token: owner.token })
    expect(stopped.status).toBe(202)
    expect(stopped.body.state).toBe('ready')
  })
})

describe('POST /threads/{id}/continue', () => {
  test('a thread in error continues in a new one, seeded with a labelled extract of its end', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const member = await h.user()
    const created = await h.call('POST', '/api/v1/threads', {
      token: owner.token,
      body: { name: 'Trip *plans*', text: 'Plan a weekend in Lyon' },
    })
    const id = created.body.thread_id
    const job = await runner.started(created.body.message_id)
    job.token('Day one: ')
    job.error('The model is unavailable')
    await h.app.decorator.engine.idle()
    expect((await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body.state).toBe('error')

    const continued = await h.call('POST', `/api/v1/threads/${id}/continue`, { token: member.token })
    expect(continued.status).toBe(201)
    const thread = (await h.call('GET', `/api/v1/threads/${continued.body.thread_id}`, { token: member.token })).body
    expect(thread).toMatchObject({ name: 'Trip *plans* (continued)', state: 'ready', is_private: false })
    const messages = (await h.call('GET', `/api/v1/threads/${thread.id}/messages`, { token: member.token })).body
    expect(messages.data).toHaveLength(1)
    expect(messages.data[0].id).toBe(continued.body.message_id)
    expect(messages.data[0].role).toBe('summary')
    expect(messages.data[0].contents[0].text).toBe(
      [
        `**Continued from “Trip \\*plans\\*”, which stopped with an error:** ${publicUrl}/threads/${id}`,
        'This is an automatic extract of its last 2 messages, quoted as written (long ones shortened), not a summary written by a model.',
        '**User:**\n\n> Plan a weekend in Lyon',
        '**Assistant:**\n\n> Day one:',
      ].join('\n\n'),
    )
    // Only a thread in error continues; the new one is ready.
    expect((await h.call('POST', `/api/v1/threads/${thread.id}/continue`, { token: member.token })).status).toBe(409)
  })

  test('a private thread is 404 to others; its continuation stays private', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const member = await h.user()
    const created = await h.call('POST', '/api/v1/threads', {
      token: owner.token,
      body: { text: 'secret', is_private: true },
    })
    ;(await runner.started(created.body.message_id)).error('boom')
    await h.app.decorator.engine.idle()
    const path = `/api/v1/threads/${created.body.thread_id}/continue`
    expect((await h.call('POST', path, { token: member.token })).status).toBe(404)
    const continued = await h.call('POST', path, { token: owner.token })
    const thread = await h.call('GET', `/api/v1/threads/${continued.body.thread_id}`, { token: owner.token })
    expect(thread.body).toMatchObject({ name: 'secret (continued)', is_private: true })
  })

  test('the extract quotes the last six messages, shortens long ones and names files', () => {
    const history = Array.from({ length: 8 }, (_, index) => ({
      role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
      contents: [{ type: 'text' as const, text: index === 7 ? 'y'.repeat(2100) : `turn ${index}` }],
    }))
    history[6]?.contents.push({ type: 'image', attachment_id: 'a1' } as never)
    const text = continuationSummary(
      { name: null, appUrl: 'http://x/threads/1' },
      history,
      new Map([['a1', 'photo_[1].png']]),
    )
    expect(text).toStartWith('**Continued from an untitled thread, which stopped with an error:** http://x/threads/1')
    expect(text).toContain('last 6 messages')
    expect(text).toContain('2 earlier messages are left out.')
    expect(text).not.toContain('turn 1\n')
    expect(text).toContain('> turn 6\n> \\[image: photo\\_\\[1\\]\\.png\\]')
    expect(text).toEndWith(`> ${'y'.repeat(2000)} …`)
  })
})

describe('GET /threads/{id}/attachments/{attachmentId}', () => {
  test('serves the stored file with its type, a safe name and headers that keep it inert', async () => {
    await using h = await harness({ runner: new ScriptedRunner(), inspector })
    const owner = await h.user()
    const member = await h.user()
    const id = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id
    const image = await png()
    const stored = await h.call('POST', `/api/v1/threads/${id}/attachments`, {
      token: owner.token,
      body: upload([
        { name: 'café 100%.png', bytes: image },
        { name: 'notes<script>é.md', bytes: new TextEncoder().encode('# <b>hi</b>') },
      ]),
    })
    const [picture, notes] = stored.body
    const response = await h.app.handle(
      new Request(`${publicUrl}/api/v1/threads/${id}/attachments/${picture.id}`, {
        headers: { authorization: `Bearer ${member.token}` },
      }),
    )
    expect(response.status).toBe(200)
    expect(Buffer.from(await response.arrayBuffer()).equals(image)).toBe(true)
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'content-type': 'image/png',
      'content-disposition': `inline; filename="caf_ 100_.png"; filename*=UTF-8''caf%C3%A9%20100%25.png`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
      'cache-control': 'private, no-cache',
      etag: `"${picture.id}"`,
    })
    const text = await h.call('GET', `/api/v1/threads/${id}/attachments/${notes.id}`, { token: owner.token })
    expect(text.body).toBe('# <b>hi</b>')
    expect(text.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
    expect(text.headers.get('content-disposition')).toBe(
      `attachment; filename="notes<script>_.md"; filename*=UTF-8''notes%3Cscript%3E%C3%A9.md`,
    )
    const revalidate = async (ifNoneMatch: string) =>
      (
        await h.call('GET', `/api/v1/threads/${id}/attachments/${notes.id}`, {
          token: owner.token,
          headers: { 'if-none-match': ifNoneMatch },
        })
      ).status
    // RFC 9110 §13.1.2: the tag itself, weakly compared, in a list, or *.
    for (const header of [`"${notes.id}"`, `W/"${notes.id}"`, `"other", "${notes.id}"`, '*']) {
      expect(await revalidate(header)).toBe(304)
    }
    expect(await revalidate(`"${picture.id}"`)).toBe(200)
  })

  test('404 for another thread’s file and for a private thread; threads:read is required', async () => {
    await using h = await harness({ runner: new ScriptedRunner(), inspector })
    const owner = await h.user()
    const member = await h.user()
    const writer = await h.user({ scopes: ['threads:write'] })
    const first = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id
    const second = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body.thread_id
    const file = (
      await h.call('POST', `/api/v1/threads/${first}/attachments`, {
        token: owner.token,
        body: upload([{ name: 'a.png', bytes: await png() }]),
      })
    ).body[0]
    expect(
      (await h.call('GET', `/api/v1/threads/${second}/attachments/${file.id}`, { token: owner.token })).status,
    ).toBe(404)
    expect(
      (await h.call('GET', `/api/v1/threads/${first}/attachments/${file.id}`, { token: writer.token })).status,
    ).toBe(403)
    await h.call('PATCH', `/api/v1/threads/${first}`, { token: owner.token, body: { is_private: true } })
    const hidden = await h.call('GET', `/api/v1/threads/${first}/attachments/${file.id}`, { token: member.token })
    expect(hidden.status).toBe(404)
    expect(hidden.body).toEqual({ error: 'not_found', message: 'Thread not found' })
  })
})
