// SIGTERM with the real server process: running answers finish within the grace period, or their
// streams get a final event and the next start completes them; the process exits cleanly.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { restartMessage } from '../src/generation/service'
import { backendEnv } from './support/backend'
import { collect, firstRunToken, parseEvents, startServer, tokensOf } from './support/helpers'

// Each scenario has a server and a database of its own: the two run concurrently.
async function scenario(graceMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-shutdown-'))
  // Resolved once, so that on PostgreSQL the next start opens the same database and bucket.
  const env = await backendEnv({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    ECHO_TOKEN_DELAY_MS: '50',
    SHUTDOWN_GRACE_MS: String(graceMs),
    ADMIN_EMAIL: 'owner@example.com',
    ADMIN_PASSWORD: 'a long enough password',
  })
  const server = await startServer(env)
  const token = await firstRunToken(server)
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const created = (await (
    await fetch(`${server.url}/api/v1/threads`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ text: 'finish me' }),
    })
  ).json()) as { thread_id: string; message_id: string }
  const path = `/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response/stream`
  const events = parseEvents(await fetch(`${server.url}${path}`, { headers }))
  const first = await events.next()
  expect(first.value?.event).toBe('token')
  server.process.kill('SIGTERM')
  const rest = await collect(events)
  const code = await server.process.exited
  return { dir, env, headers, created, path, events: [first.value, ...rest], code }
}

test.concurrent('SIGTERM lets a running answer finish within the grace period, then exits 0', async () => {
  const run = await scenario(10_000)
  try {
    expect(run.code).toBe(0)
    expect(run.events.at(-1)?.event).toBe('done')
    expect(tokensOf(run.events.flatMap((e) => (e ? [e] : [])))).toBe('You said, in turn 1:\n\n> finish me')
  } finally {
    rmSync(run.dir, { recursive: true, force: true })
  }
})

test.concurrent('past the grace period, streams end with an error event and the next start completes the answer', async () => {
  const run = await scenario(0)
  try {
    expect(run.code).toBe(0)
    expect(run.events.at(-1)).toMatchObject({ event: 'error', data: JSON.stringify({ message: restartMessage }) })
    await using again = await startServer(run.env)
    const replay = await collect(parseEvents(await fetch(`${again.url}${run.path}`, { headers: run.headers })))
    expect(replay.at(-1)?.event).toBe('done')
    expect(tokensOf(replay)).toBe('You said, in turn 1:\n\n> finish me')
  } finally {
    rmSync(run.dir, { recursive: true, force: true })
  }
})
