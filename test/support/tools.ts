// What the process tests of tools share: a server's environment asking a fake provider and allowed to reach loopback,
// and an MCP upstream connected by the first-run owner's organization straight in the database, its tools on as a
// first refresh leaves them (a process test has no MCP client of its own to fetch them with).
import { expect } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { McpServerRow } from '../../src/connectors/repository'
import { testEvent } from './audit'
import { databaseOf } from './backend'
import { type FakeLlm, testApiKey } from './fake-llm'
import { collect, parseEvents } from './helpers'
import type { McpUpstream } from './mcp-upstream'

export const ownerEmail = 'owner@example.com'

/** The variables of a server whose model is the fake's OpenAI-style one, with the first-run owner. */
export function toolsEnv(fake: FakeLlm): Record<string, string> {
  return {
    ADMIN_EMAIL: ownerEmail,
    ADMIN_PASSWORD: 'a long enough password',
    LLM_PROVIDER: 'openai',
    LLM_MODEL: 'test-model',
    LLM_BASE_URL: `${fake.url}/v1`,
    LLM_API_KEY: testApiKey,
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  }
}

/** The upstream connected as `docs` by the owner's organization, with its two tools on, as a refresh leaves them. */
export async function connectUpstream(env: Record<string, string>, up: McpUpstream, trusted: boolean): Promise<void> {
  await using db = await databaseOf(env)
  const [owner] = await db.orm
    .select({ id: db.tables.users.id, organizationId: db.tables.users.organizationId })
    .from(db.tables.users)
    .where(eq(db.tables.users.email, ownerEmail))
  if (!owner) throw new Error('no owner')
  const server = (await db.store.mcpServers.add(
    {
      id: Bun.randomUUIDv7(),
      organizationId: owner.organizationId,
      name: 'docs',
      url: up.url,
      auth: 'none',
      headersSealed: null,
      headerNames: [],
      trusted,
      createdBy: owner.id,
      now: Date.now(),
    },
    () => testEvent('mcp_server.added'),
  )) as McpServerRow
  const tool = (name: string, readOnlyHint: boolean) => ({
    name,
    title: null,
    description: `${name} of the docs`,
    inputSchema: { type: 'object', properties: { page: { type: 'string' }, query: { type: 'string' } } },
    outputSchema: null,
    annotations: { readOnlyHint },
    problem: null,
  })
  await db.store.mcpServers.replaceTools(
    server.id,
    [tool('search_docs', true), tool('delete_page', false)],
    true,
    Date.now(),
  )
}

/** The model's call of the upstream's tool that changes something (it asks first unless the server is trusted). */
export const deletePage = { id: 'call_d1', name: 'docs__delete_page', arguments: '{"page":"7"}' }

/**
 * Sends a message to the server at `url` (a new thread without `threadId`); `stream(at)` reads its answer's stream to
 * the end from the server at `at` (by default the same one), which another instance or a restarted server may serve.
 */
export async function send(url: string, token: string, text: string, threadId?: string) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const path = threadId ? `/api/v1/threads/${threadId}/messages` : '/api/v1/threads'
  const sent = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify({ text }) })
  expect(sent.status).toBe(201)
  const body = (await sent.json()) as { thread_id?: string; message_id: string }
  const thread = threadId ?? (body.thread_id as string)
  const streamPath = `/api/v1/threads/${thread}/messages/${body.message_id}/response/stream`
  return {
    threadId: thread,
    messageId: body.message_id,
    stream: async (at = url) => collect(parseEvents(await fetch(`${at}${streamPath}`, { headers }))),
  }
}
