// Administration → MCP servers through the app's HTTP handler, on whichever backend THREADHOUSE_TEST_BACKEND names:
// adding a server with static headers (sealed in the database, never shown again), the roles and organizations that
// may see it, its tools turned on and off, trust, refresh and delete, and the refusals (no SECRETS_KEY, a private
// address, a Threadhouse token pasted as a header, a taken name). A fake ToolCaller stands for the MCP client.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import type { RefreshOutcome, ToolCaller } from '../src/connectors/ports'
import type { DiscoveredTool, McpServerRow } from '../src/connectors/repository'
import { sealedFor } from '../src/connectors/repository'
import { parseHeaderLines } from '../src/connectors/service'
import { secretBox } from '../src/shared/secret-box'
import { type Harness, harness } from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { expectEscaped, expectPageHeaders, hostile, submit } from './support/web-helpers'

const secretsKey = randomBytes(32).toString('base64')
const apiKey = 'sk-live-4f9a8b7c6d5e4f3a2b1c'
const teamValue = 'team-blue-31337'

function tool(name: string, readOnly: boolean, problem: string | null = null): DiscoveredTool {
  return {
    name,
    title: null,
    description: `The ${name} tool`,
    inputSchema: { type: 'object', properties: {} },
    outputSchema: null,
    annotations: readOnly ? { readOnlyHint: true } : { destructiveHint: true },
    problem,
  }
}

/** Lists two tools (one read-only) and a broken one; a server whose URL says `broken` cannot be reached. */
class FakeToolCaller implements ToolCaller {
  readonly refreshed: McpServerRow[] = []
  readonly forgotten: string[] = []
  h: Harness | null = null

  async call(): Promise<never> {
    throw new Error('not called by the administration')
  }

  async refresh(server: McpServerRow): Promise<RefreshOutcome> {
    this.refreshed.push(server)
    const store = (this.h as Harness).store.mcpServers
    const now = Date.now()
    if (server.url.includes('broken')) {
      const error = 'connection refused'
      await store.update(server.organizationId, server.id, { status: 'error', lastError: error, updatedAt: now })
      return { status: 'error', tools: 0, error }
    }
    const tools = [
      tool('search_docs', true),
      tool('delete_page', false),
      tool('weird', true, 'the schema is no object'),
    ]
    await store.replaceTools(server.id, tools, true, now)
    await store.update(server.organizationId, server.id, { status: 'ok', lastError: null, updatedAt: now })
    return { status: 'ok', tools: tools.length, error: null }
  }

  forget(serverId: string): void {
    this.forgotten.push(serverId)
  }
}

async function setUp(config: Record<string, unknown> = { SECRETS_KEY: secretsKey }, caller = new FakeToolCaller()) {
  const h = await harness({ config, toolCaller: caller })
  caller.h = h
  return { h, caller }
}

async function organizationOf(h: Harness, email: string): Promise<number> {
  const user = await h.store.users.findByEmail(email)
  if (!user) throw new Error('no such user')
  return user.organizationId
}

/** Adds a server through the page; its ID, from where the page redirects. */
async function added(response: Response): Promise<string> {
  expect(response.status).toBe(303)
  const location = response.headers.get('location') ?? ''
  const match = /^\/admin\/mcp-servers\/([^/?]+)\?notice=added$/.exec(location)
  if (!match?.[1]) throw new Error(`unexpected redirect ${location}`)
  return match[1]
}

