// Tools on the thread page in headless Chromium (issue 38): an answer's call opens to its arguments and result, and
// stays open while the conversation goes on (the script swaps the conversation in when an answer ends); the
// composer's Tools menu saves the thread's tools at each change with the script, and with its Save button without
// it. Light and dark, desktop and phone, with nothing refused by the page's Content-Security-Policy.
// UPDATE_SCREENSHOTS=1 also writes docs/screenshots/thread-tools-{desktop,phone}-{light,dark}.png (the menu open) and
// thread-tool-calls-light.png (an answer's calls, one open).
import { expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { DiscoveredTool } from '../src/connectors/repository'
import { testEvent } from './support/audit'
import { sharedBrowser } from './support/browser'
import { type Harness, harness, listening, ScriptedRunner, type TestUser, until } from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { answerWithTools } from './support/tool-calls'

const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')

function tool(name: string, description: string, readOnly: boolean): DiscoveredTool {
  return {
    name,
    title: null,
    description,
    inputSchema: { type: 'object' },
    outputSchema: null,
    annotations: readOnly ? { readOnlyHint: true } : null,
    problem: null,
  }
}

async function servers(h: Harness, user: TestUser): Promise<void> {
  const organizationId = (await h.store.users.findByEmail(user.email))?.organizationId as number
  const add = async (name: string, tools: DiscoveredTool[], trusted: boolean) => {
    const server = await h.store.mcpServers.add(
      {
        id: Bun.randomUUIDv7(),
        organizationId,
        name,
        url: `https://${name}.example.com/mcp`,
        auth: 'none',
        headersSealed: null,
        headerNames: [],
        trusted,
        createdBy: user.id,
        now: h.clock.now(),
      },
      () => testEvent('mcp_server.added'),
    )
    if (!server) throw new Error(`${name} not added`)
    await h.store.mcpServers.replaceTools(server.id, tools, true, h.clock.now())
  }
  await add(
    'docs',
    [
      tool('search_docs', 'Searches the documentation and returns the best passages.', true),
      tool('delete_page', 'Deletes a page of the documentation.', false),
    ],
    false,
  )
  await add('github', [tool('create_issue', 'Opens an issue in a repository.', false)], true)
}

const result = [
  '## Leases',
  '',
  'A lease is held for 30 seconds and renewed every 10 by the instance that claimed the answer.',
  '<b>Not bold</b>: the result is text, never markup.',
].join('\n')

test('a call opens to its arguments and result and stays open; the Tools menu saves with and without the script', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  await using server = listening(h)
  const origin = server.url.origin
  const { browser, user } = await signedIn(h)
  await servers(h, user)
  const created = await h.call('POST', '/api/v1/threads', {
    token: user.token,
    body: { name: 'Lease renewal', text: 'How long is a lease held, and how is it renewed?' },
  })
  const threadId = created.body.thread_id as string
  const [call] = await answerWithTools(
    h,
    runner,
    { threadId, messageId: created.body.message_id },
    [
      {
        text: 'Let me check the documentation. ',
        calls: [
          { arguments: '{"q":"lease renewal","limit":3}', result },
          {
            toolName: 'fetch_page',
            arguments: '{"path":"/operations/leases"}',
            status: 'timeout',
            result: 'The tool did not answer within 30 seconds.',
            resultChars: 42,
            error: 'timed out',
            durationMs: 30_000,
          },
        ],
      },
    ],
    'A lease is held for **30 seconds** and renewed every 10 by the instance that claimed the answer.',
  )
  const settings = async () =>
    (await h.call('GET', `/api/v1/threads/${threadId}/settings`, { token: user.token })).body.tools

  await using session = await sharedBrowser().open(origin)
  const { context, page } = session
  await context.addCookies([...browser.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await page.setViewportSize({ width: 1280, height: 900 })
  await page.goto(`/threads/${threadId}`)

  // The call's line opens to what the model sent and read, as text.
  const disclosure = page.locator(`#tool-call-${call?.id}`)
  await disclosure.getByText('Used search_docs on docs · 320 ms').click()
  const texts = disclosure.locator('pre.tool-call-text')
  await texts.first().waitFor()
  expect(await texts.allTextContents()).toEqual(['{\n  "q": "lease renewal",\n  "limit": 3\n}', result])
  expect(await disclosure.locator('b').count()).toBe(0)

  // The Tools menu: every tool the organization has on, until the thread chooses.
  const menu = page.locator('details.tools-menu')
  await menu.locator('summary').click()
  const all = page.getByRole('radio', { name: /All tools the organization has on/ })
  expect(await all.isChecked()).toBe(true)
  expect(await menu.locator('.tools-summary').textContent()).toBe('All')
  // Checking a tool chooses "Only these" and saves at once.
  await page.getByRole('checkbox', { name: /search_docs/ }).check()
  await page.locator('#thread-status', { hasText: 'may use 1 of 3 tools' }).waitFor()
  expect(await page.getByRole('radio', { name: 'Only these:' }).isChecked()).toBe(true)
  expect(await menu.locator('.tools-summary').textContent()).toBe('1 of 3')
  expect(await settings()).toEqual(['docs/search_docs'])
  await page.getByRole('checkbox', { name: /create_issue/ }).check()
  await page.locator('#thread-status', { hasText: 'may use 2 of 3 tools' }).waitFor()
  expect(await settings()).toEqual(['docs/search_docs', 'github/create_issue'])

  const shots = process.env.UPDATE_SCREENSHOTS === '1'
  for (const [device, width, height] of [
    ['desktop', 1280, 900],
    ['phone', 390, 844],
  ] as const) {
    await page.setViewportSize({ width, height })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      if (shots) {
        mkdirSync(screenshotDir, { recursive: true })
        await page.screenshot({ path: join(screenshotDir, `thread-tools-${device}-${scheme}.png`) })
      }
      // The open menu fits on the screen, its options reachable.
      const panel = await menu.locator('.tools-choice-panel').boundingBox()
      expect(panel && { left: panel.x >= 0, right: panel.x + panel.width <= width, top: panel.y >= 0 }).toEqual({
        left: true,
        right: true,
        top: true,
      })
    }
  }
  await page.setViewportSize({ width: 1280, height: 900 })
  await page.emulateMedia({ colorScheme: 'light' })
  // None, by keyboard; Escape closes the menu and gives the focus back to its button.
  await page.getByRole('radio', { name: 'None' }).focus()
  await page.keyboard.press('Space')
  await page.locator('#thread-status', { hasText: 'may use no tools' }).waitFor()
  expect(await settings()).toEqual([])
  await page.keyboard.press('Escape')
  expect(await menu.evaluate((element) => (element as unknown as { open: boolean }).open)).toBe(false)

  // The conversation goes on: the new answer is swapped in, and the call opened above stays open.
  await page.getByLabel('Message', { exact: true }).fill('Thanks!')
  await page.getByLabel('Message', { exact: true }).press('Enter')
  const asked = await until(() => [...runner.jobs.keys()].find((id) => id !== created.body.message_id))
  const job = await runner.started(asked)
  job.token('You are welcome.')
  job.done()
  await page.locator('.message-assistant:not(.live)').nth(1).waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  expect(await page.locator(`#tool-call-${call?.id}[open]`).count()).toBe(1)
  if (shots) {
    await page
      .locator('.message-assistant')
      .first()
      .evaluate((element) => element.scrollIntoView())
    await page.screenshot({ path: join(screenshotDir, 'thread-tool-calls-light.png') })
  }
  expect(session.errors).toEqual([])

  // axe finds nothing wrong with the calls and the open menu, light or dark (the rest of the page is web-chat.test.ts's). It runs as a page script: this context
  // bypasses the page's CSP to inject it (the pages never load it).
  await using checked = await sharedBrowser().open(origin, { bypassCSP: true })
  await checked.context.addCookies([...browser.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await checked.page.goto(`/threads/${threadId}`)
  await checked.page.locator(`#tool-call-${call?.id} summary`).click()
  await checked.page.locator('details.tools-menu summary').click()
  await checked.page.addScriptTag({ content: await Bun.file(require.resolve('axe-core/axe.min.js')).text() })
  for (const scheme of ['light', 'dark'] as const) {
    await checked.page.emulateMedia({ colorScheme: scheme })
    const violations = await checked.page.evaluate(async () => {
      const { axe } = globalThis as unknown as {
        axe: {
          run(context: unknown): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }>
        }
      }
      const result = await axe.run({ include: [['.tool-calls'], ['.tools-menu']] })
      return result.violations.map((violation) => `${violation.id}: ${violation.nodes.map((n) => n.target).join(', ')}`)
    })
    expect({ scheme, violations }).toEqual({ scheme, violations: [] })
  }

  // Without the script the menu's Save button posts the thread's tools, and the page comes back with them.
  await using plain = await sharedBrowser().open(origin, { javaScriptEnabled: false })
  await plain.context.addCookies([...browser.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await plain.page.goto(`/threads/${threadId}`)
  await plain.page.locator('details.tools-menu summary').click()
  await plain.page.getByRole('radio', { name: /All tools the organization has on/ }).check()
  await plain.page.getByRole('button', { name: 'Save tools' }).click()
  await plain.page.waitForURL(`**/threads/${threadId}`)
  expect(await settings()).toBeNull()
  expect(await plain.page.locator('.tools-summary').textContent()).toBe('All')
  expect(plain.errors).toEqual([])
})
