// The sidebar's search in real headless Chromium against the real server process: results come as the person types
// (no Enter), each with its passage and the words marked; a slow answer to an earlier search never replaces a later
// one; a result opens its thread at the message it was found in, the results still beside it; and without
// JavaScript the form still searches and shows the passages. Queries are whole words, which match under today's
// whole-word search and under issue 39's prefixes alike. UPDATE_SCREENSHOTS=1 also writes docs/screenshots/search-*.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContextOptions, Page, Request, Route } from 'playwright-core'
import { type BrowserSession, type SignedIn, sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl, until } from './support/helpers'

const email = 'ada@example.com'
const password = 'correct horse battery'
const screenshotDir = process.env.UPDATE_SCREENSHOTS === '1' ? join(import.meta.dir, '..', 'docs', 'screenshots') : null

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
let token: string
let signedIn: SignedIn
/** The threads made for the tests, by name, and the messages of the one searched into. */
const threads: Record<string, string> = {}
let dinnerMessages: { id: string; role: string }[] = []

/** The little of the DOM these page functions touch: the project's TypeScript has no DOM library. */
interface PageWindow {
  __sameDocument?: boolean
  /** How many times the page has started reading the sidebar's list. */
  __lists?: number
  innerHeight: number
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the JSON it needs
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return response.json()
}

const ready = (threadId: string) =>
  until(async () => (await api('GET', `/api/v1/threads/${threadId}`)).state === 'ready')

async function thread(name: string, messages: string[]): Promise<string> {
  const { thread_id } = await api('POST', '/api/v1/threads', { name })
  for (const text of messages) {
    await api('POST', `/api/v1/threads/${thread_id}/messages`, { text })
    await ready(thread_id)
  }
  threads[name] = thread_id
  return thread_id
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-search-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    ECHO_TOKEN_DELAY_MS: '0',
  })
  token = await firstRunToken(server)
  await thread('Q3 report', ['Draft an outline for the Q3 report.', 'Add a section on hiring.'])
  await thread('Packing for Lyon', ['What should I pack for three days in Lyon?', 'Is a rain jacket enough?'])
  const dinner = await thread('Weekend in Lyon', [
    'Where should we eat on Saturday? Somewhere with a real bouchon menu, near the old town.',
    'Which museums open late on Friday?',
    'How long is the walk up to Fourvière?',
    'Is the Saturday market at Quai Saint-Antoine worth it?',
    'Can we take the funicular back down?',
    'What time do the traboules close?',
    'Where can we get coffee on Sunday morning?',
    'Any advice for the train back to Paris?',
  ])
  dinnerMessages = (await api('GET', `/api/v1/threads/${dinner}/messages?limit=50`)).data
  await thread('Market research', ['Summarise the market survey for the new café.'])
  signedIn = await browser.signIn(server.url, email, password)
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

async function open(path: string, options: BrowserContextOptions = {}): Promise<BrowserSession> {
  const session = await browser.open(server.url, { colorScheme: 'light', ...options, storageState: signedIn })
  await session.page.goto(path)
  if (options.javaScriptEnabled !== false) {
    await session.page.evaluate(() => {
      ;(globalThis as unknown as PageWindow).__sameDocument = true
    })
  }
  return session
}

const sameDocument = (page: Page) => page.evaluate(() => (globalThis as unknown as PageWindow).__sameDocument === true)

/** The names of the threads listed, and each result's name and passage with their marks in brackets. */
async function results(page: Page): Promise<{ name: string; marked: string; snippet: string | null }[]> {
  return page.locator('.thread-nav .thread-link').evaluateAll((links) => {
    const bracketed = (element: { childNodes: Iterable<{ nodeName: string; textContent: string | null }> }) =>
      [...element.childNodes]
        .map((node) => (node.nodeName === 'MARK' ? `[${node.textContent}]` : node.textContent))
        .join('')
    return links.map((link) => {
      const name = link.querySelector('.thread-name') as NonNullable<ReturnType<typeof link.querySelector>>
      const snippet = link.querySelector('.thread-snippet')
      return { name: name.textContent ?? '', marked: bracketed(name), snippet: snippet ? bracketed(snippet) : null }
    })
  })
}

