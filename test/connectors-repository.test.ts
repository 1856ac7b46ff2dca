// The MCP servers' storage contract (connectors/repository.ts), on the run's backend: names unique per organization,
// one organization never reaching another's servers, the tool list's refresh keeping what admins chose, and the
// OAuth state's races (a callback used twice, tokens refreshed by two instances) each won exactly once.
import { expect, test } from 'bun:test'
import { count, eq } from 'drizzle-orm'
import type { DiscoveredTool, NewMcpServer } from '../src/connectors/repository'
import { testEvent } from './support/audit'
import { harness } from './support/helpers'

async function setup() {
  const h = await harness()
  const organizationOf = async (org: string) => {
    const user = await h.user({ org, role: 'owner' })
    const [row] = await h.orm
      .select({ organizationId: h.tables.users.organizationId })
      .from(h.tables.users)
      .where(eq(h.tables.users.id, user.id))
    return { userId: user.id, organizationId: (row as { organizationId: number }).organizationId }
  }
  const a = await organizationOf('acme')
  const b = await organizationOf('globex')
  const server = (of: { userId: number; organizationId: number }, name: string, now = 1): NewMcpServer => ({
    id: Bun.randomUUIDv7(),
    organizationId: of.organizationId,
    name,
    url: `https://${name}.example.com/mcp`,
    auth: 'none',
    headersSealed: null,
    headerNames: [],
    trusted: false,
    createdBy: of.userId,
    now,
  })
  return { h, a, b, servers: h.store.mcpServers, server, [Symbol.asyncDispose]: () => h[Symbol.asyncDispose]() }
}

const tool = (name: string, more: Partial<DiscoveredTool> = {}): DiscoveredTool => ({
  name,
  title: null,
  description: `${name} does its thing`,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  outputSchema: null,
  annotations: null,
  problem: null,
  ...more,
})

test('a name is the organization’s once; another organization may use it; the row reads back as written', async () => {
  await using s = await setup()
  const docs = s.server(s.a, 'docs', 10)
  const added = await s.servers.add(
    {
      ...docs,
      auth: 'headers',
      headersSealed: 'v1.abcd1234.iv.body',
      headerNames: ['Authorization', 'X-Team'],
    },
    () => testEvent('mcp_server.added'),
  )
  expect(added).toEqual({
    id: docs.id,
    organizationId: s.a.organizationId,
    name: 'docs',
    url: 'https://docs.example.com/mcp',
    auth: 'headers',
    headersSealed: 'v1.abcd1234.iv.body',
    headerNames: ['Authorization', 'X-Team'],
    trusted: false,
    enabled: true,
    status: 'pending',
    lastError: null,
    toolsRefreshedAt: null,
    createdBy: s.a.userId,
    createdAt: 10,
    updatedAt: 10,
  })
  expect(await s.servers.add(s.server(s.a, 'docs'), () => testEvent('mcp_server.added'))).toBeNull()
  expect(await s.servers.add(s.server(s.b, 'docs'), () => testEvent('mcp_server.added'))).not.toBeNull()
  expect(await s.servers.get(s.a.organizationId, docs.id)).toEqual(added)
  expect(await s.servers.byName(s.a.organizationId, 'docs')).toEqual(added)

  expect(
    await s.servers.update(s.a.organizationId, docs.id, {
      url: 'https://docs.example.com/v2/mcp',
      status: 'error',
      lastError: 'connection refused',
      headerNames: ['Authorization'],
      updatedAt: 20,
    }),
  ).toBe(true)
  expect(await s.servers.get(s.a.organizationId, docs.id)).toEqual({
    ...(added as NonNullable<typeof added>),
    url: 'https://docs.example.com/v2/mcp',
    status: 'error',
    lastError: 'connection refused',
    headerNames: ['Authorization'],
    updatedAt: 20,
  })
})

test('one organization never reaches another’s servers or tools', async () => {
  await using s = await setup()
  const mine = s.server(s.a, 'docs')
  const theirs = s.server(s.b, 'wiki')
  await s.servers.add(mine, () => testEvent('mcp_server.added'))
  await s.servers.add(theirs, () => testEvent('mcp_server.added'))
  await s.servers.replaceTools(mine.id, [tool('search')], true, 2)
  await s.servers.replaceTools(theirs.id, [tool('lookup')], true, 2)

  expect((await s.servers.list(s.a.organizationId)).map((row) => row.name)).toEqual(['docs'])
  expect((await s.servers.list(s.b.organizationId)).map((row) => row.name)).toEqual(['wiki'])
  expect(await s.servers.get(s.a.organizationId, theirs.id)).toBeNull()
  expect(await s.servers.byName(s.a.organizationId, 'wiki')).toBeNull()
  const offered = async (organizationId: number) =>
    (await s.servers.offerable(organizationId)).map(({ server, tool }) => `${server.name}/${tool.name}`)
  expect(await offered(s.a.organizationId)).toEqual(['docs/search'])
  expect(await offered(s.b.organizationId)).toEqual(['wiki/lookup'])
  // Writes through the wrong organization change nothing.
  expect(await s.servers.update(s.a.organizationId, theirs.id, { trusted: true, updatedAt: 3 })).toBe(false)
  expect(await s.servers.setToolEnabled(s.a.organizationId, theirs.id, 'lookup', false)).toBe(false)
  expect(await s.servers.remove(s.a.organizationId, theirs.id, () => testEvent('mcp_server.removed'))).toBe(false)
  expect(await s.servers.get(s.b.organizationId, theirs.id)).toMatchObject({ trusted: false })
  expect(await offered(s.b.organizationId)).toEqual(['wiki/lookup'])
})

