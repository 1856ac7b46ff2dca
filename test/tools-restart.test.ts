// Answers with tool calls across a SIGKILL of the real server process: a question waiting for the thread's owner is
// only stored messages, so the restarted server goes on from it; a call cut short by the kill is recorded `unknown` and
// never sent again (at most once), and the answer completes from the rounds recorded before the kill.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { backendEnv, databaseOf } from './support/backend'
import { FakeLlm, openaiText, openaiToolCalls, sse } from './support/fake-llm'
import { firstRunToken, startServer, tokensOf, until } from './support/helpers'
import { mcpUpstream } from './support/mcp-upstream'
import { connectUpstream, deletePage, send, toolsEnv } from './support/tools'

/** A folder for one test's server processes, and their environment; the folder goes with the test. */
async function serverPlace(fake: FakeLlm) {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-tools-restart-'))
  const env = await backendEnv({
    ...toolsEnv(fake),
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
  })
  return { env, [Symbol.asyncDispose]: async () => rmSync(dir, { recursive: true, force: true }) }
}

async function messagesOf(url: string, token: string, threadId: string) {
  const reply = await fetch(`${url}/api/v1/threads/${threadId}/messages`, {
    headers: { authorization: `Bearer ${token}` },
  })
  return ((await reply.json()) as { data: { role: string; contents: { type: string; text?: string }[] }[] }).data
}

// Each test starts and kills real server processes of its own: they run concurrently.

test.concurrent('a server killed while an approval waits goes on from it after the restart', async () => {
  await using fake = new FakeLlm()
  await using up = mcpUpstream()
  await using place = await serverPlace(fake)
  const { env } = place
  {
    let token: string
    let threadId: string
    {
      await using first = await startServer(env)
      token = await firstRunToken(first)
      await connectUpstream(env, up, false)
      fake.reply(() => sse(openaiToolCalls(['I will delete it.'], [deletePage])))
      const asked = await send(first.url, token, 'Delete page 7')
      threadId = asked.threadId
      const events = await asked.stream()
      expect(events.at(-1)?.event).toBe('done')
      const [, question] = await messagesOf(first.url, token, threadId)
      expect(question?.contents.at(-1)).toMatchObject({ type: 'user_get_choice', choices: ['Allow', 'Deny'] })
      first.process.kill('SIGKILL')
      await first.process.exited
    }

    await using second = await startServer(env)
    fake.reply(() => sse(openaiText(['Page 7 is gone.'])))
    const allowed = await send(second.url, token, 'Allow', threadId)
    const events = await allowed.stream()
    expect(tokensOf(events)).toBe('Page 7 is gone.')
    expect(up.deletes).toBe(1)
    expect(JSON.stringify(fake.received[1]?.body)).toContain('Deleted 7')
  }
})

test.concurrent('a call cut short by a kill is recorded unknown, never sent again, and the answer completes', async () => {
  await using fake = new FakeLlm()
  await using up = mcpUpstream()
  await using place = await serverPlace(fake)
  const { env } = place
  {
    let token: string
    let threadId: string
    let sent: Awaited<ReturnType<typeof send>>
    {
      await using first = await startServer(env)
      token = await firstRunToken(first)
      // Trusted: its calls that change something run without asking, so the kill finds one under way.
      await connectUpstream(env, up, true)
      up.mode = 'hang'
      fake.reply(() => sse(openaiToolCalls(['Deleting.'], [deletePage])))
      sent = await send(first.url, token, 'Delete page 7')
      threadId = sent.threadId
      await until(() => up.deletes === 1)
      first.process.kill('SIGKILL')
      await first.process.exited
    }
    up.mode = 'normal'

    await using second = await startServer(env)
    fake.reply(() => sse(openaiText(['It may have been deleted; please check.'])))
    const events = await sent.stream(second.url)
    expect(events.at(-1)?.event).toBe('done')
    // The round recorded before the kill is the answer's start again; the new text follows it as a new round.
    expect(tokensOf(events)).toBe('Deleting.\n\nIt may have been deleted; please check.')
    expect(up.deletes).toBe(1)
    expect(JSON.stringify(fake.received[1]?.body)).toContain('whether it took effect is unknown')
    await using db = await databaseOf(env)
    const calls = await db.orm.select().from(db.tables.toolCalls).where(eq(db.tables.toolCalls.threadId, threadId))
    expect(calls.map((call) => call.status)).toEqual(['unknown'])
    const [, answer] = await messagesOf(second.url, token, threadId)
    expect(answer).toMatchObject({
      role: 'assistant',
      contents: [{ type: 'text', text: 'Deleting.\n\nIt may have been deleted; please check.' }],
    })
  }
})