test('an admin connects a server with headers: sealed in the database, names only on the pages', async () => {
  const { h, caller } = await setUp()
  await using _ = h
  const admin = await signedIn(h, { role: 'admin', org: 'acme' })
  const id = await added(
    await submit(admin.browser, '/admin/mcp-servers', {
      name: 'docs',
      url: 'https://mcp.example.com/mcp',
      headers: `Authorization: Bearer ${apiKey}\r\nX-Team: ${teamValue}\r\n`,
    }),
  )
  const organizationId = await organizationOf(h, admin.user.email)
  const row = await h.store.mcpServers.get(organizationId, id)
  if (!row) throw new Error('no server')
  expect(row).toMatchObject({
    name: 'docs',
    url: 'https://mcp.example.com/mcp',
    auth: 'headers',
    headerNames: ['Authorization', 'X-Team'],
    trusted: false,
    status: 'ok',
    createdBy: admin.user.id,
  })
  // The database holds the values sealed for this row's headers only, and nowhere in the clear.
  expect(row.headersSealed).toStartWith('v1.')
  const stored = JSON.stringify(await h.orm.select().from(h.tables.mcpServers))
  expect(stored).not.toContain(apiKey)
  expect(stored).not.toContain(teamValue)
  const box = secretBox({ current: secretsKey })
  expect(JSON.parse(box.open(row.headersSealed as string, sealedFor.headers(id)))).toEqual({
    Authorization: `Bearer ${apiKey}`,
    'X-Team': teamValue,
  })
  expect(() => box.open(row.headersSealed as string, sealedFor.headers('another'))).toThrow()
  // The tool list was fetched as it was added.
  expect(caller.refreshed.map((server) => server.id)).toEqual([id])

  const serverPage = await admin.browser.get(`/admin/mcp-servers/${id}?notice=added`)
  expect(serverPage.status).toBe(200)
  expectPageHeaders(serverPage)
  const html = await serverPage.text()
  expect(html).toContain('The server was added.')
  expect(html).toContain('<code>Authorization: •••</code>')
  expect(html).toContain('<code>X-Team: •••</code>')
  expect(html).toContain('<code>search_docs</code>')
  expect(html).toContain('Read-only')
  expect(html).toContain('May change things; asks first')
  expect(html).toContain('Never offered')
  expect(html).toContain('the schema is no object')
  const list = await (await admin.browser.get('/admin/mcp-servers')).text()
  expect(list).toContain('2 of 3 on')
  expect(list).toContain('Connected')
  for (const page of [html, list]) {
    expect(page).not.toContain(apiKey)
    expect(page).not.toContain(teamValue)
  }
  // The navigation of every administration page leads there.
  expect(await (await admin.browser.get('/admin/webhooks')).text()).toContain('href="/admin/mcp-servers"')
})

test('members get 403, and another organization’s admin 404, on every page and action', async () => {
  const { h, caller } = await setUp()
  await using _ = h
  const admin = await signedIn(h, { role: 'owner', org: 'acme' })
  const member = await signedIn(h, { org: 'acme' })
  const outsider = await signedIn(h, { role: 'admin', org: 'globex' })
  const id = await added(
    await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://mcp.example.com/mcp' }),
  )
  const base = `/admin/mcp-servers/${id}`
  const posts: [string, Record<string, string>][] = [
    [`${base}/refresh`, {}],
    [`${base}/trust`, { trusted: 'true' }],
    [`${base}/tools/delete_page`, { enabled: 'false' }],
    [`${base}/delete`, {}],
  ]
  for (const path of ['/admin/mcp-servers', base, `${base}/delete`]) {
    expect({ path, status: (await member.browser.get(path)).status }).toEqual({ path, status: 403 })
  }
  expect(
    (await submit(member.browser, '/admin/mcp-servers', { name: 'x', url: 'https://x.example.com/' })).status,
  ).toBe(403)
  for (const [path, fields] of posts) {
    expect({ path, status: (await submit(member.browser, path, fields)).status }).toEqual({ path, status: 403 })
  }
  for (const path of [base, `${base}/delete`]) {
    const response = await outsider.browser.get(path)
    expect({ path, status: response.status }).toEqual({ path, status: 404 })
    expect(await response.text()).toContain('MCP server not found')
  }
  for (const [path, fields] of posts) {
    expect({ path, status: (await submit(outsider.browser, path, fields)).status }).toEqual({ path, status: 404 })
  }
  // Nor do they see it listed; and nothing they tried changed it.
  expect(await (await outsider.browser.get('/admin/mcp-servers')).text()).not.toContain('mcp.example.com')
  const organizationId = await organizationOf(h, admin.user.email)
  expect(await h.store.mcpServers.get(organizationId, id)).toMatchObject({ trusted: false })
  expect((await h.store.mcpServers.tools(id)).map((row) => [row.name, row.enabled])).toEqual([
    ['delete_page', true],
    ['search_docs', true],
    ['weird', true],
  ])
  expect(caller.refreshed).toHaveLength(1)
  expect(caller.forgotten).toEqual([])
})

