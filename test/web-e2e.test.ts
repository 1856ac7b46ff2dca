// End to end in real headless Chromium against the real server process: sign in, start a thread with an image from
// the new conversation, watch the answer stream in without a navigation, rate it, follow up, open a message's
// app_url, rename/archive/privacy, stop a running answer, continue a thread in error, try markup through every field
// the pages show, and sign in through an OpenID Connect provider on loopback. The chat's own behaviour (keys, chips,
// code, copy, phone width, time zones) is in web-chat.test.ts. Waits on conditions only.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import sharp from 'sharp'
import { type BrowserSession, sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'
import { startFakeOidcProvider } from './support/oidc-provider'

const email = 'ada@example.com'
const password = 'correct horse battery'

/** A port that was free a moment ago, where no provider listens. */
async function closedPort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port ?? 0
  await probe.stop(true)
  return port
}

interface Site extends AsyncDisposable {
  server: ServerProcess
  url: string
  token: string
}

async function startSite(env: Record<string, string> = {}): Promise<Site> {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-web-'))
  const server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    ...env,
  })
  const token = await firstRunToken(server)
  return {
    server,
    url: server.url,
    token,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function signIn(page: Page): Promise<void> {
  await page.goto('/')
  await page.waitForURL(/\/login$/)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await page.getByRole('heading', { level: 1, name: 'New thread' }).waitFor()
}

/** Marks the loaded document: a full navigation or reload loses the mark, a partial update keeps it. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => {
    ;(globalThis as unknown as { __sameDocument?: boolean }).__sameDocument = true
  })
}

async function sameDocument(page: Page): Promise<boolean> {
  return page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument === true)
}

/** Opens the thread's options menu (rename, archive, privacy) if it is closed. */
async function threadOptions(page: Page): Promise<void> {
  const tools = page.locator('.thread-tools')
  if ((await tools.getAttribute('open')) === null) await tools.locator('summary').click()
}

/** The little of the DOM that these page functions touch: the project's TypeScript has no DOM library. */
interface PageElement {
  textContent: string | null
  getAttribute(name: string): string | null
}
interface PageWindow {
  __xss?: number
  /** The first text the answer being written showed on this page (see `open`). */
  __partial?: string
  MutationObserver: new (callback: () => void) => { observe(target: unknown, options: Record<string, boolean>): void }
  document: {
    body: PageElement
    scripts: Iterable<PageElement>
    querySelector(selector: string): PageElement | null
    querySelectorAll(selector: string): { length: number }
    getElementById(id: string): PageElement | null
  }
  getComputedStyle(element: unknown): { outlineStyle: string }
}

/**
 * A page of its own, which records the first text an answer being written shows, at the very change to the page
 * that shows it: polling for it instead can miss a short answer on a busy machine, where the page is polled less
 * often than the answer's words arrive.
 */
async function open(url: string): Promise<BrowserSession> {
  const session = await browser.open(url)
  await session.context.addInitScript(() => {
    const page = globalThis as unknown as PageWindow
    new page.MutationObserver(() => {
      page.__partial ??= page.document.querySelector('#live-answer .live-text')?.textContent || undefined
    }).observe(page.document, { childList: true, subtree: true, characterData: true })
  })
  return session
}

/**
 * Waits until the answer being written has streamed in and the page shows it as rendered by the server; returns
 * the first text the page showed while the answer was being written.
 */
async function answerStreamsIn(page: Page, expected: string): Promise<string> {
  await page.waitForFunction((text) => {
    const { document } = globalThis as unknown as PageWindow
    return !document.getElementById('live-answer') && (document.body.textContent ?? '').includes(text)
  }, expected)
  const partial = await page.evaluate(() => (globalThis as unknown as PageWindow).__partial)
  if (!partial) throw new Error('the page never showed the answer while it was being written')
  return partial
}

async function api(site: Site, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${site.url}/api/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${site.token}`, 'content-type': 'application/json' },
  })
}

// One Chromium; each test has a context of its own. The tests share the first site (each makes its own threads) or
// start their own, so they run concurrently: most of their time is spent waiting for answers to stream in.
const browser = sharedBrowser()
let site: Site
beforeAll(async () => {
  // Slow enough to watch an answer arrive and to press Stop in the middle of a long one.
  site = await startSite({ ECHO_TOKEN_DELAY_MS: '80' })
})
afterAll(async () => {
  await site?.[Symbol.asyncDispose]()
})

test.concurrent('sign in, start a thread with an image, watch it stream, rate it, follow up, open a message link', async () => {
  await using session = await open(site.url)
  const { page } = session
  const dialogs: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  await signIn(page)

  const image = await sharp({ create: { width: 120, height: 80, channels: 3, background: '#2952cc' } })
    .png()
    .toBuffer()
  await markDocument(page)
  // Long enough (about 4 s at 80 ms a word) that the page is reading the stream well before the answer ends, even
  // on a loaded machine: a short one could end before the page joined, which then showed it whole.
  const question = `Describe this picture, please: ${'its colours, its shapes and what it seems to show; '.repeat(4).trim()}`
  await page.getByLabel('Message', { exact: true }).fill(question)
  await page.locator('#composer-files').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: image })
  await page.locator('.chip img').waitFor()
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForURL(/\/threads\/[0-9a-f-]{36}$/)
  const threadId = new URL(page.url()).pathname.split('/').at(-1) ?? ''

  const full = `You said, in turn 1:\n\n${question}\n\nAttached: photo.png (image/png).`
  // The text of the Markdown rendered so far (a paragraph's trailing space and newline aside).
  const partial = (await answerStreamsIn(page, full)).trim()
  expect(partial.length).toBeLessThan(full.length)
  expect(full.startsWith(partial)).toBe(true)
  expect(await page.locator('#thread-status').textContent()).toBe('The answer is complete.')
  // The thread started, streamed and settled in the page that sent it: no navigation.
  expect(await sameDocument(page)).toBe(true)
  const shown = page.getByRole('img', { name: 'photo.png' })
  await shown.waitFor()
  expect(await shown.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(120)

  // Rate: thumbs down with a comment, then change to thumbs up.
  const answer = page.locator('.message-assistant').first()
  await answer.getByText('Add a comment').click()
  await answer.getByLabel(/Comment/).fill('Could say more')
  await answer.getByRole('button', { name: 'Bad answer' }).click()
  await page.locator('.message-assistant button[title="Bad answer"][aria-pressed="true"]').waitFor()
  expect(await page.locator('.message-assistant textarea').first().inputValue()).toBe('Could say more')
  await page.locator('.message-assistant').first().getByRole('button', { name: 'Good answer' }).click()
  await page.locator('.message-assistant button[title="Good answer"][aria-pressed="true"]').waitFor()
  expect(await sameDocument(page)).toBe(true)

  // Follow up in the same thread.
  await page.getByLabel('Message', { exact: true }).fill('And the colours?')
  await page.getByRole('button', { name: 'Send' }).click()
  await answerStreamsIn(page, 'You said, in turn 2:\n\nAnd the colours?')
  expect(await page.locator('.message').count()).toBe(4)
  expect(await sameDocument(page)).toBe(true)
  // The rating is kept on the server, and shown after a reload.
  await page.reload()
  await page.locator('.message-assistant button[title="Good answer"][aria-pressed="true"]').waitFor()

  // A message's app_url scrolls to it and highlights it.
  const messages = (await (await api(site, `/threads/${threadId}/messages`)).json()) as {
    data: { id: string; app_url: string }[]
  }
  const first = messages.data[1] ?? { id: '', app_url: '' }
  expect(first.app_url).toBe(`${site.url}/threads/${threadId}#message-${first.id}`)
  await page.setViewportSize({ width: 800, height: 400 })
  await page.goto(first.app_url)
  const target = page.locator(':target')
  expect(await target.getAttribute('id')).toBe(`message-${first.id}`)
  expect(
    await target.evaluate((element) => (globalThis as unknown as PageWindow).getComputedStyle(element).outlineStyle),
  ).toBe('solid')
  const box = await target.boundingBox()
  expect(box && box.y >= 0 && box.y < 400).toBe(true)

  expect(dialogs).toEqual([])
  expect(session.errors).toEqual([])
})

