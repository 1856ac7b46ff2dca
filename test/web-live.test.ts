// The chat's pages follow the change feed (src/web/client/live.ts) in real headless Chromium against the real server
// process: what another tab or an API client changes shows in the sidebar and in an open thread without a reload,
// an answer started elsewhere streams into the open thread, and a page makes no request while nothing it can see
// changes. Waits on conditions only: a quiet interval is the time the server takes to pass other changes on.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventSourceMessage } from 'eventsource-parser'
import type { Page, Request } from 'playwright-core'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { createUser } from '../src/auth/users'
import { testOrigin, tokenHolder } from './support/audit'
import { backendEnv, databaseOf } from './support/backend'
import { type BrowserSession, type SignedIn, sharedBrowser } from './support/browser'
import { firstRunToken, parseEvents, type ServerProcess, startServerAtOwnUrl } from './support/helpers'

const grace = 'grace@example.com'
/** Of another organization: she sees none of grace's threads, so nothing grace does is news to her pages. */
const ada = 'ada@elsewhere.example'
const password = 'correct horse battery'

/** The little of the DOM these page functions touch: the project's TypeScript has no DOM library. */
interface PageWindow {
  document: {
    documentElement: { dataset: Record<string, string | undefined> }
    activeElement: { tagName: string; parentElement: { className: string } | null } | null
    dispatchEvent(event: unknown): boolean
  }
  Event: new (type: string) => unknown
  PageTransitionEvent: new (type: string, init: Record<string, unknown>) => unknown
  dispatchEvent(event: unknown): boolean
  __sameDocument?: boolean
}

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
/** grace's starter token: the API client acting for the same person as the tabs. */
let graceToken: string
let adaToken: string
const signedInStates = new Map<string, SignedIn>()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-live-'))
  const env = await backendEnv({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: grace,
    ADMIN_PASSWORD: password,
    // Slow enough that an answer started through the API is still being written when the open thread hears of it.
    ECHO_TOKEN_DELAY_MS: '50',
  })
  server = await startServerAtOwnUrl(env, { backend: 'as given' })
  graceToken = await firstRunToken(server)
  await using db = await databaseOf(env)
  const other = { email: ada, password, name: 'Ada', organizationSlug: 'elsewhere', role: 'owner' } as const
  const { id } = await createUser(db.store.users, other, Date.now(), testOrigin)
  adaToken = await createPersonalAccessToken(
    db.store.accessTokens,
    { user: await tokenHolder(db.store, id), name: 'test', scopes: ['threads:read', 'threads:write'] },
    Date.now(),
    testOrigin,
  )
  for (const email of [grace, ada]) {
    signedInStates.set(email, await browser.signIn(server.url, email, password))
  }
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

/** A tab of a signed-in person at `path`, once its change feed is open; marked so that a reload would show. */
async function tab(email: string, path = '/'): Promise<BrowserSession & { feeds: Request[] }> {
  const session = await browser.open(server.url, { storageState: signedInStates.get(email) })
  const feeds: Request[] = []
  session.page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/threads/events') feeds.push(request)
  })
  await session.page.goto(path)
  await live(session.page)
  await session.page.evaluate(() => {
    ;(globalThis as unknown as PageWindow).__sameDocument = true
  })
  return { ...session, feeds }
}

/** Waits until the page's feed has sent `ready`. */
async function live(page: Page): Promise<void> {
  await page.waitForFunction(() => (globalThis as unknown as PageWindow).document.documentElement.dataset.live)
}

async function sameDocument(page: Page): Promise<boolean> {
  return (await page.evaluate(() => (globalThis as unknown as PageWindow).__sameDocument)) === true
}

