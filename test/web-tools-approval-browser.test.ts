// An approval through the thread page in headless Chromium (issue 38), end to end: the real worker asks a fake
// OpenAI-compatible provider, the real MCP client calls a real MCP server (support/tools-app.ts), and the person
// answers the approval question with its buttons. Allow makes the one call and the next answer streams in; Deny makes
// none, and the model is told. Waits on the page's state, never on time.
// UPDATE_SCREENSHOTS=1 also writes docs/screenshots/thread-approval-light.png (the question with its buttons) and
// thread-approval-allowed-light.png (the call made, opened, and the answer that went on).
import { expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { createSession } from '../src/auth/sessions'
import { cookieNames } from '../src/web'
import { signInOrigin, tokenHolder } from './support/audit'
import { type BrowserSession, sharedBrowser } from './support/browser'
import { Feed, openaiChunk, openaiText } from './support/fake-llm'
import { listening, publicUrl } from './support/helpers'
import { callsOf, deletePage, type ToolsApp, told, toolsApp } from './support/tools-app'

const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')
const shots = process.env.UPDATE_SCREENSHOTS === '1'

/** The upstream's `tools/call` requests so far: what it was asked to run. */
const callsMade = (s: ToolsApp) => s.up.requests.filter((request) => request.rpc === 'tools/call').length

/** A browser signed in as the app's user, on a desktop screen in the light scheme. */
async function signedInPage(s: ToolsApp, origin: string): Promise<BrowserSession> {
  const { token } = await createSession(
    s.h.store.sessions,
    await tokenHolder(s.h.store, s.user.id),
    s.h.clock.now(),
    signInOrigin,
    'password',
  )
  const session = await sharedBrowser().open(origin)
  await session.context.addCookies([{ name: cookieNames(publicUrl).session, value: token, url: origin }])
  await session.page.setViewportSize({ width: 1280, height: 900 })
  await session.page.emulateMedia({ colorScheme: 'light' })
  return session
}

/**
 * Starts a thread asking to delete a page; the model calls `delete_page`, which asks first. Returns once the page
 * shows the question with its buttons.
 */
async function askToDelete(s: ToolsApp, page: Page, name = '7'): Promise<void> {
  s.fake.reply(s.vendor.calls(['I will delete that page of the documentation.'], [deletePage('call_d1', name)]))
  await page.goto('/')
  await page.getByLabel('Message', { exact: true }).fill(`Please delete page ${name} of the docs`)
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await page.locator('.choice-form').getByRole('button', { name: 'Allow' }).waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
}

/**
 * The next reply streamed in two parts: the test sees the first on the page before it lets the rest come, so that
 * the answer is seen streaming rather than only arriving whole.
 */
function streamedReply(s: ToolsApp, first: string, rest: string): { end(): void } {
  const [start, ...after] = openaiText([first, rest])
  const feed = new Feed([start as string, openaiChunk({ content: first })])
  s.fake.reply(() => feed.response())
  return {
    end() {
      // The whole text's pieces but the first token, already sent.
      feed.send(...after.slice(1))
      feed.end()
    },
  }
}

test('Allow on the page makes the call once and the answer streams on; the call opens to its arguments and result', async () => {
  await using s = await toolsApp('openai')
  await using served = listening(s.h)
  await using session = await signedInPage(s, served.url.origin)
  const { page } = session
  await askToDelete(s, page)

  // The answer ends with the question and its two choices; nothing ran yet.
  const question = page.locator('.message-assistant').last()
  expect(await question.locator('.choice-question').textContent()).toBe('Allow delete_page on docs with {"page":"7"}?')
  expect(await question.locator('.choice-form button').allTextContents()).toEqual(['Allow', 'Deny'])
  expect(await question.locator('.tool-call summary').textContent()).toBe(
    'Waiting for your choice: delete_page on docs',
  )
  expect({ deletes: s.up.deletes, calls: callsMade(s) }).toEqual({ deletes: 0, calls: 0 })
  if (shots) {
    mkdirSync(screenshotDir, { recursive: true })
    await page.screenshot({ path: join(screenshotDir, 'thread-approval-light.png') })
  }

  const reply = streamedReply(s, 'Page 7 is gone', ': the documentation no longer has it.')
  await question.locator('.choice-form').getByRole('button', { name: 'Allow' }).click()
  // The choice shows as the person's message, and the answer streams in beneath it.
  await page.locator('.message-user').last().getByText('Allow', { exact: true }).waitFor()
  await page.locator('#live-answer', { hasText: 'Page 7 is gone' }).waitFor()
  reply.end()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  await page
    .locator('.message-assistant:not(.live)')
    .nth(1)
    .getByText('Page 7 is gone: the documentation no longer has it.')
    .waitFor()
  expect({ deletes: s.up.deletes, calls: callsMade(s) }).toEqual({ deletes: 1, calls: 1 })
  // No question is left to answer.
  expect(await page.locator('.choice-form').count()).toBe(0)

  // The question's answer shows the call as made, opening to what was sent and what came back, and whose reply
  // allowed it.
  const [call] = await callsOf(s.h, page.url().split('/threads/')[1] as string)
  expect(call).toMatchObject({ status: 'ok', result: 'Deleted 7' })
  const disclosure = page.locator(`#tool-call-${call?.id}`)
  const line = (await disclosure.locator('summary').textContent()) ?? ''
  expect(line).toMatch(/^Used delete_page on docs · \d+ ms$/)
  expect(line).toBe(`Used delete_page on docs · ${call?.durationMs} ms`)
  await disclosure.locator('summary').click()
  await disclosure.locator('pre.tool-call-text').first().waitFor()
  expect(await disclosure.locator('pre.tool-call-text').allTextContents()).toEqual(['{\n  "page": "7"\n}', 'Deleted 7'])
  expect(await disclosure.locator('.tool-call-note').textContent()).toBe('Allowed by your reply.')
  if (shots) {
    // To the end of the conversation, where the answer that went on is.
    await page.evaluate(() => {
      const { document } = globalThis as unknown as {
        document: { scrollingElement: { scrollTo(x: number, y: number): void; scrollHeight: number } }
      }
      document.scrollingElement.scrollTo(0, document.scrollingElement.scrollHeight)
    })
    await page.screenshot({ path: join(screenshotDir, 'thread-approval-allowed-light.png') })
  }
  expect(session.errors).toEqual([])
})

test('Deny on a phone makes no call; the model is told, and the call shows as denied', async () => {
  await using s = await toolsApp('openai')
  await using served = listening(s.h)
  await using session = await signedInPage(s, served.url.origin)
  const { page } = session
  await page.setViewportSize({ width: 390, height: 844 })
  // Arguments with nowhere to break, which the question ends with: it wraps within the screen all the same.
  const long = `https://docs.example.com/${'section/'.repeat(40)}`
  await askToDelete(s, page, long)
  const question = page.locator('.choice-question')
  expect(await question.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true)
  const box = await question.boundingBox()
  expect(box && box.x + box.width <= 390).toBe(true)

  const reply = streamedReply(s, 'Understood', ', page 7 stays.')
  await page.locator('.choice-form').getByRole('button', { name: 'Deny' }).click()
  await page.locator('#live-answer', { hasText: 'Understood' }).waitFor()
  reply.end()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  await page.locator('.message-assistant:not(.live)').nth(1).getByText('Understood, page 7 stays.').waitFor()
  expect({ deletes: s.up.deletes, calls: callsMade(s) }).toEqual({ deletes: 0, calls: 0 })
  expect(told(s.fake.received[1])).toContain("The thread's owner denied this call.")

  const disclosure = page.locator('.message-assistant').first().locator('details.tool-call')
  expect(await disclosure.locator('summary').textContent()).toBe('Denied delete_page on docs')
  expect(await disclosure.getAttribute('class')).toBe('tool-call troubled')
  await disclosure.locator('summary').click()
  await disclosure.locator('pre.tool-call-text').first().waitFor()
  expect(await disclosure.locator('.tool-call-note').textContent()).toBe('Denied by your reply.')
  expect(await disclosure.locator('pre.tool-call-text').allTextContents()).toEqual([
    `{\n  "page": "${long}"\n}`,
    "The thread's owner denied this call.",
  ])
  expect(session.errors).toEqual([])
})
