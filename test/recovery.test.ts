// End to end with the real server process and the real worker: a SIGKILL in the middle of an answer
// loses nothing, and the next start finishes the work.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collect, parseEvents, startServer, tokensOf } from './helpers'

test('a server killed mid-generation finishes the answer after restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-recovery-'))
  const env = {
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ECHO_TOKEN_DELAY_MS: '100',
    ADMIN_EMAIL: 'owner@example.com',
    ADMIN_PASSWORD: 'a long enough password',
  }
  try {
    let token: string
    let created: { thread_id: string; message_id: string }
    {
      await using first = await startServer(env)
      token = first.stdout().trim().split('\n').at(-1) ?? ''
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
    expect(tokensOf(events)).toBe('Echo (turn 1): you said “survive the crash”.')

    const thread = (await (await fetch(base, { headers })).json()) as { state: string }
    expect(thread.state).toBe('ready')
    const messages = (await (await fetch(`${base}/messages`, { headers })).json()) as { data: { role: string }[] }
    expect(messages.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 30_000)
