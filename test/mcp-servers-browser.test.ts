// Administration → MCP servers in headless Chromium, light and dark: the list and a server's page with its tools lay
// out without script, nothing is refused by the pages' Content-Security-Policy, a header's value appears nowhere on
// screen, and a tool's Turn off button works from the page. UPDATE_SCREENSHOTS=1 also rewrites
// docs/screenshots/admin-mcp-servers-{light,dark}.png and admin-mcp-server-{light,dark}.png. The app answers in
// process: the browser's requests are fulfilled by app.handle.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { DiscoveredTool } from '../src/connectors/repository'
import { sealedFor } from '../src/connectors/repository'
import { secretBox } from '../src/shared/secret-box'
import { testEvent } from './support/audit'
import { sharedBrowser } from './support/browser'
import { harness } from './support/helpers'
import { signedIn } from './support/oauth-helpers'

const origin = 'http://threadhouse.test'
const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')
const apiKey = 'sk-live-browser-0a1b2c3d'

function tool(name: string, description: string, readOnly: boolean, problem: string | null = null): DiscoveredTool {
  return {
    name,
    title: null,
    description,
    inputSchema: { type: 'object' },
    outputSchema: null,
    annotations: readOnly ? { readOnlyHint: true } : null,
    problem,
  }
}

test('the MCP server pages lay out in light and dark, without script, and a tool turns off from the page', async () => {
  const key = randomBytes(32).toString('base64')
  await using h = await harness({ config: { SECRETS_KEY: key } })
  const admin = await signedIn(h, { role: 'admin', name: 'Ada Admin' })
  const organizationId = (await h.store.users.findByEmail(admin.user.email))?.organizationId ?? 0
  const now = h.clock.now()
  const box = secretBox({ current: key })
  const add = async (name: string, url: string, headers: Record<string, string>, trusted: boolean) => {
    const id = crypto.randomUUID()
    const names = Object.keys(headers)
    const server = await h.store.mcpServers.add(
      {
        id,
        organizationId,
        name,
        url,
        auth: names.length > 0 ? 'headers' : 'none',
        headersSealed: names.length > 0 ? box.seal(JSON.stringify(headers), sealedFor.headers(id)) : null,
        headerNames: names,
        trusted,
        createdBy: admin.user.id,
        now,
      },
      () => testEvent('mcp_server.added'),
    )
    if (!server) throw new Error('not added')
    return server
  }
  const docs = await add('docs', 'https://docs.example.com/mcp', { Authorization: `Bearer ${apiKey}` }, false)
  await h.store.mcpServers.replaceTools(
    docs.id,
    [
      tool('search_docs', 'Searches the documentation and returns the best passages.', true),
      tool('delete_page', 'Deletes a page of the documentation.', false),
      tool('render', 'Renders a page.', true, 'The input schema is not a JSON object schema.'),
    ],
    true,
    now,
  )
  await h.store.mcpServers.update(organizationId, docs.id, { status: 'ok', updatedAt: now })
  const issues = await add('github-issues', 'https://issues.example.com/mcp', {}, true)
  await h.store.mcpServers.update(organizationId, issues.id, {
    status: 'error',
    lastError: 'The server answered 401 Unauthorized.',
    updatedAt: now,
  })

  await using session = await sharedBrowser().open(origin, { javaScriptEnabled: false })
  const { context, page } = session
  await context.addCookies([...admin.browser.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await context.route(`${origin}/**`, async (route) => {
    const request = route.request()
    const body = request.postDataBuffer()
    const response = await h.app.handle(
      new Request(request.url(), {
        method: request.method(),
        headers: request.headers(),
        body: body && request.method() !== 'GET' ? body : undefined,
        redirect: 'manual',
      }),
    )
    await route.fulfill({
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: Buffer.from(await response.arrayBuffer()),
    })
  })

  for (const [path, shot] of [
    ['/admin/mcp-servers', 'admin-mcp-servers'],
    [`/admin/mcp-servers/${docs.id}`, 'admin-mcp-server'],
  ] as const) {
    await page.goto(path)
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      const text = (await page.locator('body').textContent()) ?? ''
      expect(text).not.toContain(apiKey)
      expect(text).toContain('Authorization: •••')
      const box = await page.locator('table').first().boundingBox()
      expect(box?.width).toBeGreaterThan(300)
      if (process.env.UPDATE_SCREENSHOTS === '1') {
        mkdirSync(screenshotDir, { recursive: true })
        await page.screenshot({ path: join(screenshotDir, `${shot}-${scheme}.png`), fullPage: true })
      }
    }
  }
  // The page's own form turns a tool off, with the session's CSRF token, and comes back with the notice.
  await page.getByRole('button', { name: 'Turn off delete_page' }).click()
  await page.waitForURL(`**/admin/mcp-servers/${docs.id}?notice=tool-off`)
  expect(await page.getByRole('button', { name: 'Turn on delete_page' }).count()).toBe(1)
  expect((await h.store.mcpServers.tools(docs.id)).find((t) => t.name === 'delete_page')?.enabled).toBe(false)
  expect(session.errors).toEqual([])
})
