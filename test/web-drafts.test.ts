// Drafts in real headless Chromium against the real server process: what is typed in a composer survives a reload
// and a session that ends while typing (signed out in another tab), and the person who signs in again lands back in
// the thread with it, signing in once. Waits on conditions only.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'

const email = 'ada@example.com'
const password = 'correct horse battery'

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-drafts-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    ECHO_TOKEN_DELAY_MS: '1',
  })
  // Listening comes before the first run has created the owner: signing in any sooner may find no account.
  await firstRunToken(server)
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

async function signIn(page: Page): Promise<void> {
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/** Starts a thread by sending its first message, and waits for the answer: the thread's path. */
async function startThread(page: Page, text: string): Promise<string> {
  await page.locator('#composer-text').fill(text)
  await page.keyboard.press('Enter')
  await page.waitForURL(/\/threads\/[0-9a-f-]{36}$/)
  await page.locator('.message-assistant:not(.live)').first().waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  return new URL(page.url()).pathname
}

test.concurrent('a session that ends while typing: the draft waits through signing in once, back in its thread', async () => {
  await using session = await browser.open(server.url)
  const { page, context } = session
  const statuses: string[] = []
  page.on('response', (response) => {
    if (response.status() === 403 || response.status() === 401) statuses.push(`${response.status()} ${response.url()}`)
  })
  await page.goto('/login')
  await signIn(page)
  await page.waitForURL((url) => url.pathname === '/')
  const thread = await startThread(page, 'A thread to come back to')

  await page.locator('#composer-text').fill('Half a thought, then the session ended')
  const other = await context.newPage()
  await other.goto(thread)
  await other.getByRole('button', { name: 'Sign out' }).click()
  await other.waitForURL((url) => url.pathname === '/login')
  await other.close()

  await page.locator('#composer-text').focus()
  await page.keyboard.press('Enter')
  // The whole page is the sign-in page, which leads back to the thread.
  await page.waitForURL((url) => url.pathname === '/login' && url.searchParams.get('next') === thread)
  expect(await page.locator('#sidebar').count()).toBe(0)
  await signIn(page)
  await page.waitForURL((url) => url.pathname === thread)
  await page.locator('#composer-text').waitFor()
  expect(await page.locator('#composer-text').inputValue()).toBe('Half a thought, then the session ended')
  // Signed in at the first try: no form refused on the way.
  expect(statuses.filter((status) => status.startsWith('403'))).toEqual([])
  // Whichever of the page's requests first finds the session over (the send, or the live feed reconnecting on a
  // loaded machine) is answered 401, which the browser logs: that is the news the page acts on, not an error in it.
  const sessionOver = 'Failed to load resource: the server responded with a status of 401 (Unauthorized)'
  expect(session.errors.filter((error) => error !== sessionOver)).toEqual([])

  // Sent, the draft is gone: a reload shows an empty composer.
  await page.keyboard.press('Enter')
  await page.locator('.message-assistant:not(.live)').nth(1).waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  await page.reload()
  await page.locator('#composer-text').waitFor()
  expect(await page.locator('#composer-text').inputValue()).toBe('')
})

test.concurrent('a reload keeps each composer its own draft: a thread’s and the new thread’s', async () => {
  await using session = await browser.open(server.url)
  const { page } = session
  await page.goto('/login')
  await signIn(page)
  await page.waitForURL((url) => url.pathname === '/')
  const thread = await startThread(page, 'Another thread')

  await page.locator('#composer-text').fill('For this thread only')
  await page.goto('/')
  await page.locator('#composer-text').waitFor()
  expect(await page.locator('#composer-text').inputValue()).toBe('')
  await page.locator('#composer-text').fill('The start of a new thread')
  await page.reload()
  await page.locator('#composer-text').waitFor()
  expect(await page.locator('#composer-text').inputValue()).toBe('The start of a new thread')
  await page.goto(thread)
  await page.locator('#composer-text').waitFor()
  expect(await page.locator('#composer-text').inputValue()).toBe('For this thread only')

  // An explicit sign-out forgets the drafts: the next person at this computer sees none.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL((url) => url.pathname === '/login')
  const kept = await page.evaluate(() =>
    Object.keys((globalThis as unknown as { localStorage: object }).localStorage).filter((key) =>
      key.includes('draft'),
    ),
  )
  expect(kept).toEqual([])
  expect(session.errors).toEqual([])
})

test.concurrent('a file that is not what it claims: a chip with no broken thumbnail, refused in plain words', async () => {
  await using session = await browser.open(server.url)
  const { page } = session
  await page.goto('/login')
  await signIn(page)
  await page.waitForURL((url) => url.pathname === '/')
  await page.locator('#composer-text').fill('What is in this picture?')
  await page
    .locator('#composer-files')
    .setInputFiles({ name: 'fake.png', mimeType: 'image/png', buffer: Buffer.from('just some words') })
  // The browser cannot draw these bytes: the chip names the kind instead of showing a broken image.
  await page.locator('.chip .chip-kind').waitFor()
  expect(await page.locator('.chip img').count()).toBe(0)
  await page.keyboard.press('Enter')
  await page.locator('.chip.refused').waitFor()
  expect(await page.locator('#composer-error').textContent()).toBe("fake.png isn't a PNG image: its contents are text.")
  expect(await page.locator('#composer-text').inputValue()).toBe('What is in this picture?')
})
