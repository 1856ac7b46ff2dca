// A thread's tools through PATCH and GET /api/v1/threads/{id}/settings (issue 38): a list of `server/tool` the
// organization has on, [] for none, null for every tool it has on. A name it does not have on (unknown, turned off,
// on a server turned off, or another organization's) is 400 naming it, and nothing is stored.
import { expect, test } from 'bun:test'
import type { DiscoveredTool } from '../src/connectors/repository'
import { testEvent } from './support/audit'
import { type Harness, harness, type TestUser } from './support/helpers'

function tool(name: string, readOnly: boolean, problem: string | null = null): DiscoveredTool {
  return {
    name,
    title: null,
    description: `The ${name} tool.`,
    inputSchema: { type: 'object', properties: {} },
    outputSchema: null,
    annotations: readOnly ? { readOnlyHint: true } : null,
    problem,
  }
}

/** An MCP server of the user's organization with these tools, all turned on, as its first fetch leaves them. */
async function server(h: Harness, user: TestUser, name: string, tools: DiscoveredTool[]) {
  const organizationId = (await h.store.users.findByEmail(user.email))?.organizationId as number
  const now = h.clock.now()
  const added = await h.store.mcpServers.add(
    {
      id: Bun.randomUUIDv7(),
      organizationId,
      name,
      url: `https://${name}.example.com/mcp`,
      auth: 'none',
      headersSealed: null,
      headerNames: [],
      trusted: false,
      createdBy: user.id,
      now,
    },
    () => testEvent('mcp_server.added'),
  )
  if (!added) throw new Error(`${name} not added`)
  await h.store.mcpServers.replaceTools(added.id, tools, true, now)
  return { ...added, organizationId }
}

test('PATCH tools: a list of tools the organization has on, [], null; GET answers them; other names are 400', async () => {
  await using h = await harness()
  const owner = await h.user({ org: 'acme' })
  const outsider = await h.user({ org: 'globex' })
  await server(h, owner, 'docs', [
    tool('search_docs', true),
    tool('delete_page', false),
    tool('render', true, 'The input schema is not a JSON object schema.'),
  ])
  const jira = await server(h, owner, 'jira', [tool('create_issue', false), tool('old.tool', true)])
  await h.store.mcpServers.setToolEnabled(jira.organizationId, jira.id, 'old.tool', false)
  // Another organization's server, whose tools no thread of acme may name, even under a name acme also uses.
  await server(h, outsider, 'crm', [tool('find_customer', true)])
  await server(h, outsider, 'docs', [tool('purge', false)])
  const { thread_id: threadId } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const path = `/api/v1/threads/${threadId}/settings`
  const patch = (body: unknown, token = owner.token) => h.call('PATCH', path, { token, body })
  const settings = async () => (await h.call('GET', path, { token: owner.token })).body

  // A new thread is offered every tool the organization has on.
  expect(await settings()).toEqual({ model: null, instructions: null, tools: null })
  const chosen = ['jira/create_issue', 'docs/search_docs']
  expect(await patch({ tools: chosen })).toMatchObject({
    status: 200,
    body: { model: null, instructions: null, tools: chosen },
  })
  expect(await settings()).toEqual({ model: null, instructions: null, tools: chosen })
  // Another field leaves the list as it is.
  expect((await patch({ instructions: 'Be brief.' })).body).toEqual({
    model: null,
    instructions: 'Be brief.',
    tools: chosen,
  })
  expect((await patch({ tools: [] })).body.tools).toEqual([])
  expect(await settings()).toEqual({ model: null, instructions: 'Be brief.', tools: [] })
  expect((await patch({ tools: null })).body.tools).toBeNull()
  expect(await settings()).toEqual({ model: null, instructions: 'Be brief.', tools: null })

  // What is not a tool the organization has on is refused, the whole change with it.
  await patch({ tools: ['docs/search_docs'] })
  const refused = async (body: unknown) => {
    const reply = await patch(body)
    return { status: reply.status, body: reply.body }
  }
  const notOn = (names: string) => ({
    status: 400,
    body: { error: 'invalid_request', message: `${names} not on in your organization` },
  })
  expect(await refused({ tools: ['docs/no_such_tool'] })).toEqual(notOn('The tool "docs/no_such_tool" is'))
  expect(await refused({ tools: ['crm/find_customer'] })).toEqual(notOn('The tool "crm/find_customer" is'))
  expect(await refused({ tools: ['docs/purge'] })).toEqual(notOn('The tool "docs/purge" is'))
  // Turned off by an admin, or never offered for its problem.
  expect(await refused({ tools: ['jira/old.tool'] })).toEqual(notOn('The tool "jira/old.tool" is'))
  expect(await refused({ tools: ['docs/render'] })).toEqual(notOn('The tool "docs/render" is'))
  expect(await refused({ model: null, tools: ['docs/search_docs', 'crm/find_customer', 'docs/purge'] })).toEqual(
    notOn('The tools "crm/find_customer", "docs/purge" are'),
  )
  // A server turned off takes its tools with it.
  await h.store.mcpServers.update(jira.organizationId, jira.id, { enabled: false, updatedAt: h.clock.now() })
  expect(await refused({ tools: ['jira/create_issue'] })).toEqual(notOn('The tool "jira/create_issue" is'))
  expect(await settings()).toEqual({ model: null, instructions: 'Be brief.', tools: ['docs/search_docs'] })

  // The list's own shape: `server/tool` names, each once, at most 200.
  for (const tools of [
    ['search_docs'],
    ['Docs/search_docs'],
    ['docs/search docs'],
    ['docs/search_docs', 'docs/search_docs'],
    Array.from({ length: 201 }, (_, index) => `docs/tool_${index}`),
    'docs/search_docs',
  ]) {
    const reply = await patch({ tools })
    expect({ status: reply.status, error: reply.body.error }).toEqual({ status: 400, error: 'invalid_request' })
    expect(reply.body.message).toContain('"tools')
  }
  expect(await settings()).toEqual({ model: null, instructions: 'Be brief.', tools: ['docs/search_docs'] })
  // Docs' two tools of acme's are still good; the outsider cannot see the thread at all.
  expect((await patch({ tools: ['docs/search_docs', 'docs/delete_page'] })).status).toBe(200)
  expect((await patch({ tools: [] }, outsider.token)).status).toBe(404)
})
