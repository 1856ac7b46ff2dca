// A share link end to end in real headless Chromium against the real server process: the owner opens the thread's ⋯
// menu, confirms on the page that says anyone with the link can read the thread, copies the link, and a fresh
// context with no cookies at all opens it: the thread's Markdown, no navigation, nothing the page's CSP refused.
// UPDATE_SCREENSHOTS=1 also writes the shared page (light and dark) and the confirmation to docs/screenshots/.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl, until } from './support/helpers'

const email = 'grace@example.com'
const password = 'correct horse battery'
const screenshotDir = process.env.UPDATE_SCREENSHOTS === '1' ? join(import.meta.dir, '..', 'docs', 'screenshots') : null

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
let token: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-shares-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
  })
  token = await firstRunToken(server)
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

// biome-ignore lint/suspicious/noExplicitAny: the test reads the JSON it needs
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return response.json()
}

test('the owner shares a thread from its menu, and a browser with no cookies reads it', async () => {
  const started = await api('POST', '/api/v1/threads', {
    name: 'Packing for Lyon',
    text: 'What should I pack for **three days** in Lyon?\n\n- rain jacket\n- `walking shoes`',
  })
  const threadPath = `/threads/${started.thread_id}`
  await until(async () => (await api('GET', `/api/v1/threads/${started.thread_id}`)).state === 'ready')

  await using owner = await browser.open(server.url)
  const { page } = owner
  await page.goto('/login')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await page.goto(threadPath)
  await page.locator('.thread-tools summary').click()
  await page.getByRole('link', { name: 'Share a link…' }).click()
  await page.waitForURL((url) => url.pathname === `${threadPath}/share`)
  await page.getByText('Anyone with the link can read this thread').waitFor()
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.screenshot({ path: join(screenshotDir ?? dir, `share-confirm-${scheme}.png`) })
  }
  await page.getByRole('button', { name: 'Create link' }).click()
  const link = (await page.locator('#share-url').textContent()) ?? ''
  expect(link.startsWith(`${server.url}/s/ths_`)).toBe(true)
  expect(owner.errors).toEqual([])
  // The link is listed in Settings and, for the owner, in Administration.
  for (const [path, name] of [
    ['/settings/shares', 'settings-shares'],
    ['/admin/shares', 'admin-sharing'],
  ] as const) {
    await page.goto(path)
    await page.getByRole('rowheader', { name: 'Packing for Lyon' }).waitFor()
    await page.emulateMedia({ colorScheme: 'light' })
    await page.screenshot({ path: join(screenshotDir ?? dir, `${name}-light.png`) })
  }
  expect(owner.errors).toEqual([])

  // A fresh context: no cookie, no storage; the link alone.
  await using visitor = await browser.open(server.url)
  const shared = visitor.page
  const response = await shared.goto(link)
  expect(response?.status()).toBe(200)
  expect(await visitor.context.cookies()).toEqual([])
  await shared.getByRole('heading', { level: 1, name: 'Packing for Lyon' }).waitFor()
  expect(await shared.locator('.shared-from').textContent()).toBe('Shared from default')
  expect(await shared.locator('.message-user strong').first().textContent()).toBe('three days')
  expect(await shared.locator('.message-user code').first().textContent()).toBe('walking shoes')
  expect(await shared.locator('.message-assistant').count()).toBe(1)
  expect(await shared.locator('nav, .sidebar, form').count()).toBe(0)
  for (const scheme of ['light', 'dark'] as const) {
    await shared.emulateMedia({ colorScheme: scheme })
    await shared.screenshot({ path: join(screenshotDir ?? dir, `share-page-${scheme}.png`), fullPage: true })
  }
  expect(visitor.errors).toEqual([])
})