test('a refresh keeps which tools are on, adds new ones as told, drops the gone ones, and stamps the server', async () => {
  await using s = await setup()
  const docs = s.server(s.a, 'docs')
  await s.servers.add(docs, () => testEvent('mcp_server.added'))
  // The first fetch turns every tool on.
  await s.servers.replaceTools(
    docs.id,
    [
      tool('search', { annotations: { readOnlyHint: true, title: 'Search' } }),
      tool('delete_page', { annotations: { destructiveHint: true } }),
      tool('old'),
    ],
    true,
    100,
  )
  expect(await s.servers.setToolEnabled(s.a.organizationId, docs.id, 'delete_page', false)).toBe(true)
  expect(await s.servers.setToolEnabled(s.a.organizationId, docs.id, 'missing', false)).toBe(false)

  // A later list (a `list_changed`): `search` changed its description, `old` is gone, two are new and start off,
  // one of them with a problem; a name listed twice counts once.
  await s.servers.replaceTools(
    docs.id,
    [
      tool('search', { description: 'Search, better', annotations: { readOnlyHint: true } }),
      tool('delete_page', { annotations: { destructiveHint: true } }),
      tool('create_page', { title: 'Create', outputSchema: { type: 'object' } }),
      tool('broken', { inputSchema: { type: 'string' }, problem: 'its input schema is not an object' }),
      tool('create_page', { description: 'listed twice' }),
    ],
    false,
    200,
  )
  expect(await s.servers.tools(docs.id)).toEqual([
    {
      serverId: docs.id,
      name: 'broken',
      title: null,
      description: 'broken does its thing',
      inputSchema: { type: 'string' },
      outputSchema: null,
      annotations: null,
      readOnly: false,
      enabled: false,
      problem: 'its input schema is not an object',
      firstSeenAt: 200,
      updatedAt: 200,
    },
    expect.objectContaining({
      name: 'create_page',
      title: 'Create',
      description: 'create_page does its thing',
      outputSchema: { type: 'object' },
      enabled: false,
      firstSeenAt: 200,
    }),
    expect.objectContaining({ name: 'delete_page', readOnly: false, enabled: false, firstSeenAt: 100, updatedAt: 200 }),
    expect.objectContaining({
      name: 'search',
      description: 'Search, better',
      annotations: { readOnlyHint: true },
      readOnly: true,
      enabled: true,
      firstSeenAt: 100,
      updatedAt: 200,
    }),
  ])
  expect(await s.servers.get(s.a.organizationId, docs.id)).toMatchObject({ toolsRefreshedAt: 200 })

  // Offered: tools on, without a problem, on servers that are on.
  const offered = async () =>
    (await s.servers.offerable(s.a.organizationId)).map(({ server, tool }) => ({
      tool: `${server.name}/${tool.name}`,
      readOnly: tool.readOnly,
      schema: tool.inputSchema,
    }))
  expect(await offered()).toEqual([
    { tool: 'docs/search', readOnly: true, schema: { type: 'object', properties: { q: { type: 'string' } } } },
  ])
  await s.servers.setToolEnabled(s.a.organizationId, docs.id, 'create_page', true)
  await s.servers.setToolEnabled(s.a.organizationId, docs.id, 'broken', true)
  expect((await offered()).map((row) => row.tool)).toEqual(['docs/create_page', 'docs/search'])
  await s.servers.update(s.a.organizationId, docs.id, { enabled: false, updatedAt: 300 })
  expect(await offered()).toEqual([])

  // A server that lists nothing any more has no tools.
  await s.servers.replaceTools(docs.id, [], true, 400)
  expect(await s.servers.tools(docs.id)).toEqual([])
})