test.concurrent('rename, archive, make private, and stop a running answer', async () => {
  await using session = await open(site.url)
  const { page } = session
  await signIn(page)
  await page.getByLabel('Message', { exact: true }).fill('Short start')
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await answerStreamsIn(page, 'You said, in turn 1:')
  await markDocument(page)

  await threadOptions(page)
  await page.getByLabel('Name', { exact: true }).fill('Renamed thread')
  await page.getByRole('button', { name: 'Save name' }).click()
  await page.getByRole('heading', { level: 1, name: 'Renamed thread' }).waitFor()
  // The sidebar shows the new name too.
  await page.locator('.thread-link[aria-current="page"]', { hasText: 'Renamed thread' }).waitFor()
  await threadOptions(page)
  await page.getByRole('button', { name: 'Archive' }).click()
  await page.getByRole('button', { name: 'Unarchive' }).waitFor()
  await page.getByRole('button', { name: 'Make private' }).click()
  await page.getByRole('button', { name: 'Make public' }).waitFor()
  expect(await page.locator('.thread-header .badge').allTextContents()).toEqual(['Ready', 'Private', 'Archived'])
  expect(await sameDocument(page)).toBe(true)
  // The menu stays open over the composer until it is closed, as a person closes it: with Escape.
  await page.keyboard.press('Escape')
  expect(await page.locator('.thread-tools').getAttribute('open')).toBeNull()

  // A long message: its echo takes seconds, and Stop ends it part way, keeping what was written.
  const words = Array.from({ length: 60 }, (_, index) => `word${index}`).join(' ')
  await page.getByLabel('Message', { exact: true }).fill(words)
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForFunction(() =>
    (globalThis as unknown as PageWindow).document
      .querySelector('#live-answer .live-text')
      ?.textContent?.includes('word1 '),
  )
  // Stop sits in the composer in place of Send while the answer is written.
  expect(await page.getByRole('button', { name: 'Send' }).isVisible()).toBe(false)
  await page.getByRole('button', { name: 'Stop' }).click()
  await page.locator('.message-assistant .stopped-note').waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  const last = (await page.locator('.message-assistant .markdown').last().textContent()) ?? ''
  expect(last).toStartWith('You said, in turn 2:\n\nword0')
  expect(last).not.toContain('word59')
  expect(await page.locator('.message-assistant').last().locator('.stopped-note').textContent()).toBe('Stopped')
  await page.getByRole('button', { name: 'Send' }).waitFor()
  expect(await sameDocument(page)).toBe(true)
  expect(session.errors).toEqual([])
})

