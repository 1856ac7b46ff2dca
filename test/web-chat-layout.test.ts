// The chat's frame with realistic data, in real headless Chromium against the real server process: a person with
// thirty threads with long names, on two laptop screens and a phone with the menu open, and the theme they chose
// on every page, chat or not. The chat's own behaviour (composer, streaming, copying) is web-chat.test.ts's.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContextOptions, Page } from 'playwright-core'
import { type BrowserSession, type SignedIn, sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'
import { pkce } from './support/oauth-helpers'

const email = 'ines@example.com'
const password = 'correct horse battery'
const threadCount = 30

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
let signedInState: SignedIn
let threadPath = ''

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-chat-layout-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
  })
  const token = await firstRunToken(server)
  // Names as people write them: long enough that every one is cut short in the sidebar.
  for (let index = 1; index <= threadCount; index++) {
    const response = await fetch(`${server.url}/api/v1/threads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `Quarterly planning ${index}: the platform migration, its budget, hiring and risks`,
      }),
    })
    expect(response.status).toBe(201)
    threadPath = `/threads/${((await response.json()) as { thread_id: string }).thread_id}`
  }
  signedInState = await browser.signIn(server.url, email, password)
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

function signedIn(options?: BrowserContextOptions): Promise<BrowserSession> {
  return browser.open(server.url, { ...options, storageState: signedInState })
}

interface Box {
  left: number
  top: number
  right: number
  bottom: number
}

/**
 * What the sidebar shows: each footer control's box, and each thread link's box as far as it is visible (cut by the
 * boxes of its ancestors that clip their overflow, and by the window); links scrolled out of view are left out.
 */
function sidebarBoxes(page: Page): Promise<{ footer: Box[]; links: Box[]; firstLinkTop: number }> {
  return page.evaluate(() => {
    // Typed loosely: the project's TypeScript has no DOM library.
    interface Node {
      getBoundingClientRect(): Box
      parentElement: Node | null
    }
    const { document, getComputedStyle, innerWidth, innerHeight } = globalThis as unknown as {
      document: { querySelectorAll(selector: string): Iterable<Node> }
      getComputedStyle(node: Node): { overflowX: string; overflowY: string }
      innerWidth: number
      innerHeight: number
    }
    const plain = (box: Box): Box => ({ left: box.left, top: box.top, right: box.right, bottom: box.bottom })
    const visible = (node: Node): Box | null => {
      let box = plain(node.getBoundingClientRect())
      const cut = (by: Box): void => {
        box = {
          left: Math.max(box.left, by.left),
          top: Math.max(box.top, by.top),
          right: Math.min(box.right, by.right),
          bottom: Math.min(box.bottom, by.bottom),
        }
      }
      for (let parent = node.parentElement; parent; parent = parent.parentElement) {
        const style = getComputedStyle(parent)
        if (style.overflowX !== 'visible' || style.overflowY !== 'visible') cut(parent.getBoundingClientRect())
      }
      cut({ left: 0, top: 0, right: innerWidth, bottom: innerHeight })
      return box.right - box.left > 0.5 && box.bottom - box.top > 0.5 ? box : null
    }
    const footer = [...document.querySelectorAll('.sidebar-foot :is(a, button, .model-name)')].map((node) =>
      plain(node.getBoundingClientRect()),
    )
    const all = [...document.querySelectorAll('#sidebar .thread-link')]
    const links = all.map(visible).filter((box): box is Box => box !== null)
    const first = all[0]
    return { footer, links, firstLinkTop: first ? first.getBoundingClientRect().top : 0 }
  })
}

const overlaps = (a: Box, b: Box): boolean =>
  a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5

/** Checks the sidebar as shown: footer in the window and over no thread; the list scrolls under the wheel alone. */
async function expectFooterApart(page: Page): Promise<void> {
  const height = page.viewportSize()?.height ?? 0
  const before = await sidebarBoxes(page)
  expect(before.footer.length).toBeGreaterThanOrEqual(4)
  expect(before.links.length).toBeGreaterThan(3)
  // Every footer control is on screen, and none is drawn over a visible thread name.
  for (const control of before.footer) expect(control.bottom).toBeLessThanOrEqual(height)
  const covered = before.footer.flatMap((control) => before.links.filter((link) => overlaps(control, link)))
  expect(covered).toEqual([])

  // The wheel over the list scrolls the list, not the sidebar: the footer stays where it was.
  const list = await page.locator('#sidebar .thread-list').boundingBox()
  if (!list) throw new Error('no thread list')
  await page.mouse.move(list.x + list.width / 2, Math.min(list.y + 40, height / 2))
  await page.mouse.wheel(0, 3000)
  await page.waitForFunction((top) => {
    const { document } = globalThis as unknown as {
      document: { querySelector(selector: string): { getBoundingClientRect(): { top: number } } | null }
    }
    return (document.querySelector('#sidebar .thread-link')?.getBoundingClientRect().top ?? top) < top - 100
  }, before.firstLinkTop)
  const after = await sidebarBoxes(page)
  expect(after.footer).toEqual(before.footer)
  expect(after.footer.flatMap((control) => after.links.filter((link) => overlaps(control, link)))).toEqual([])
  // At the end of the list its last thread and "Next page" are in view, above the footer.
  const footerTop = Math.min(...after.footer.map((control) => control.top))
  const next = await page.locator('#sidebar a[rel="next"]').boundingBox()
  expect(next).not.toBeNull()
  expect((next?.y ?? 0) + (next?.height ?? 0)).toBeLessThanOrEqual(footerTop)
}

for (const [width, height] of [
  [1280, 800],
  [1440, 900],
] as const) {
  test.concurrent(`${width}×${height} with ${threadCount} threads: the list scrolls on its own, the footer stays clear`, async () => {
    await using session = await signedIn({ viewport: { width, height } })
    const { page } = session
    for (const path of ['/', threadPath]) {
      await page.goto(path)
      expect(await page.locator('#sidebar .thread-link').count()).toBe(25)
      await expectFooterApart(page)
    }
    expect(session.errors).toEqual([])
  })
}

test.concurrent(`a phone with the menu open and ${threadCount} threads: the footer stays clear`, async () => {
  await using session = await signedIn({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
  const { page } = session
  await page.goto(threadPath)
  await page.getByRole('link', { name: 'Threads' }).click()
  await page.locator('#sidebar').waitFor()
  await expectFooterApart(page)
  expect(session.errors).toEqual([])
})

test.concurrent('the theme chosen in the chat holds on every page: settings, administration, consent, confirmation, errors', async () => {
  await using session = await signedIn({ viewport: { width: 1280, height: 800 } })
  const { page } = session
  const registration = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Notes',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    }),
  })
  const client = (await registration.json()) as { client_id: string }
  const consent = `/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: 'http://127.0.0.1/callback',
    scope: 'threads:read',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  })}`
  const pages = [
    '/settings/tokens',
    '/admin/members',
    consent,
    `${threadPath}/delete`,
    '/threads/0190a0a0-0000-7000-8000-000000000000',
    '/no/such/page',
  ]
  /** The page's background and the scheme its colours resolve with. */
  const looks = () =>
    page.evaluate(() => {
      const { document, getComputedStyle } = globalThis as unknown as {
        document: { body: unknown; documentElement: unknown }
        getComputedStyle(node: unknown): { backgroundColor: string; colorScheme: string }
      }
      return {
        background: getComputedStyle(document.body).backgroundColor,
        scheme: getComputedStyle(document.documentElement).colorScheme,
      }
    })
  const dark = { background: 'rgb(22, 22, 21)', scheme: 'dark' }
  const light = { background: 'rgb(247, 247, 245)', scheme: 'light' }
  for (const [chosen, system, expected] of [
    ['dark', 'light', dark],
    ['light', 'dark', light],
  ] as const) {
    await page.emulateMedia({ colorScheme: system })
    await page.goto('/')
    const theme = page.locator('.theme-switch')
    for (let clicks = 0; clicks < 3 && (await theme.textContent()) !== `Theme: ${chosen}`; clicks++) await theme.click()
    expect(await theme.textContent()).toBe(`Theme: ${chosen}`)
    const seen: Record<string, unknown> = {}
    for (const path of pages) {
      await page.goto(path)
      seen[path] = await looks()
    }
    expect(seen).toEqual(Object.fromEntries(pages.map((path) => [path, expected])))
  }
  // The script is the only one these pages run, and the policy lets it: no refusal in the console.
  expect(session.errors.filter((error) => !error.includes('status of 404'))).toEqual([])
})
