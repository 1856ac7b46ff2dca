// Deleting a thread (everything that hangs on it goes, files too; a running answer is stopped first) and exporting
// one as JSON or Markdown: additions to the specification, over the API.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { collect, harness, openStream, ScriptedRunner, sharedInspector, tokensOf } from './support/helpers'
import { expectNothingStored, form, png, storedFiles, upload, setup as uploadSetup } from './support/uploads'

// Uploads are checked in inspect processes, which wait their turn with every other process on a busy machine.
const inspector = sharedInspector()
const setup = () => uploadSetup({ inspector })

describe.concurrent('delete', () => {
  test('removes the thread with its messages, feedback, files, search entry and answers; its IDs answer 404', async () => {
    await using s = await setup()
    const { h, owner, threadId } = s
    const uploaded = await upload(h, owner.token, threadId, form({ name: 'pic.png', bytes: await png() }))
    expect(uploaded.status).toBe(201)
    const attachmentId = uploaded.body[0].id as string
    const sent = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
      token: owner.token,
      body: { text: 'zanzibar picture', attachment_ids: [attachmentId] },
    })
    expect(sent.status).toBe(201)
    await h.app.decorator.engine.idle()
    const answer = (await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: owner.token })).body.data.at(
      -1,
    )
    expect(
      (
        await h.call('POST', `/api/v1/threads/${threadId}/messages/${answer.id}/feedback`, {
          token: owner.token,
          body: { positive: true },
        })
      ).status,
    ).toBe(204)
    const search = () => h.call('GET', '/api/v1/threads?q=zanzibar', { token: owner.token })
    expect((await search()).body.data.map((t: { id: string }) => t.id)).toEqual([threadId])
    expect((await storedFiles(h)).length).toBeGreaterThan(0)

    expect((await h.call('DELETE', `/api/v1/threads/${threadId}`, { token: owner.token })).status).toBe(204)

    expect((await h.call('GET', `/api/v1/threads/${threadId}`, { token: owner.token })).status).toBe(404)
    expect((await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: owner.token })).status).toBe(404)
    const download = await h.call('GET', `/api/v1/threads/${threadId}/attachments/${attachmentId}`, {
      token: owner.token,
    })
    expect(download.status).toBe(404)
    expect((await search()).body.data).toEqual([])
    expect((await h.call('DELETE', `/api/v1/threads/${threadId}`, { token: owner.token })).status).toBe(404)
    const { messages, feedback, generations } = h.tables
    expect(await h.orm.select().from(messages).where(eq(messages.threadId, threadId))).toEqual([])
    expect(await h.orm.select().from(generations).where(eq(generations.threadId, threadId))).toEqual([])
    expect(await h.orm.select().from(feedback)).toEqual([])
    await expectNothingStored(h)
  })

  test('only the owner deletes: 403 for a member who sees the thread, 404 for another organization', async () => {
    await using h = await harness()
    const owner = await h.user()
    const member = await h.user()
    const stranger = await h.user({ org: 'elsewhere' })
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    expect((await h.call('DELETE', `/api/v1/threads/${thread_id}`, { token: member.token })).status).toBe(403)
    expect((await h.call('DELETE', `/api/v1/threads/${thread_id}`, { token: stranger.token })).status).toBe(404)
    const reader = await h.user({ scopes: ['threads:read'] })
    expect((await h.call('DELETE', `/api/v1/threads/${thread_id}`, { token: reader.token })).status).toBe(403)
    expect((await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })).status).toBe(200)
  })

  test('a running answer is stopped first: its stream ends with an error, and nothing is left running', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'long one' } })).body
    const job = await runner.started(created.message_id)
    job.token('Partial')
    const path = `/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response/stream`
    const stream = await openStream(h, path, owner.token)
    expect((await h.call('DELETE', `/api/v1/threads/${created.thread_id}`, { token: owner.token })).status).toBe(204)
    const events = await collect(stream.events)
    expect(tokensOf(events)).toBe('Partial')
    expect(events.at(-1)?.event).toBe('error')
    await h.app.decorator.engine.idle()
    expect(await h.orm.select().from(h.tables.threads).where(eq(h.tables.threads.id, created.thread_id))).toEqual([])
  })
})

describe.concurrent('export', () => {
  test('JSON carries the thread, every message and the files; Markdown reads as the conversation', async () => {
    await using s = await setup()
    const { h, owner, threadId } = s
    await h.call('PATCH', `/api/v1/threads/${threadId}`, { token: owner.token, body: { name: 'Trip plans' } })
    const uploaded = await upload(h, owner.token, threadId, form({ name: 'map.png', bytes: await png() }))
    const attachmentId = uploaded.body[0].id as string
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
      token: owner.token,
      body: { text: 'Where **first**?', attachment_ids: [attachmentId] },
    })
    await h.app.decorator.engine.idle()
    const listed = (await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: owner.token })).body.data

    const json = await h.call('GET', `/api/v1/threads/${threadId}/export`, { token: owner.token })
    expect(json.status).toBe(200)
    expect(json.headers.get('content-disposition')).toBe(`attachment; filename="thread-${threadId}.json"`)
    expect(json.body).toMatchObject({
      format: 'threadhouse.thread.v1',
      thread: { id: threadId, name: 'Trip plans' },
      messages: listed,
      attachments: [
        {
          id: attachmentId,
          filename: 'map.png',
          media_type: 'image/png',
          download_path: `/api/v1/threads/${threadId}/attachments/${attachmentId}`,
        },
      ],
    })
    const file = await h.call('GET', json.body.attachments[0].download_path, { token: owner.token })
    expect(file.status).toBe(200)

    const markdown = await h.call('GET', `/api/v1/threads/${threadId}/export?format=markdown`, { token: owner.token })
    expect(markdown.status).toBe(200)
    expect(markdown.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
    expect(markdown.headers.get('content-disposition')).toBe(`attachment; filename="thread-${threadId}.md"`)
    const text = markdown.body as string
    expect(text.startsWith('# Trip plans\n')).toBe(true)
    expect(text).toContain('Where **first**?')
    expect(text).toContain('Attached: map.png (image/png)')
    expect(text).toContain(`## Assistant · ${listed[1].created_at}`)
    expect(text).toContain(listed[1].contents[0].text)
  })

  test('only for those who may read the thread; an unknown format is refused', async () => {
    await using h = await harness()
    const owner = await h.user()
    const stranger = await h.user({ org: 'elsewhere' })
    const member = await h.user()
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    const path = `/api/v1/threads/${thread_id}/export`
    expect((await h.call('GET', path, { token: stranger.token })).status).toBe(404)
    expect((await h.call('GET', path, { token: member.token })).status).toBe(200)
    await h.call('PATCH', `/api/v1/threads/${thread_id}`, { token: owner.token, body: { is_private: true } })
    expect((await h.call('GET', path, { token: member.token })).status).toBe(404)
    expect((await h.call('GET', `${path}?format=pdf`, { token: owner.token })).status).toBe(400)
  })
})
