// End to end with the real server process and the real worker: a SIGKILL in the middle of an answer
// loses nothing, and the next start finishes the work.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { backendEnv } from './support/backend'
import {
  collect,
  firstRunToken,
  harness,
  ManualClock,
  parseEvents,
  ScriptedRunner,
  startServer,
  tokensOf,
} from './support/helpers'

// Each test starts and kills real server processes, or has an app of its own: they run concurrently.

test.concurrent('a server killed mid-generation finishes the answer after restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-recovery-'))
  // Resolved once, so that on PostgreSQL the restarted server opens the same database and bucket.
  const env = await backendEnv({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ECHO_TOKEN_DELAY_MS: '100',
    ADMIN_EMAIL: 'owner@example.com',
    ADMIN_PASSWORD: 'a long enough password',
  })
  try {
    let token: string
    let created: { thread_id: string; message_id: string }
    {
      await using first = await startServer(env)
      token = await firstRunToken(first)
      expect(token).toStartWith('thp_')
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const reply = await fetch(`${first.url}/api/v1/threads`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: 'survive the crash' }),
      })
      expect(reply.status).toBe(201)
      created = (await reply.json()) as typeof created
      const stream = await fetch(
        `${first.url}/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response/stream`,
        { headers },
      )
      const events = parseEvents(stream)
      expect((await events.next()).value?.event).toBe('token')
      first.process.kill('SIGKILL')
      await first.process.exited
    }

    await using second = await startServer(env)
    expect(second.stdout()).not.toContain('thp_') // first-run output is printed once only
    const headers = { authorization: `Bearer ${token}` }
    const base = `${second.url}/api/v1/threads/${created.thread_id}`
    const stream = await fetch(`${base}/messages/${created.message_id}/response/stream`, { headers })
    const events = await collect(parseEvents(stream))
    expect(events.at(-1)?.event).toBe('done')
    expect(tokensOf(events)).toBe('You said, in turn 1:\n\n> survive the crash')

    const thread = (await (await fetch(base, { headers })).json()) as { state: string }
    expect(thread.state).toBe('ready')
    const messages = (await (await fetch(`${base}/messages`, { headers })).json()) as { data: { role: string }[] }
    expect(messages.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.concurrent('at start-up, unfinished answers are requeued and one cut short three times fails instead', async () => {
  await using h = await harness()
  const owner = await h.user()
  const { generations, messages, threads } = h.tables
  // Build by hand the state a crashed process leaves behind: answers `running`, threads `active`.
  const make = async () => {
    const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
    const now = Date.now()
    const messageId = crypto.randomUUID()
    await h.orm.insert(messages).values({
      id: messageId,
      threadId: thread_id,
      role: 'user',
      contents: [{ type: 'text', text: 'again' }],
      text: 'again',
      createdAt: now,
    })
    return { thread_id, messageId }
  }
  const stuck = await make()
  const poison = await make()
  await h.orm.insert(generations).values([
    { messageId: stuck.messageId, threadId: stuck.thread_id, status: 'running', attempts: 1, createdAt: 1 },
    { messageId: poison.messageId, threadId: poison.thread_id, status: 'running', attempts: 3, createdAt: 2 },
  ])
  await h.orm.update(threads).set({ state: 'active' })

  expect(await h.app.decorator.engine.recover()).toBe(1)
  await h.app.decorator.engine.idle()
  const state = async (id: string) => (await h.call('GET', `/api/v1/threads/${id}`, { token: owner.token })).body.state
  expect(await state(stuck.thread_id)).toBe('ready')
  expect(await state(poison.thread_id)).toBe('error')
  const poll = await h.call('GET', `/api/v1/threads/${poison.thread_id}/messages/${poison.messageId}/response`, {
    token: owner.token,
  })
  expect(poll.body).toEqual({ status: 'error', messages: [] })
})

test.concurrent('a shutdown past its grace period gives back the attempt, so it never counts toward failing the answer', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const owner = await h.user()
  const created = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'a long one' } })).body
  await runner.started(created.message_id)
  const { generations } = h.tables
  expect(await h.orm.select().from(generations)).toMatchObject([{ status: 'running', attempts: 1 }])
  await h.app.decorator.engine.close(0)
  expect(await h.orm.select().from(generations)).toMatchObject([{ status: 'queued', attempts: 0 }])
})

test.concurrent('at start-up, an answer that was being stopped when the process died stays stopped', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const owner = await h.user()
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const messageId = crypto.randomUUID()
  const { generations, messages, threads } = h.tables
  await h.orm.insert(messages).values({
    id: messageId,
    threadId: thread_id,
    role: 'user',
    contents: [{ type: 'text', text: 'stop me' }],
    text: 'stop me',
    createdAt: 1,
  })
  await h.orm
    .insert(generations)
    .values({ messageId, threadId: thread_id, status: 'running', attempts: 1, createdAt: 1 })
  await h.orm.update(threads).set({ state: 'interrupted' }).where(eq(threads.id, thread_id))

  const before = new Date(clock.now()).toISOString()
  clock.advance(1000)
  expect(await h.app.decorator.engine.recover()).toBe(0)
  const thread = await h.call('GET', `/api/v1/threads/${thread_id}`, { token: owner.token })
  expect(thread.body.state).toBe('ready')
  // The change of state is an update that clients polling with updated_since see.
  expect(thread.body.updated_at).toBe(new Date(clock.now()).toISOString())
  const since = await h.call('GET', `/api/v1/threads?updated_since=${before}`, { token: owner.token })
  expect(since.body.data.map((t: { id: string }) => t.id)).toEqual([thread_id])
  const poll = await h.call('GET', `/api/v1/threads/${thread_id}/messages/${messageId}/response`, {
    token: owner.token,
  })
  expect(poll.body).toEqual({ status: 'interrupted', messages: [] })
})