test('tools turn off and on, trust changes, refresh fetches again and reports a failure, delete removes it', async () => {
  const { h, caller } = await setUp()
  await using _ = h
  const admin = await signedIn(h, { role: 'admin', org: 'acme' })
  const organizationId = await organizationOf(h, admin.user.email)
  const id = await added(
    await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://mcp.example.com/mcp' }),
  )
  const base = `/admin/mcp-servers/${id}`
  const enabled = async () => Object.fromEntries((await h.store.mcpServers.tools(id)).map((t) => [t.name, t.enabled]))

  const off = await submit(admin.browser, `${base}/tools/delete_page`, { enabled: 'false' })
  expect({ status: off.status, location: off.headers.get('location') }).toEqual({
    status: 303,
    location: `${base}?notice=tool-off`,
  })
  expect(await enabled()).toEqual({ delete_page: false, search_docs: true, weird: true })
  const page = await (await admin.browser.get(`${base}?notice=tool-off`)).text()
  expect(page).toContain('The tool is off')
  expect(page).toContain('aria-label="Turn on delete_page"')
  expect((await submit(admin.browser, `${base}/tools/delete_page`, { enabled: 'true' })).status).toBe(303)
  expect(await enabled()).toEqual({ delete_page: true, search_docs: true, weird: true })
  // A tool the server does not list.
  const unknown = await submit(admin.browser, `${base}/tools/nope`, { enabled: 'true' })
  expect(unknown.status).toBe(404)
  expect(await unknown.text()).toContain('Tool not found')

  expect((await submit(admin.browser, `${base}/trust`, { trusted: 'true' })).headers.get('location')).toBe(
    `${base}?notice=trusted`,
  )
  expect(await h.store.mcpServers.get(organizationId, id)).toMatchObject({ trusted: true })
  expect(await (await admin.browser.get(base)).text()).toContain('May change things; runs without asking')
  expect((await submit(admin.browser, `${base}/trust`, { trusted: 'false' })).headers.get('location')).toBe(
    `${base}?notice=untrusted`,
  )
  expect(await h.store.mcpServers.get(organizationId, id)).toMatchObject({ trusted: false })

  expect((await submit(admin.browser, `${base}/refresh`)).headers.get('location')).toBe(`${base}?notice=refreshed`)
  expect(caller.refreshed.map((server) => server.id)).toEqual([id, id])

  // A server that cannot be reached is kept, with the reason shown.
  const brokenId = await added(
    await submit(admin.browser, '/admin/mcp-servers', { name: 'broken', url: 'https://broken.example.com/mcp' }),
  )
  expect((await submit(admin.browser, `/admin/mcp-servers/${brokenId}/refresh`)).headers.get('location')).toBe(
    `/admin/mcp-servers/${brokenId}?notice=refresh-failed`,
  )
  const brokenPage = await (await admin.browser.get(`/admin/mcp-servers/${brokenId}`)).text()
  expect(brokenPage).toContain('Cannot connect')
  expect(brokenPage).toContain('connection refused')

  expect((await admin.browser.get(`${base}/delete`)).status).toBe(200)
  const deleted = await submit(admin.browser, `${base}/delete`)
  expect({ status: deleted.status, location: deleted.headers.get('location') }).toEqual({
    status: 303,
    location: '/admin/mcp-servers?notice=deleted',
  })
  expect(await h.store.mcpServers.get(organizationId, id)).toBeNull()
  expect(await h.store.mcpServers.tools(id)).toEqual([])
  expect(caller.forgotten).toEqual([id])
  expect((await admin.browser.get(base)).status).toBe(404)
})

test('without SECRETS_KEY a server with headers is refused with the reason; one without headers is added', async () => {
  const { h } = await setUp({})
  await using _ = h
  const admin = await signedIn(h, { role: 'admin' })
  const refused = await submit(admin.browser, '/admin/mcp-servers', {
    name: 'docs',
    url: 'https://mcp.example.com/mcp',
    headers: `Authorization: Bearer ${apiKey}`,
  })
  expect(refused.status).toBe(400)
  const html = await refused.text()
  expect(html).toContain('SECRETS_KEY')
  // The form keeps the name and URL, never the header's value; nothing was stored.
  expect(html).toContain('value="docs"')
  expect(html).not.toContain(apiKey)
  expect(html).toContain('Type the headers again')
  const organizationId = await organizationOf(h, admin.user.email)
  expect(await h.store.mcpServers.list(organizationId)).toEqual([])
  const id = await added(
    await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://mcp.example.com/mcp' }),
  )
  expect(await h.store.mcpServers.get(organizationId, id)).toMatchObject({
    auth: 'none',
    headersSealed: null,
    headerNames: [],
  })
  expect(await (await admin.browser.get(`/admin/mcp-servers/${id}`)).text()).toContain('<dd>None</dd>')
})

test('a private address is refused unless WEBHOOKS_ALLOW_PRIVATE_NETWORKS is on', async () => {
  const url = 'http://127.0.0.1:9/mcp'
  {
    const { h } = await setUp()
    await using _ = h
    const admin = await signedIn(h, { role: 'admin' })
    const refused = await submit(admin.browser, '/admin/mcp-servers', { name: 'local', url })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('WEBHOOKS_ALLOW_PRIVATE_NETWORKS')
  }
  const { h } = await setUp({ SECRETS_KEY: secretsKey, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true })
  await using _ = h
  const admin = await signedIn(h, { role: 'admin' })
  await added(await submit(admin.browser, '/admin/mcp-servers', { name: 'local', url }))
})