/** Waits until the list shows exactly these threads, in this order. */
async function listed(page: Page, names: string[]): Promise<void> {
  await until(async () => JSON.stringify((await results(page)).map((row) => row.name)) === JSON.stringify(names))
}

test.concurrent('results come as the person types, each with its passage and the words marked', async () => {
  await using session = await open('/')
  const { page, errors } = session
  // The page's timers on a clock the test moves, and its reads of the list counted where they start.
  await page.clock.install()
  // Installed, the clock still runs; paused, it moves only when the test moves it.
  await page.clock.pauseAt(Date.now() + 1000)
  await page.evaluate(() => {
    const page = globalThis as unknown as PageWindow & { fetch: (url: unknown, init?: unknown) => Promise<unknown> }
    const fetch = page.fetch
    page.__lists = 0
    page.fetch = (url, init) => {
      if (String(url).startsWith('/threads/list')) page.__lists = (page.__lists ?? 0) + 1
      return fetch(url, init)
    }
  })
  const reads = () => page.evaluate(() => (globalThis as unknown as PageWindow).__lists)
  await page.getByRole('searchbox', { name: 'Search' }).pressSequentially('bouchon')
  // Nothing is read while keys come, nor until 200 ms after the last; then once, with no Enter and no new page.
  await page.clock.runFor(199)
  expect(await reads()).toBe(0)
  await page.clock.runFor(1)
  expect(await reads()).toBe(1)
  await listed(page, ['Weekend in Lyon'])
  // The passage starts shortly before the word, so that it shows within the lines the sidebar gives it.
  expect(await results(page)).toEqual([
    {
      name: 'Weekend in Lyon',
      marked: 'Weekend in Lyon',
      snippet: '…eat on Saturday? Somewhere with a real [bouchon] menu, near the old town.',
    },
  ])
  expect(await reads()).toBe(1)
  expect(await sameDocument(page)).toBe(true)
  expect(new URL(page.url()).search).toBe('?q=bouchon')
  await expect(page.locator('#thread-status').textContent()).resolves.toBe('1 thread found.')

  // Emptied, the search gives the whole list back.
  await page.getByRole('searchbox', { name: 'Search' }).fill('')
  await page.clock.runFor(200)
  await listed(page, ['Market research', 'Weekend in Lyon', 'Packing for Lyon', 'Q3 report'])
  expect(new URL(page.url()).search).toBe('')
  expect(errors).toEqual([])
})

test.concurrent('a slower answer to an earlier search never replaces a later one', async () => {
  await using session = await open('/')
  const { page, errors } = session
  // The first search's answer is held until the second's is shown.
  let held: { route: Route; request: Request } | undefined
  let gotHeld: () => void = () => {}
  const holding = new Promise<void>((resolve) => (gotHeld = resolve))
  await page.route('**/threads/list?*', async (route, request) => {
    if (new URL(request.url()).searchParams.get('q') === 'lyon' && !held) {
      held = { route, request }
      gotHeld()
      return
    }
    await route.continue()
  })
  const search = page.getByRole('searchbox', { name: 'Search' })
  await search.fill('lyon')
  await holding
  const heldEnded = Promise.race([
    page.waitForEvent('requestfailed', (request) => request === held?.request),
    page.waitForEvent('requestfinished', (request) => request === held?.request),
  ])
  await search.pressSequentially(' market', { delay: 20 })
  await listed(page, ['Weekend in Lyon'])
  // Now the earlier answer arrives, with the earlier search's (longer) list: it must not be shown.
  try {
    await held?.route.fulfill({ response: await held.route.fetch() })
  } catch {
    // The page cancelled it: the browser has let the request go.
  }
  await heldEnded
  // One more round trip through the page, after which anything the held answer would do is done.
  await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)))
  expect((await results(page)).map((row) => row.name)).toEqual(['Weekend in Lyon'])
  expect(await search.inputValue()).toBe('lyon market')
  expect(errors.filter((error) => !error.includes('net::ERR_FAILED'))).toEqual([])
})