test.concurrent('markup typed into every field stays text: names, messages, files, comments, search', async () => {
  await using session = await open(site.url)
  const { page } = session
  const dialogs: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  await signIn(page)
  const payload = `<img src=x onerror="window.__xss=1;alert(1)"><script>window.__xss=2;alert(2)</script>`
  await page.getByLabel('Message', { exact: true }).fill(`${payload} [link](javascript:alert(3)) **bold**`)
  await page.getByText('Options', { exact: true }).click()
  await page.getByLabel(/^Name/).fill(payload)
  await page.locator('#composer-files').setInputFiles({
    name: '<svg onload=alert(4)>.txt',
    mimeType: 'text/plain',
    buffer: Buffer.from('hello'),
  })
  await page.getByRole('button', { name: 'Send' }).click()
  await answerStreamsIn(page, 'You said, in turn 1:')
  await page.getByRole('heading', { level: 1, name: payload }).waitFor()
  const answer = page.locator('.message-assistant').first()
  await answer.getByText('Add a comment').click()
  await answer.getByLabel(/Comment/).fill(`</textarea>${payload}`)
  await answer.getByRole('button', { name: 'Good answer' }).click()
  await page.locator('.message-assistant button[title="Good answer"][aria-pressed="true"]').waitFor()
  expect(await page.locator('.message-assistant textarea').first().inputValue()).toBe(`</textarea>${payload}`)
  expect(await page.locator('.message-user strong').textContent()).toBe('bold')
  expect(await page.getByText('<svg onload=alert(4)>.txt').first().isVisible()).toBe(true)

  const injected = () =>
    page.evaluate(() => {
      const { document, __xss } = globalThis as unknown as PageWindow
      return {
        xss: __xss ?? null,
        handlers: document.querySelectorAll('[onerror], [onload]').length,
        scripts: [...document.scripts].map((script) => script.getAttribute('src')),
        javascriptLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
      }
    })
  const bundled = [
    expect.stringMatching(/^\/assets\/client\/theme-/),
    expect.stringMatching(/^\/assets\/client\/chat-/),
  ]
  const clean = { xss: null, handlers: 0, scripts: bundled, javascriptLinks: 0 }
  expect(await injected()).toEqual(clean)

  await page.goto(`/threads?q=${encodeURIComponent(payload)}`)
  expect(await page.getByLabel('Search', { exact: true }).inputValue()).toBe(payload)
  await page.goto('/threads')
  await page.getByRole('link', { name: payload }).first().waitFor()
  expect(await injected()).toEqual(clean)
  expect(dialogs).toEqual([])
  expect(session.errors).toEqual([])
})

