// Tools across instances on one PostgreSQL database: an approval is only stored messages and tool-call rows, so the
// question one instance asked is answered on another, which decides the call and runs it. The instance that is not
// meant to act is paused (SIGSTOP) meanwhile, so which one claims each answer is certain. PostgreSQL only: SQLite is
// one process's database.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { backendEnv, databaseOf, onPostgres } from './support/backend'
import { FakeLlm, openaiText, openaiToolCalls, sse } from './support/fake-llm'
import { collect, firstRunToken, parseEvents, type ServerProcess, startServer, tokensOf } from './support/helpers'
import { mcpUpstream } from './support/mcp-upstream'
import { connectUpstream, toolsEnv } from './support/tools'

const deletePage = { id: 'call_d1', name: 'docs__delete_page', arguments: '{"page":"7"}' }

/** Sends a message to `server` and reads its answer's stream there, to the end. */
async function send(server: ServerProcess, token: string, text: string, threadId?: string) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const path = threadId ? `/api/v1/threads/${threadId}/messages` : '/api/v1/threads'
  const sent = await fetch(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ text }) })
  expect(sent.status).toBe(201)
  const body = (await sent.json()) as { thread_id?: string; message_id: string }
  const thread = threadId ?? (body.thread_id as string)
  const stream = `${server.url}/api/v1/threads/${thread}/messages/${body.message_id}/response/stream`
  const events = await collect(parseEvents(await fetch(stream, { headers })))
  return { threadId: thread, messageId: body.message_id, events }
}

/** `work` while `server` is paused: it claims nothing meanwhile. */
async function whilePaused<T>(server: ServerProcess, work: () => Promise<T>): Promise<T> {
  server.process.kill('SIGSTOP')
  try {
    return await work()
  } finally {
    server.process.kill('SIGCONT')
  }
}

test.skipIf(!onPostgres)('an approval asked on one instance is answered on another, which runs the call', async () => {
  await using fake = new FakeLlm()
  await using up = mcpUpstream()
  const env = await backendEnv({ ...toolsEnv(fake), SHUTDOWN_GRACE_MS: '0' })
  await using a = await startServer(env)
  const token = await firstRunToken(a)
  await using b = await startServer(env)
  await connectUpstream(env, up, false)

  fake.reply(() => sse(openaiToolCalls(['I will delete it.'], [deletePage])))
  const asked = await whilePaused(b, () => send(a, token, 'Delete page 7'))
  expect(asked.events.at(-1)?.event).toBe('done')
  expect(up.deletes).toBe(0)

  fake.reply(() => sse(openaiText(['Page 7 is gone.'])))
  const allowed = await whilePaused(a, () => send(b, token, 'Allow', asked.threadId))
  expect(tokensOf(allowed.events)).toBe('Page 7 is gone.')
  expect(up.deletes).toBe(1)
  expect(JSON.stringify(fake.received[1]?.body)).toContain('Deleted 7')
  await using db = await databaseOf(env)
  const calls = await db.orm.select().from(db.tables.toolCalls).where(eq(db.tables.toolCalls.threadId, asked.threadId))
  expect(calls.map((call) => [call.status, call.decidedBy])).toEqual([['ok', allowed.messageId]])
})
