// Bounded load on loopback against the real server: concurrent senders, streamers and readers never
// see a 500, never lose or duplicate a token, and SQLite contention never surfaces.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collect, firstRunToken, parseEvents, startServer, tokensOf } from './support/helpers'

test('concurrent conversations with many listeners each', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-load-'))
  try {
    await using server = await startServer({
      DATABASE_PATH: join(dir, 'db.sqlite'),
      ECHO_TOKEN_DELAY_MS: '1',
      GENERATION_CONCURRENCY: '4',
      RATE_LIMIT_API_PER_MINUTE: '0',
      ADMIN_EMAIL: 'owner@example.com',
      ADMIN_PASSWORD: 'a long enough password',
    })
    const token = await firstRunToken(server)
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const statuses: number[] = []
    const api = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${server.url}/api/v1${path}`, { ...init, headers })
      statuses.push(response.status)
      return response
    }

    async function conversation(n: number): Promise<void> {
      const { thread_id } = (await (await api('/threads', { method: 'POST', body: '{}' })).json()) as {
        thread_id: string
      }
      for (let turn = 0; turn < 3; turn++) {
        const sent = await api(`/threads/${thread_id}/messages`, {
          method: 'POST',
          body: JSON.stringify({ text: `conversation ${n} turn ${turn} ${'words '.repeat(n % 5)}` }),
        })
        expect(sent.status).toBe(201)
        const { message_id } = (await sent.json()) as { message_id: string }
        const path = `/threads/${thread_id}/messages/${message_id}/response/stream`
        const listeners = await Promise.all(Array.from({ length: 5 }, () => api(path)))
        const heard = await Promise.all(listeners.map((response) => collect(parseEvents(response))))
        const poll = (await (await api(`/threads/${thread_id}/messages/${message_id}/response`)).json()) as {
          messages: { contents: { text: string }[] }[]
        }
        const stored = poll.messages[0]?.contents[0]?.text
        for (const events of heard) {
          expect(events.at(-1)?.event).toBe('done')
          expect(tokensOf(events)).toBe(stored ?? '')
        }
        await api('/threads?limit=20')
        await api(`/threads?q=conversation%20${n}`)
      }
    }

    await Promise.all(Array.from({ length: 12 }, (_, n) => conversation(n)))
    expect(statuses.filter((status) => status >= 500)).toEqual([])
    await server[Symbol.asyncDispose]() // every log line written, none still in the pipe
    expect(server.stderr()).not.toMatch(/SQLITE_BUSY|database is locked|unhandled error/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
