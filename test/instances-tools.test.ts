// Tools across instances on one PostgreSQL database: an approval is only stored messages and tool-call rows, so the
// question one instance asked is answered on another, which decides the call and runs it; and the rounds an answer
// recorded are where another instance goes on from when the one generating it dies. The instance that is not meant
// to act is paused (SIGSTOP) meanwhile, so which one claims each answer is certain. PostgreSQL only: SQLite is one
// process's database.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { EventSourceMessage } from 'eventsource-parser'
import { backendEnv, databaseOf, onPostgres } from './support/backend'
import { FakeLlm, Feed, openaiChunk, openaiText, openaiToolCalls, sse } from './support/fake-llm'
import { collect, firstRunToken, parseEvents, type ServerProcess, startServer, tokensOf } from './support/helpers'
import { mcpUpstream } from './support/mcp-upstream'
import { connectUpstream, deletePage, send, toolsEnv } from './support/tools'

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
  const asked = await whilePaused(b, async () => {
    const sent = await send(a.url, token, 'Delete page 7')
    return { ...sent, events: await sent.stream() }
  })
  expect(asked.events.at(-1)?.event).toBe('done')
  expect(up.deletes).toBe(0)

  fake.reply(() => sse(openaiText(['Page 7 is gone.'])))
  const allowed = await whilePaused(a, async () => {
    const sent = await send(b.url, token, 'Allow', asked.threadId)
    return { ...sent, events: await sent.stream() }
  })
  expect(tokensOf(allowed.events)).toBe('Page 7 is gone.')
  expect(up.deletes).toBe(1)
  expect(JSON.stringify(fake.received[1]?.body)).toContain('Deleted 7')
  await using db = await databaseOf(env)
  const calls = await db.orm.select().from(db.tables.toolCalls).where(eq(db.tables.toolCalls.threadId, asked.threadId))
  expect(calls.map((call) => [call.status, call.decidedBy])).toEqual([['ok', allowed.messageId]])
})

const searchDocs = { id: 'call_s1', name: 'docs__search_docs', arguments: '{"query":"tokens"}' }

test.skipIf(!onPostgres)(
  'killing the instance between rounds: the other goes on from the recorded rounds',
  async () => {
    await using fake = new FakeLlm()
    await using up = mcpUpstream()
    // Leases short enough for a takeover to be waited on in a test.
    const env = await backendEnv({ ...toolsEnv(fake), SHUTDOWN_GRACE_MS: '0', GENERATION_LEASE_MS: '1500' })
    await using a = await startServer(env)
    const token = await firstRunToken(a)
    await using b = await startServer(env)
    await connectUpstream(env, up, false)
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

    // Round 1 searches (read-only: it runs at once); the second request streams its start on A, then hangs there. B
    // asks the model again and gets the same reply, as the plain answers' takeover test gets the same echo.
    const hanging = new Feed([
      openaiChunk({ role: 'assistant', content: '', refusal: null }),
      openaiChunk({ content: 'Found ' }),
      openaiChunk({ content: '2 ' }),
    ])
    fake.reply(
      () => sse(openaiToolCalls(['Let me ', 'search.'], [searchDocs])),
      () => hanging.response(),
      () => sse(openaiText(['Found ', '2 ', 'pages.'])),
    )
    const sent = await whilePaused(b, async () => {
      const reply = await fetch(`${a.url}/api/v1/threads`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: 'How do tokens work?' }),
      })
      expect(reply.status).toBe(201)
      const body = (await reply.json()) as { thread_id: string; message_id: string }
      // Asked of the model by A, the only one running: A holds the answer.
      await fake.requests(1)
      return { threadId: body.thread_id, messageId: body.message_id }
    })
    const answerPath = `${b.url}/api/v1/threads/${sent.threadId}/messages/${sent.messageId}`
    const calls = () => up.requests.filter((request) => request.rpc === 'tools/call').length

    // A client follows the answer on B from before the kill, until A's second round has reached it in part.
    const events = parseEvents(await fetch(`${answerPath}/response/stream`, { headers }))
    const seen: EventSourceMessage[] = []
    while (!tokensOf(seen).endsWith('Found 2 ')) {
      const next = await events.next()
      if (next.done) throw new Error(`the stream ended early: ${JSON.stringify(seen)}`)
      seen.push(next.value)
    }
    expect(tokensOf(seen)).toBe('Let me search.\n\nFound 2 ')
    // Round 1's call ran and was recorded before its results went to the model in the second request.
    expect(calls()).toBe(1)
    expect(fake.received).toHaveLength(2)
    a.process.kill('SIGKILL')
    await a.process.exited

    const all = [...seen, ...(await collect(events))]
    expect(all.at(-1)?.event).toBe('done')
    // Each token continues exactly where the one before it ended: the client got nothing twice and missed nothing.
    let end = 0
    for (const event of all.filter((each) => each.event === 'token')) {
      const text = JSON.parse(event.data).token as string
      expect(Number(event.id)).toBe(end + text.length)
      end = Number(event.id)
    }
    expect(tokensOf(all)).toBe('Let me search.\n\nFound 2 pages.')
    expect(b.stderr()).toContain('took over unfinished answers')
    const stored = await fetch(`${answerPath}/response`, { headers })
    const answer = (await stored.json()) as { status: string; messages: { contents: { text?: string }[] }[] }
    expect(answer.status).toBe('complete')
    expect(answer.messages.flatMap((message) => message.contents.map((block) => block.text ?? '')).join('')).toBe(
      tokensOf(all),
    )

    // B went on from round 1 as recorded: the search was not made again, its result reached the model again.
    expect(calls()).toBe(1)
    expect(fake.received).toHaveLength(3)
    expect(JSON.stringify(fake.received[2]?.body)).toContain('Found 2 pages for tokens')
    await using db = await databaseOf(env)
    const recorded = await db.orm
      .select()
      .from(db.tables.toolCalls)
      .where(eq(db.tables.toolCalls.threadId, sent.threadId))
    expect(recorded.map((call) => [call.round, call.status, call.toolName])).toEqual([[1, 'ok', 'search_docs']])
    const rounds = await db.orm
      .select()
      .from(db.tables.toolRounds)
      .where(eq(db.tables.toolRounds.threadId, sent.threadId))
    expect(rounds.map((round) => [round.round, round.text])).toEqual([[1, 'Let me search.']])
    // Usage is round 1's, as A recorded it, and B's request: A's cut-short one reported none.
    const usage = await db.orm.select().from(db.tables.answerUsage)
    expect(usage.map((row) => [row.inputTokens, row.outputTokens, row.outcome])).toEqual([[2 * 42, 2 * 7, 'complete']])
  },
)