async function api(token: string, method: string, path: string, body?: unknown): Promise<{ thread_id: string }> {
  const response = await fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!response.ok) {
    // A 500 is the server's own failure: its log says which (one DELETE answered 500 in a loaded PostgreSQL run).
    const log = response.status >= 500 ? `\nserver log:\n${server.stderr().slice(-4000)}` : ''
    throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}${log}`)
  }
  return response.status === 204 ? { thread_id: '' } : ((await response.json()) as { thread_id: string })
}

/** An API client's own change feed: tells the test when the server has passed a change on to every open feed. */
async function apiFeed(token: string): Promise<AsyncDisposable & { heard(threadId: string): Promise<void> }> {
  const controller = new AbortController()
  const response = await fetch(new URL('/api/v1/threads/events', server.url), {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  })
  const events = parseEvents(response)
  const next = async (): Promise<EventSourceMessage> => {
    const { value, done } = await events.next()
    if (done) throw new Error('the feed ended')
    return value
  }
  while ((await next()).event !== 'ready') {}
  return {
    async heard(threadId) {
      while (true) {
        const event = await next()
        if (event.event !== 'ready' && JSON.parse(event.data).id === threadId) return
      }
    },
    async [Symbol.asyncDispose]() {
      controller.abort()
      await events.return(undefined).catch(() => {})
    },
  }
}

const threadLink = (page: Page, name: string) => page.locator('.thread-nav .thread-link', { hasText: name })

test.concurrent('a thread made through the API appears in the sidebar; renamed in another tab and deleted through the API, it changes and leaves', async () => {
  await using first = await tab(grace)
  const name = `From the API ${crypto.randomUUID()}`
  const { thread_id: id } = await api(graceToken, 'POST', '/api/v1/threads', { name })
  await threadLink(first.page, name).waitFor()

  // Renamed in a second tab, through the thread's own menu.
  await using second = await tab(grace, `/threads/${id}`)
  await second.page.locator('.thread-tools summary').click()
  await second.page.getByLabel('Name').fill(`${name} renamed`)
  await second.page.getByRole('button', { name: 'Save name' }).click()
  await threadLink(first.page, `${name} renamed`).waitFor()

  await api(graceToken, 'DELETE', `/api/v1/threads/${id}`)
  await threadLink(first.page, name).waitFor({ state: 'detached' })
  // The tab that had it open says it is gone (reloaded: the thread's page is now the error page).
  await second.page.getByRole('heading', { level: 1, name: 'Thread not found' }).waitFor()
  expect(await sameDocument(first.page)).toBe(true)
  // One feed connection for the page's whole life, however many changes came through it.
  expect(first.feeds.length).toBe(1)
})

test.concurrent('a message sent elsewhere into the open thread shows at once, and its answer streams in', async () => {
  const { thread_id: id } = await api(graceToken, 'POST', '/api/v1/threads', { name: 'Followed' })
  await using reader = await tab(grace, `/threads/${id}`)
  // Long enough (about 8 s at 50 ms a word) that the answer is still being written when a loaded machine's page reads
  // the thread again: at 60 words it had sometimes ended first, and then there is nothing left to stream.
  const words = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ')
  await api(graceToken, 'POST', `/api/v1/threads/${id}/messages`, { text: `From the API: ${words}` })
  await reader.page.locator('.message-user', { hasText: 'From the API' }).waitFor()
  // The answer streams in this page (the class is the stream's own, set as its words arrive), then settles.
  await reader.page.locator('#live-answer.writing').waitFor()
  const settled = reader.page.locator('.message-assistant:not(.live)', { hasText: 'You said, in turn 1:' })
  await settled.waitFor()
  expect(await settled.textContent()).toContain('word149')

  // Sent from another tab's composer, the same.
  await using writer = await tab(grace, `/threads/${id}`)
  await writer.page.locator('#composer-text').fill(`From the other tab: ${words}`)
  await writer.page.keyboard.press('Enter')
  await reader.page.locator('.message-user', { hasText: 'From the other tab' }).waitFor()
  await reader.page.locator('#live-answer.writing').waitFor()
  await reader.page.locator('.message-assistant:not(.live)', { hasText: 'You said, in turn 2:' }).waitFor()
  await reader.page.locator('#live-answer').waitFor({ state: 'detached' })
  expect(await sameDocument(reader.page)).toBe(true)
  expect(reader.feeds.length).toBe(1)
})

test.concurrent('an answer that ends while someone types in the thread’s menu waits for them, then keeps their text and their focus', async () => {
  const { thread_id: id } = await api(graceToken, 'POST', '/api/v1/threads', { name: 'Weekend plans' })
  await using typing = await tab(grace, `/threads/${id}`)
  await typing.page.locator('.thread-tools summary').click()
  const name = typing.page.getByLabel('Name', { exact: true })
  await name.fill('Weekend in Ly')
  // An API client sends meanwhile, and its answer ends: the page is not read again while the field has the focus.
  const sent = (await api(graceToken, 'POST', `/api/v1/threads/${id}/messages`, { text: 'What should we pack?' })) as {
    thread_id: string
    message_id?: string
  }
  const stream = await fetch(new URL(`/api/v1/threads/${id}/messages/${sent.message_id}/response/stream`, server.url), {
    headers: { authorization: `Bearer ${graceToken}` },
  })
  for await (const _ of parseEvents(stream)) {
    // Read to its end: the answer is stored.
  }
  expect(await typing.page.locator('.message-assistant').count()).toBe(0)
  // Escape closes the menu and puts the focus on its button: the page is read now, and the focus stays there.
  await typing.page.keyboard.press('Escape')
  await typing.page.locator('.message-assistant:not(.live)', { hasText: 'What should we pack?' }).waitFor()
  const focused = await typing.page.evaluate(() => {
    const active = (globalThis as unknown as PageWindow).document.activeElement
    return `${active?.tagName} in ${active?.parentElement?.className}`
  })
  expect(focused).toBe('SUMMARY in thread-tools')
  expect(await name.inputValue()).toBe('Weekend in Ly')
  expect(await sameDocument(typing.page)).toBe(true)
})

test.concurrent('a page makes no request while nothing it can see changes, and reads only its list when one does', async () => {
  await using quiet = await tab(ada)
  const requests: string[] = []
  quiet.page.on('request', (request) => requests.push(new URL(request.url()).pathname))
  // Changes the server reads and hands out while ada's page is open: each is heard on grace's own feed, by which
  // time ada's feed has been told of it too (and has sent nothing, since she may not see it).
  await using graceFeed = await apiFeed(graceToken)
  const { thread_id: id } = await api(graceToken, 'POST', '/api/v1/threads', { name: 'Not for Ada' })
  await graceFeed.heard(id)
  await api(graceToken, 'PATCH', `/api/v1/threads/${id}`, { name: 'Still not for Ada' })
  await graceFeed.heard(id)
  await api(graceToken, 'DELETE', `/api/v1/threads/${id}`)
  await graceFeed.heard(id)
  expect(requests).toEqual([])

  // Her own change: one read of the sidebar's list, not of the page.
  await using adaFeed = await apiFeed(adaToken)
  const { thread_id: hers } = await api(adaToken, 'POST', '/api/v1/threads', { name: 'Ada’s own' })
  await adaFeed.heard(hers)
  await threadLink(quiet.page, 'Ada’s own').waitFor()
  expect(requests).toEqual(['/threads/list'])
  expect(quiet.feeds.length).toBe(1)
})

test.concurrent('hidden, a page closes its feed; shown again, it hears what it missed; leaving closes it', async () => {
  await using away = await tab(grace)
  const ended = (request: Request) =>
    Promise.race([
      away.page.waitForEvent('requestfailed', (failed) => failed === request),
      away.page.waitForEvent('requestfinished', (finished) => finished === request),
    ])
  const setHidden = (hidden: boolean) =>
    away.page.evaluate((hidden) => {
      const { document, Event } = globalThis as unknown as PageWindow
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden })
      document.dispatchEvent(new Event('visibilitychange'))
    }, hidden)
  const first = away.feeds[0] as Request
  await Promise.all([ended(first), setHidden(true)])

  const requests: string[] = []
  away.page.on('request', (request) => requests.push(new URL(request.url()).pathname))
  await using graceFeed = await apiFeed(graceToken)
  const name = `Made while away ${crypto.randomUUID()}`
  const { thread_id: id } = await api(graceToken, 'POST', '/api/v1/threads', { name })
  await graceFeed.heard(id)
  expect(requests).toEqual([])

  await setHidden(false)
  await threadLink(away.page, name).waitFor()
  // The feed opened again after the last event the page had, so the change made meanwhile came through it.
  expect(away.feeds.length).toBe(2)
  expect(new URL(away.feeds[1]?.url() ?? '').searchParams.get('after')).toMatch(/^\d+$/)

  const second = away.feeds[1] as Request
  await Promise.all([
    ended(second),
    away.page.evaluate(() => {
      const { PageTransitionEvent } = globalThis as unknown as PageWindow
      ;(globalThis as unknown as PageWindow).dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }))
    }),
  ])
  expect(await sameDocument(away.page)).toBe(true)
})