test.concurrent('a thread in error continues in a new thread that starts with an extract of the old one', async () => {
  // A provider that cannot be reached: every answer fails at once, and the thread moves to error.
  await using broken = await startSite({
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1`,
    LLM_API_KEY: 'unused',
    LLM_MODEL: 'none',
    LLM_MAX_ATTEMPTS: '1',
  })
  await using session = await open(broken.url)
  const { page } = session
  await signIn(page)
  await page.getByLabel('Message', { exact: true }).fill('Plan a weekend in Lyon')
  await page.getByText('Options', { exact: true }).click()
  await page.getByLabel(/^Name/).fill('Lyon')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.getByRole('heading', { name: 'The answer failed' }).waitFor()
  // In a person's words (the operator's sentence below it is for the administrator, who this is).
  expect(await page.locator('.failure p').first().textContent()).toBe('Could not reach the AI provider.')
  expect(await page.locator('.admin-hint').textContent()).toContain('the model’s base URL is right')
  // A thread in error takes no more messages: the composer goes.
  await page.locator('#composer').waitFor({ state: 'detached' })
  await page.getByRole('button', { name: 'Continue in a new thread' }).click()
  await page.getByRole('heading', { level: 1, name: 'Lyon (continued)' }).waitFor()
  const summary = page.locator('.message-summary')
  expect(await summary.locator('strong').first().textContent()).toBe(
    'Continued from “Lyon”, which stopped with an error:',
  )
  expect(await summary.locator('blockquote').first().textContent()).toContain('Plan a weekend in Lyon')
  // The unanswered question is asked again in the new thread; the provider is still unreachable, so it fails in
  // the same words, and the person sees it without reloading.
  expect(await page.locator('.message-user').textContent()).toContain('Plan a weekend in Lyon')
  await page.getByRole('heading', { name: 'The answer failed' }).waitFor()
  expect(await page.locator('.failure p').first().textContent()).toBe('Could not reach the AI provider.')
})

test.concurrent('sign in with the OpenID Connect provider from the sign-in page', async () => {
  await using provider = await startFakeOidcProvider()
  await using withOidc = await startSite({
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: provider.clientId,
    OIDC_CLIENT_SECRET: provider.clientSecret,
    OIDC_NAME: 'Example ID',
  })
  await using session = await open(withOidc.url)
  const { page } = session
  await page.goto('/')
  await page.getByRole('link', { name: 'Sign in with Example ID' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  await page.getByRole('heading', { level: 1, name: 'New thread' }).waitFor()
  expect(await page.getByText(email).textContent()).toBe(email)
  expect(session.errors).toEqual([])
})
