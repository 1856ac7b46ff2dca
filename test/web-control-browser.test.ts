// Conversation control in real headless Chromium against the real server process: editing a message in place (Enter
// saves and sends, Escape cancels) with its answer streaming where it stands, Regenerate, `‹ 2/2 ›` switching versions
// without a reload, Retry after a provider failure, the composer's model picker and the model named under each answer,
// all by keyboard alone, and the same by plain form posts with JavaScript off. Waits on conditions only.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContextOptions, Page } from 'playwright-core'
import { type BrowserSession, type SignedIn, sharedBrowser } from './support/browser'
import { FakeLlm, openaiError, openaiText, sse } from './support/fake-llm'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'

const email = 'hedy@example.com'
const password = 'correct horse battery'

/** The little of the DOM these page functions touch: the project's TypeScript has no DOM library. */
interface PageWindow {
  __sameDocument?: boolean
  document: {
    activeElement: { id: string; className: string; tagName: string } | null
    getElementById(id: string): unknown
  }
}

interface Site extends AsyncDisposable {
  url: string
  signedIn: SignedIn
}

const browser = sharedBrowser()

async function startSite(env: Record<string, string> = {}): Promise<Site> {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-control-'))
  const server: ServerProcess = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    ECHO_TOKEN_DELAY_MS: '25',
    ...env,
  })
  await firstRunToken(server)
  const signedIn = await browser.signIn(server.url, email, password)
  return {
    url: server.url,
    signedIn,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Two models that answer by echo, so the picker has a choice and each answer names the one that wrote it. */
const twoModels = JSON.stringify([
  { id: 'swift', name: 'Swift Echo', provider: 'echo', model: 'echo', context_tokens: 8000, max_output_tokens: 1000 },
  {
    id: 'steady',
    name: 'Steady Echo',
    provider: 'echo',
    model: 'echo',
    context_tokens: 8000,
    max_output_tokens: 1000,
    default: true,
  },
])

let site: Site
beforeAll(async () => {
  site = await startSite({ LLM_MODELS: twoModels })
})
afterAll(async () => {
  await site?.[Symbol.asyncDispose]()
})

async function open(at: Site, options?: BrowserContextOptions): Promise<BrowserSession> {
  const session = await browser.open(at.url, { ...options, storageState: at.signedIn })
  await session.page.goto('/')
  await session.page.getByRole('heading', { level: 1, name: 'New thread' }).waitFor()
  if (options?.javaScriptEnabled !== false) {
    await session.page.evaluate(() => {
      ;(globalThis as unknown as PageWindow).__sameDocument = true
    })
  }
  return session
}

async function sameDocument(page: Page): Promise<boolean> {
  return page.evaluate(() => (globalThis as unknown as PageWindow).__sameDocument === true)
}

/** Waits until no answer is being written and the page shows `count` settled answers; returns the last one's text. */
async function settled(page: Page, count: number): Promise<string> {
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  await page
    .locator('.message-assistant:not(.live)')
    .nth(count - 1)
    .waitFor()
  expect(await page.locator('.message-assistant').count()).toBe(count)
  return (await page.locator('.message-assistant .message-body').last().textContent()) ?? ''
}

/** The text of the (one) user message shown, without the Markdown's trailing newline. */
async function userText(page: Page): Promise<string> {
  return ((await page.locator('.message-user .markdown').textContent()) ?? '').trim()
}

async function focused(page: Page): Promise<{ id: string; className: string; tagName: string } | null> {
  return page.evaluate(() => {
    const active = (globalThis as unknown as PageWindow).document.activeElement
    return active ? { id: active.id, className: active.className, tagName: active.tagName } : null
  })
}

/** Presses Tab (or Shift+Tab, going back up from the composer) until the focus is on the element with this ID. */
async function tabTo(page: Page, id: string, key: 'Tab' | 'Shift+Tab' = 'Tab', limit = 60): Promise<void> {
  for (let press = 0; press < limit; press++) {
    if ((await focused(page))?.id === id) return
    await page.keyboard.press(key)
  }
  throw new Error(`${key} never reached #${id}`)
}

test.concurrent('edit in place: Escape gives the message back, Enter saves and its answer streams where it stands; ‹ › switch without a reload', async () => {
  await using session = await open(site)
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('Name a colour')
  await page.keyboard.press('Enter')
  expect(await settled(page, 1)).toContain('Name a colour')

  // Escape cancels: the text is as it was, and the focus is back on Edit.
  await page.getByRole('link', { name: 'Edit the message' }).click()
  const editor = page.getByLabel('Edit the message', { exact: true }).and(page.locator('textarea'))
  await editor.waitFor()
  expect(await editor.inputValue()).toBe('Name a colour')
  await editor.fill('Something else')
  await page.keyboard.press('Escape')
  await editor.waitFor({ state: 'detached' })
  expect(await userText(page)).toBe('Name a colour')
  expect((await focused(page))?.id).toBe('edit-0')

  // Shift+Enter adds a line; Enter saves and sends, and the new answer streams in place.
  await page.getByRole('link', { name: 'Edit the message' }).click()
  await editor.fill('Name a fruit')
  await page.keyboard.press('Shift+Enter')
  await page.keyboard.type('and a colour')
  await page.keyboard.press('Enter')
  // In place (the same document, below), whether or not the page caught the short answer while it streamed.
  await page.locator('.message-user .version-count', { hasText: '2/2' }).waitFor()
  const answer = await settled(page, 1)
  expect(answer).toContain('Name a fruit')
  expect(answer).toContain('and a colour')
  expect(await page.locator('.message-user .version-count').textContent()).toBe('2/2')
  expect(await sameDocument(page)).toBe(true)

  // ‹ brings the first version back, with its own answer; › the edited one again.
  await page.locator('.message-user').getByRole('button', { name: 'Previous version' }).click()
  await page.locator('.message-user .version-count', { hasText: '1/2' }).waitFor()
  expect(await userText(page)).toBe('Name a colour')
  expect(await settled(page, 1)).toContain('Name a colour')
  await page.locator('.message-user').getByRole('button', { name: 'Next version' }).click()
  await page.locator('.message-user .version-count', { hasText: '2/2' }).waitFor()
  expect(await sameDocument(page)).toBe(true)
  expect(session.errors).toEqual([])
})

test.concurrent('regenerate streams a new answer in place; the model is named under each answer; the picker changes the next one', async () => {
  await using session = await open(site)
  const { page } = session
  // A new conversation's picker: the organization's default first chosen; another is taken with the first message.
  const picker = page.getByLabel('Model', { exact: true })
  expect(await picker.inputValue()).toBe('steady')
  await picker.selectOption('swift')
  await page.getByLabel('Message', { exact: true }).fill('Pick a number')
  await page.keyboard.press('Enter')
  await settled(page, 1)
  expect(await page.locator('.message-assistant .answer-model').textContent()).toBe('Swift Echo')
  expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('swift')

  // On a thread the choice is saved at once: the regenerated answer comes from the other model.
  await page.getByLabel('Model', { exact: true }).selectOption('steady')
  await page.locator('#thread-status', { hasText: 'The next answer comes from Steady Echo.' }).waitFor()
  await page.getByRole('button', { name: 'Regenerate the answer' }).click()
  await page.locator('.message-assistant .version-count', { hasText: '2/2' }).waitFor()
  await settled(page, 1)
  expect(await page.locator('.message-assistant .answer-model').textContent()).toBe('Steady Echo')
  expect(await page.locator('.message-assistant .version-count').textContent()).toBe('2/2')
  // The earlier answer is still there, with the model that wrote it.
  await page.getByRole('button', { name: 'Previous version' }).click()
  await page.locator('.message-assistant .version-count', { hasText: '1/2' }).waitFor()
  expect(await page.locator('.message-assistant .answer-model').textContent()).toBe('Swift Echo')
  // Reloaded, the picker shows the thread's model.
  await page.reload()
  expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('steady')
  expect(session.errors).toEqual([])
})

test.concurrent('keyboard only: Edit, Escape, Enter to save; Regenerate and the version arrows by Tab, the focus kept', async () => {
  await using session = await open(site)
  const { page } = session
  await page.keyboard.type('Keys only')
  await page.keyboard.press('Enter')
  await settled(page, 1)
  // From the composer, where the focus is after sending, back up through the conversation.
  expect((await focused(page))?.id).toBe('composer-text')
  await tabTo(page, 'edit-0', 'Shift+Tab')
  await page.keyboard.press('Enter')
  expect((await focused(page))?.id).toBe('edit-inline-text')
  await page.keyboard.press('Escape')
  expect((await focused(page))?.id).toBe('edit-0')
  await page.keyboard.press('Enter')
  await page.keyboard.press('Control+A')
  await page.keyboard.type('Keys and more')
  await page.keyboard.press('Enter')
  // The edit is in once the message shows its second version (its answer may have streamed before the page looked).
  await page.locator('.message-user .version-count', { hasText: '2/2' }).waitFor()
  expect(await settled(page, 1)).toContain('Keys and more')
  // The focus comes back to the Edit of the message once its answer is in.
  await page.waitForFunction(() => (globalThis as unknown as PageWindow).document.activeElement?.id === 'edit-0')

  await tabTo(page, 'versions-0-previous', 'Shift+Tab')
  await page.keyboard.press('Enter')
  await page.locator('.message-user .version-count', { hasText: '1/2' }).waitFor()
  // The arrow keeps the focus across the swap, so the next press goes on from there.
  expect((await focused(page))?.id).toBe('versions-0-previous')
  await page.keyboard.press('Tab')
  expect((await focused(page))?.id).toBe('versions-0-next')
  await page.keyboard.press('Space')
  await page.locator('.message-user .version-count', { hasText: '2/2' }).waitFor()

  await tabTo(page, 'regenerate-1')
  await page.keyboard.press('Enter')
  await page.locator('.message-assistant .version-count', { hasText: '2/2' }).waitFor()
  await settled(page, 1)
  await page.waitForFunction(() => (globalThis as unknown as PageWindow).document.activeElement?.id === 'regenerate-1')
  expect(await page.locator('.message-assistant .version-count').textContent()).toBe('2/2')
  expect(await sameDocument(page)).toBe(true)
  expect(session.errors).toEqual([])
})

test.concurrent('without JavaScript: edit on its page, regenerate and switch versions by plain form posts', async () => {
  await using session = await open(site, { javaScriptEnabled: false })
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('Plain first')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForURL(/\/threads\/[0-9a-f-]{36}#live-answer$/)
  const threadUrl = page.url().split('#')[0] ?? ''
  /** Reads the page again until its answer is written. */
  const reloadUntilAnswered = async (): Promise<void> => {
    for (;;) {
      await page.goto(threadUrl)
      if ((await page.locator('#live-answer').count()) === 0) return
      await page.locator('#live-answer noscript').waitFor({ state: 'attached' })
    }
  }
  await reloadUntilAnswered()

  await page.getByRole('link', { name: 'Edit the message' }).click()
  await page.getByRole('heading', { level: 1, name: 'Edit your message' }).waitFor()
  expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('Plain first')
  await page.getByLabel('Message', { exact: true }).fill('Plain second')
  await page.getByRole('button', { name: 'Save and send' }).click()
  await page.waitForURL(/#live-answer$/)
  await reloadUntilAnswered()
  expect(await userText(page)).toBe('Plain second')
  expect(await page.locator('.message-user .version-count').textContent()).toBe('2/2')

  await page.getByRole('button', { name: 'Regenerate the answer' }).click()
  await reloadUntilAnswered()
  expect(await page.locator('.message-assistant .version-count').textContent()).toBe('2/2')

  await page.locator('.message-user').getByRole('button', { name: 'Previous version' }).click()
  await page.waitForURL(/#message-[0-9a-f-]{36}$/)
  expect(await userText(page)).toBe('Plain first')
  expect(await page.locator('.message-user .version-count').textContent()).toBe('1/2')

  // The model goes with the next message: the picker is part of the composer's form.
  await page.getByLabel('Model', { exact: true }).selectOption('swift')
  await page.getByLabel('Message', { exact: true }).fill('Plain third')
  await page.getByRole('button', { name: 'Send' }).click()
  await reloadUntilAnswered()
  expect(await page.locator('.message-assistant .answer-model').last().textContent()).toBe('Swift Echo')
  expect(session.errors).toEqual([])
})

test.concurrent('a failed answer says what happened, and Retry streams a new one in place', async () => {
  // An upstream that refuses the first request and answers the second.
  await using upstream = new FakeLlm()
  upstream.reply(
    () => openaiError(400, { message: 'The model is overloaded', type: 'invalid_request_error', code: null }),
    () => sse(openaiText(['Second ', 'time ', 'lucky.'])),
  )
  await using broken = await startSite({
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: `${upstream.url}/v1`,
    LLM_API_KEY: 'unused',
    LLM_MODEL: 'fake',
    LLM_MAX_ATTEMPTS: '1',
  })
  await using session = await open(broken)
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('Try me')
  await page.keyboard.press('Enter')
  await page.getByRole('heading', { name: 'The answer failed' }).waitFor()
  expect(await page.locator('.failure p').first().textContent()).not.toBe('')
  await page.getByRole('button', { name: 'Retry' }).click()
  expect(await settled(page, 1)).toContain('Second time lucky.')
  expect(await page.locator('.failure').count()).toBe(0)
  // The thread goes on: the composer is back.
  await page.getByLabel('Message', { exact: true }).waitFor()
  expect(await sameDocument(page)).toBe(true)
  expect(upstream.received.length).toBe(2)
})

test.concurrent('axe finds no accessibility problem with versions, the picker, the editor and the instructions, light or dark', async () => {
  // axe runs as a page script: the test's context bypasses the page's CSP to inject it (the pages never load it).
  await using session = await open(site, { bypassCSP: true })
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('Check me')
  await page.keyboard.press('Enter')
  await settled(page, 1)
  await page.getByRole('button', { name: 'Regenerate the answer' }).click()
  await page.locator('.message-assistant .version-count', { hasText: '2/2' }).waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  const source = await Bun.file(require.resolve('axe-core/axe.min.js')).text()
  const problems: string[] = []
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.reload()
    await page.getByRole('link', { name: 'Edit the message' }).click()
    await page.locator('#edit-inline-text').waitFor()
    await page.locator('.thread-tools summary').click()
    await page.getByLabel('Instructions').waitFor()
    await page.addScriptTag({ content: source })
    const violations = await page.evaluate(async () => {
      const { axe } = globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> }
      }
      const result = await axe.run()
      return result.violations.map(
        (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      )
    })
    problems.push(...violations.map((violation) => `${scheme} ${violation}`))
  }
  expect(problems).toEqual([])
})