test('names, header lines and Threadhouse tokens are checked; a name is its organization’s once', async () => {
  const { h } = await setUp()
  await using _ = h
  const admin = await signedIn(h, { role: 'admin', org: 'acme' })
  const other = await signedIn(h, { role: 'admin', org: 'globex' })
  const user = await h.user({ org: 'acme' })
  const refusals: [Record<string, string>, string][] = [
    [{ name: 'Docs', url: 'https://a.example.com/' }, 'lower-case letters'],
    [{ name: '-docs', url: 'https://a.example.com/' }, 'lower-case letters'],
    [{ name: 'docs', url: 'ftp://a.example.com/' }, 'https:// or http://'],
    [{ name: 'docs', url: 'https://a.example.com/', headers: 'no colon here' }, 'Name: value'],
    [{ name: 'docs', url: 'https://a.example.com/', headers: 'Bad Name: x' }, 'not a valid header name'],
    [{ name: 'docs', url: 'https://a.example.com/', headers: 'Host: evil.example' }, 'set by Threadhouse'],
    [{ name: 'docs', url: 'https://a.example.com/', headers: 'X-A: 1\nx-a: 2' }, 'given twice'],
    [
      { name: 'docs', url: 'https://a.example.com/', headers: `Authorization: Bearer ${user.token}` },
      'Threadhouse token',
    ],
    [{ name: 'docs', url: 'https://a.example.com/', headers: 'Cookie: a=1; th_session=thss_abc' }, 'Threadhouse token'],
  ]
  for (const [fields, message] of refusals) {
    const response = await submit(admin.browser, '/admin/mcp-servers', fields)
    const html = await response.text()
    expect({ fields, status: response.status, says: html.includes(message) }).toEqual({
      fields,
      status: 400,
      says: true,
    })
    // A header's value is never written back, not even into the refused form.
    expect(html).not.toContain(user.token)
    expect(html).not.toContain('thss_abc')
    if (fields.headers) expect(html).toContain('Type the headers again')
  }
  await added(await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://a.example.com/' }))
  const taken = await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://b.example.com/' })
  expect(taken.status).toBe(409)
  expect(await taken.text()).toContain('already has a server named docs')
  // Another organization may use the same name.
  await added(await submit(other.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://c.example.com/' }))
  // What a server lists is shown escaped.
  const organizationId = await organizationOf(h, admin.user.email)
  const [server] = await h.store.mcpServers.list(organizationId)
  const listed = { ...tool('x', true), description: hostile, annotations: { readOnlyHint: true, title: hostile } }
  await h.store.mcpServers.replaceTools(server?.id ?? '', [listed], true, 1)
  const page = await (await admin.browser.get(`/admin/mcp-servers/${server?.id}`)).text()
  expectEscaped(page)
  // Its schema and annotations are there to read, folded, with the schema's size.
  expect(page).toContain('<summary>Schema and annotations · 33 characters</summary>')
})

test('without a ToolCaller servers are added pending, and Refresh says the tool lists cannot be fetched', async () => {
  await using h = await harness({ config: { SECRETS_KEY: secretsKey } })
  const admin = await signedIn(h, { role: 'admin' })
  const id = await added(
    await submit(admin.browser, '/admin/mcp-servers', { name: 'docs', url: 'https://mcp.example.com/mcp' }),
  )
  expect(await (await admin.browser.get(`/admin/mcp-servers/${id}`)).text()).toContain('Tools not fetched yet')
  const refresh = await submit(admin.browser, `/admin/mcp-servers/${id}/refresh`)
  expect(refresh.status).toBe(409)
  expect(await refresh.text()).toContain('cannot fetch tool lists')
})

test('header lines: names kept as given, values trimmed, blank lines skipped', () => {
  expect(parseHeaderLines(['Authorization:  Bearer abc ', '', 'X-Api-Key:k:with:colons'])).toEqual({
    Authorization: 'Bearer abc',
    'X-Api-Key': 'k:with:colons',
  })
  expect(() => parseHeaderLines(Array.from({ length: 11 }, (_, i) => `X-H${i}: v`))).toThrow('at most 10 headers')
  expect(() => parseHeaderLines(['X-Empty:'])).toThrow('has no value')
  expect(() => parseHeaderLines(['Authorization: tho_abc'])).toThrow('Threadhouse token')
})