test.concurrent('a result opens its thread at the message it was found in, marked, the results still beside it', async () => {
  await using session = await open('/', { viewport: { width: 1280, height: 720 } })
  const { page } = session
  await page.getByRole('searchbox', { name: 'Search' }).fill('bouchon')
  await listed(page, ['Weekend in Lyon'])
  // The newest message holding the word: the first answer, which quotes the first question.
  const found = dinnerMessages.find((message) => message.role === 'assistant') as { id: string }
  await page.getByRole('link', { name: 'Weekend in Lyon' }).click()
  await page.waitForURL(`${server.url}/threads/${threads['Weekend in Lyon']}?q=bouchon#message-${found.id}`)
  const target = page.locator(`#message-${found.id}`)
  expect(await target.evaluate((element) => element.matches(':target'))).toBe(true)
  // In view, though the thread is long enough to open at its end otherwise.
  const box = await target.boundingBox()
  const height = await page.evaluate(() => (globalThis as unknown as PageWindow).innerHeight)
  expect(box !== null && box.y >= 0 && box.y < height).toBe(true)
  expect(await page.locator('.message').last().isVisible()).toBe(true)
  const last = await page.locator('.message').last().boundingBox()
  expect(last !== null && last.y > height).toBe(true)
  // The search is still there, and still what it was.
  expect(await page.getByRole('searchbox', { name: 'Search' }).inputValue()).toBe('bouchon')
  expect((await results(page)).map((row) => row.name)).toEqual(['Weekend in Lyon'])
  await page.locator('.thread-link[aria-current="page"]').waitFor()
  if (screenshotDir) {
    await page.screenshot({ path: join(screenshotDir, 'search-desktop-light.png'), animations: 'disabled' })
  }
})

test.concurrent('without JavaScript the form searches and shows the passages with the words marked', async () => {
  await using session = await open('/', { javaScriptEnabled: false })
  const { page } = session
  await page.getByRole('searchbox', { name: 'Search' }).fill('lyon')
  await page.getByRole('searchbox', { name: 'Search' }).press('Enter')
  await page.waitForURL((url) => url.pathname === '/threads' && url.searchParams.get('q') === 'lyon')
  // Found by its name, a thread has its name marked; by a message, the passage under the name.
  expect(await results(page)).toEqual([
    { name: 'Weekend in Lyon', marked: 'Weekend in [Lyon]', snippet: null },
    {
      name: 'Packing for Lyon',
      marked: 'Packing for Lyon',
      snippet: '…What should I pack for three days in [Lyon]?',
    },
  ])
  // A result links to its message, keeping the search.
  const href = await page.getByRole('link', { name: 'Packing for Lyon' }).getAttribute('href')
  expect(href).toMatch(new RegExp(`^/threads/${threads['Packing for Lyon']}\\?q=lyon#message-[0-9a-f-]{36}$`))
})

test.concurrent('on a phone the results fit the screen, passages wrapped', async () => {
  await using session = await open('/', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
  const { page } = session
  await page.getByRole('link', { name: 'Threads' }).first().click()
  await page.getByRole('searchbox', { name: 'Search' }).fill('lyon')
  await listed(page, ['Weekend in Lyon', 'Packing for Lyon'])
  for (const snippet of await page.locator('.thread-snippet').all()) {
    const box = await snippet.boundingBox()
    expect(box !== null && box.x >= 0 && box.x + box.width <= 390).toBe(true)
  }
  if (screenshotDir) {
    await page.getByRole('searchbox', { name: 'Search' }).blur()
    await page.screenshot({ path: join(screenshotDir, 'search-phone-light.png'), animations: 'disabled' })
  }
})
