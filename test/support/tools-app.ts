// An app in this process whose answers call the tools of a real MCP server: the real worker asks a fake provider
// (OpenAI and Anthropic alike), the engine hands each round of calls to the executor, and the real MCP client calls
// the SDK server of support/mcp-upstream.ts, which counts what it ran. For the end-to-end tests of tools through the
// API (test/tools.test.ts) and the thread page (test/web-tools-approval-browser.test.ts).
import { expect } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import type { Config } from '../../src/config'
import { createMcpConnections, type McpConnections } from '../../src/connectors/client'
import type { ToolCaller } from '../../src/connectors/ports'
import type { McpServerRow } from '../../src/connectors/repository'
import { createWorkerRunner } from '../../src/generation/runner'
import { silentLogger } from '../../src/shared/log'
import { secretBox } from '../../src/shared/secret-box'
import { testEvent } from './audit'
import {
  anthropicText,
  anthropicToolUse,
  FakeLlm,
  openaiText,
  openaiToolCalls,
  type Received,
  type Script,
  type ScriptedCall,
  settingsFor,
  sse,
} from './fake-llm'
import { type Harness, harness, type TestUser } from './helpers'
import { type McpUpstream, mcpUpstream } from './mcp-upstream'

export type Provider = 'openai' | 'anthropic'

/** What each vendor's fake streams, what it reports used per request, and how a request forbids tool calls. */
export const vendors = {
  openai: {
    calls:
      (tokens: string[], calls: ScriptedCall[]): Script =>
      () =>
        sse(openaiToolCalls(tokens, calls)),
    text:
      (tokens: string[]): Script =>
      () =>
        sse(openaiText(tokens)),
    usage: { input: 42, output: 7 },
    toolsOff: (request: Received) => request.body.tool_choice === 'none',
    toolNames: (request: Received): string[] =>
      (request.body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name),
  },
  anthropic: {
    calls:
      (tokens: string[], calls: ScriptedCall[]): Script =>
      () =>
        sse(anthropicToolUse(tokens, calls)),
    text:
      (tokens: string[]): Script =>
      () =>
        sse(anthropicText(tokens)),
    usage: { input: 25, output: 15 },
    toolsOff: (request: Received) => request.body.tool_choice?.type === 'none',
    toolNames: (request: Received): string[] => (request.body.tools ?? []).map((tool: { name: string }) => tool.name),
  },
}

export const search = (id: string, query: string): ScriptedCall => ({
  id,
  name: 'docs__search_docs',
  arguments: JSON.stringify({ query }),
})
export const deletePage = (id: string, page: string): ScriptedCall => ({
  id,
  name: 'docs__delete_page',
  arguments: JSON.stringify({ page }),
})

export interface ToolsApp extends AsyncDisposable {
  h: Harness
  user: TestUser
  token: string
  fake: FakeLlm
  up: McpUpstream
  server: McpServerRow
  /** The app's MCP client. */
  pool: McpConnections
  vendor: (typeof vendors)[Provider]
}

/** The model the fake provider answers as; `echo` beside it when a test asks for it. */
const modelId = 'test-model'

/**
 * An app whose answers are written by the real worker against a fake provider, with the real MCP client, and a user
 * whose organization connected the upstream as `docs` (its tools fetched, so turned on). With `echo`, the catalogue
 * also has the echo responder (ID `echo`), a model that is offered no tools, for a thread to switch to.
 */
export async function toolsApp(
  provider: Provider,
  config: Partial<Config> = {},
  { echo = false }: { echo?: boolean } = {},
): Promise<ToolsApp> {
  const fake = new FakeLlm()
  const up = mcpUpstream()
  // The client stores what it learns in the app's database, which exists once the app does.
  let pool: McpConnections | undefined
  const caller: ToolCaller = {
    call: (...args) => (pool as McpConnections).call(...args),
    refresh: (server) => (pool as McpConnections).refresh(server),
    forget: (serverId) => pool?.forget(serverId),
  }
  const settings = settingsFor(provider, fake)
  // The catalogue names the provider the worker runs, so its model is one that is offered tools.
  const models = echo
    ? {
        LLM_MODELS: JSON.stringify([
          {
            id: modelId,
            name: 'Test model',
            provider,
            model: modelId,
            base_url: settings.baseUrl,
            context_tokens: settings.contextTokens,
            max_output_tokens: settings.maxOutputTokens,
            default: true,
          },
          { id: 'echo', name: 'Echo', provider: 'echo' },
        ]),
      }
    : { LLM_PROVIDER: provider, LLM_MODEL: modelId }
  const h = await harness({
    toolCaller: caller,
    config: { ...models, ...config },
    runner: (blobs) =>
      createWorkerRunner(
        echo ? { models: { [modelId]: settings, echo: { provider: 'echo', echoTokenDelayMs: 0 } } } : settings,
        blobs,
        silentLogger,
      ),
  })
  pool = createMcpConnections({
    servers: h.store.mcpServers,
    box: secretBox({}),
    // Loopback is only reached with the private-network switch on.
    outbound: { allowPrivateNetworks: true, timeoutMs: 10_000, maxResponseBytes: 1_000_000 },
    resultMaxChars: 2000,
    log: silentLogger,
  })
  const user = await h.user({ org: 'acme' })
  const server = await connectUpstream(h, user.id, up)
  // The first fetch of a server's tools turns them all on.
  expect(await pool.refresh(server)).toEqual({ status: 'ok', tools: 2, error: null })
  return {
    h,
    user,
    token: user.token,
    fake,
    up,
    server,
    pool,
    vendor: vendors[provider],
    async [Symbol.asyncDispose]() {
      await h[Symbol.asyncDispose]()
      await pool?.close()
      await up[Symbol.asyncDispose]()
      await fake[Symbol.asyncDispose]()
    },
  }
}

/** The upstream connected as `docs` by the user's organization. */
async function connectUpstream(h: Harness, userId: number, up: McpUpstream): Promise<McpServerRow> {
  const [row] = await h.orm
    .select({ organizationId: h.tables.users.organizationId })
    .from(h.tables.users)
    .where(eq(h.tables.users.id, userId))
  const server = await h.store.mcpServers.add(
    {
      id: Bun.randomUUIDv7(),
      organizationId: (row as { organizationId: number }).organizationId,
      name: 'docs',
      url: up.url,
      auth: 'none',
      headersSealed: null,
      headerNames: [],
      trusted: false,
      createdBy: userId,
      now: Date.now(),
    },
    () => testEvent('mcp_server.added'),
  )
  if (!server) throw new Error('server not added')
  return server
}

/** The thread's tool calls as recorded, in the order they were asked for (their IDs are UUIDv7). */
export async function callsOf(h: Harness, threadId: string) {
  return h.orm
    .select()
    .from(h.tables.toolCalls)
    .where(eq(h.tables.toolCalls.threadId, threadId))
    .orderBy(asc(h.tables.toolCalls.id))
}

/** The request body as text, to find what the model was told. */
export const told = (request: Received | undefined) => JSON.stringify(request?.body)