test('an authorization’s callback is taken once, however many arrive at once; expired ones are swept', async () => {
  await using s = await setup()
  const docs = s.server(s.a, 'docs')
  await s.servers.add({ ...docs, auth: 'oauth' }, () => testEvent('mcp_server.added'))
  const flow = {
    stateHash: 'hash-1',
    serverId: docs.id,
    userId: s.a.userId,
    codeVerifierSealed: 'v1.sealed',
    // What the flow found comes back as it went in (JSON), with its sealed registration.
    discoveryState: { authorizationServerUrl: 'https://as.example.com' },
    clientInformationSealed: 'v1.client',
    createdAt: 1_000,
    expiresAt: 601_000,
  }
  await s.servers.startFlow(flow)
  const taken = await Promise.all([1, 2, 3, 4].map(() => s.servers.takeFlow('hash-1', 2_000)))
  expect(taken.filter((one) => one !== null)).toEqual([flow])

  // An expired one is not given out, and it is gone all the same.
  await s.servers.startFlow({ ...flow, stateHash: 'hash-2' })
  expect(await s.servers.takeFlow('hash-2', 601_000)).toBeNull()
  expect(await s.servers.takeFlow('hash-2', 2_000)).toBeNull()

  await s.servers.startFlow({ ...flow, stateHash: 'old', expiresAt: 5_000 })
  await s.servers.startFlow({ ...flow, stateHash: 'fresh', expiresAt: 9_000 })
  expect(await s.servers.sweepFlows(5_000)).toBe(1)
  expect(await s.servers.sweepFlows(5_000)).toBe(0)
  expect(await s.servers.takeFlow('fresh', 6_000)).toMatchObject({ stateHash: 'fresh' })
})

test('tokens are swapped only from what the writer last read: of racing refreshes one wins', async () => {
  await using s = await setup()
  const docs = s.server(s.a, 'docs')
  await s.servers.add({ ...docs, auth: 'oauth' }, () => testEvent('mcp_server.added'))
  expect(await s.servers.oauth(docs.id)).toBeNull()

  // The first tokens: none stored yet, not even the row.
  expect(await s.servers.swapTokens(docs.id, null, 'tokens-1')).toBe(true)
  expect(await s.servers.swapTokens(docs.id, null, 'tokens-x')).toBe(false)
  expect(await s.servers.swapTokens(docs.id, 'tokens-0', 'tokens-x')).toBe(false)
  const swaps = await Promise.all(['a', 'b', 'c'].map((n) => s.servers.swapTokens(docs.id, 'tokens-1', `tokens-2${n}`)))
  expect(swaps.filter(Boolean)).toHaveLength(1)
  const stored = (await s.servers.oauth(docs.id))?.tokensSealed
  expect(['tokens-2a', 'tokens-2b', 'tokens-2c'][swaps.indexOf(true)]).toBe(stored as string)

  // The rest of the OAuth state: written field by field, each kept until written again.
  const discovery = { resource: 'https://docs.example.com/mcp', authorizationServer: { issuer: 'https://id.test' } }
  await s.servers.saveOAuth(docs.id, { clientInformationSealed: 'client-1', discoveryState: discovery })
  await s.servers.saveOAuth(docs.id, { authorizedBy: s.a.userId, authorizedAt: 50 })
  expect(await s.servers.oauth(docs.id)).toEqual({
    serverId: docs.id,
    clientInformationSealed: 'client-1',
    tokensSealed: stored as string,
    discoveryState: discovery,
    authorizedBy: s.a.userId,
    authorizedAt: 50,
  })
  expect(await s.servers.swapTokens(docs.id, stored as string, null)).toBe(true)
  expect(await s.servers.oauth(docs.id)).toMatchObject({ tokensSealed: null, clientInformationSealed: 'client-1' })
})

test('removing a server removes its tools, its OAuth state and the authorizations under way', async () => {
  await using s = await setup()
  const docs = s.server(s.a, 'docs')
  const kept = s.server(s.a, 'kept')
  for (const server of [docs, kept]) {
    await s.servers.add({ ...server, auth: 'oauth' }, () => testEvent('mcp_server.added'))
    await s.servers.replaceTools(server.id, [tool('search'), tool('fetch')], true, 2)
    await s.servers.swapTokens(server.id, null, `tokens-${server.name}`)
    await s.servers.startFlow({
      stateHash: `state-${server.name}`,
      serverId: server.id,
      userId: s.a.userId,
      codeVerifierSealed: 'v1.x',
      discoveryState: null,
      clientInformationSealed: null,
      createdAt: 1,
      expiresAt: 10_000,
    })
  }
  expect(await s.servers.remove(s.a.organizationId, docs.id, () => testEvent('mcp_server.removed'))).toBe(true)
  expect(await s.servers.remove(s.a.organizationId, docs.id, () => testEvent('mcp_server.removed'))).toBe(false)
  const { mcpServerTools, mcpServerOauth, mcpOauthFlows } = s.h.tables
  const left = async (table: typeof mcpServerTools | typeof mcpServerOauth | typeof mcpOauthFlows) =>
    (
      await s.h.orm
        .select({ serverId: table.serverId, n: count() })
        .from(table)
        .groupBy(table.serverId)
        .orderBy(table.serverId)
    ).map((row) => [row.serverId, row.n])
  expect(await left(mcpServerTools)).toEqual([[kept.id, 2]])
  expect(await left(mcpServerOauth)).toEqual([[kept.id, 1]])
  expect(await left(mcpOauthFlows)).toEqual([[kept.id, 1]])
  expect(await s.servers.tools(docs.id)).toEqual([])
  expect(await s.servers.oauth(docs.id)).toBeNull()
  expect(await s.servers.takeFlow('state-docs', 2)).toBeNull()
})
