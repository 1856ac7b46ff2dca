// The chat's own behaviour in real headless Chromium against the real server process: the composer by keyboard
// alone (Enter sends, Shift+Enter adds a line, an IME's Enter is left alone), Markdown with highlighted code and
// working copy buttons, file chips by picker, drop and paste with refusals explained beside the composer, a phone's
// width with nothing scrolling sideways, and times in the browser's own time zone. Waits on conditions only.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContextOptions, Page } from 'playwright-core'
import sharp from 'sharp'
import { type BrowserSession, clipboardHolds, type SignedIn, sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'

const email = 'grace@example.com'
const password = 'correct horse battery'

/** The little of the DOM these page functions touch: the project's TypeScript has no DOM library. */
interface PageWindow {
  document: {
    querySelector(selector: string): { querySelector(selector: string): unknown } | null
    documentElement: { scrollWidth: number; clientWidth: number; scrollHeight: number }
    activeElement: { id: string; blur(): void } | null
    getElementById(id: string): { dispatchEvent(event: unknown): boolean } | null
  }
  navigator: { clipboard: { readText(): Promise<string> } }
  DataTransfer: new () => { items: { add(file: unknown): void }; files: unknown }
  File: new (parts: string[], name: string, options: { type: string }) => unknown
  DragEvent: new (type: string, init: Record<string, unknown>) => unknown
  ClipboardEvent: new (type: string, init: Record<string, unknown>) => unknown
  KeyboardEvent: new (type: string, init: Record<string, unknown>) => unknown
  scrollY: number
  innerHeight: number
  scrollTo(x: number, y: number): void
  __sameDocument?: boolean
  __seen?: { bold: boolean; code: boolean }
  MutationObserver: new (callback: () => void) => { observe(target: unknown, options: Record<string, boolean>): void }
}

const browser = sharedBrowser()
let server: ServerProcess
let dir: string
/**
 * The cookies of one sign-in, which every test's fresh context starts with: signing in is web-e2e.test.ts's subject,
 * and nine more sign-ins here cost nine argon2 checks and page loads that test nothing new.
 */
let signedInState: SignedIn
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-chat-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    // Slow enough that an answer is still streaming when a page on a loaded machine (CI beside another run) starts
    // to follow it: at 5 ms a word the follow and Markdown tests sometimes met only the finished answer.
    ECHO_TOKEN_DELAY_MS: '25',
  })
  // Listening comes before the first run has created the owner: signing in any sooner may find no account.
  await firstRunToken(server)
  signedInState = await browser.signIn(server.url, email, password)
})
afterAll(async () => {
  await server?.[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
})

async function signedIn(options?: BrowserContextOptions): Promise<BrowserSession> {
  const session = await browser.open(server.url, { ...options, storageState: signedInState })
  const { page } = session
  await page.goto('/')
  await page.getByRole('heading', { level: 1, name: 'New thread' }).waitFor()
  await page.evaluate(() => {
    ;(globalThis as unknown as PageWindow).__sameDocument = true
  })
  return session
}

/** Waits for the page's nth answer (from 0) to be complete and settled. */
async function answer(page: Page, index: number): Promise<string> {
  const settled = page.locator('.message-assistant:not(.live)').nth(index)
  await settled.waitFor()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  return (await settled.locator('.message-body').textContent()) ?? ''
}

test.concurrent('keyboard only: focus starts in the composer, Shift+Enter adds a line, IME Enter waits, Enter sends; the sidebar by Tab', async () => {
  await using session = await signedIn()
  const { page } = session
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).document.activeElement?.id)).toBe(
    'composer-text',
  )
  await page.keyboard.type('First line')
  await page.keyboard.press('Shift+Enter')
  await page.keyboard.type('second line')
  // An input method confirming a word sends Enter with isComposing: that is no send.
  await page.evaluate(() => {
    const { KeyboardEvent, document } = globalThis as unknown as PageWindow
    const enter = new KeyboardEvent('keydown', { key: 'Enter', isComposing: true, bubbles: true, cancelable: true })
    document.getElementById('composer-text')?.dispatchEvent(enter)
  })
  expect(await page.locator('#composer-text').inputValue()).toBe('First line\nsecond line')
  expect(await page.locator('.message-user').count()).toBe(0)
  await page.keyboard.press('Enter')
  // The message shows at once, before its answer.
  await page.locator('.message-user').first().waitFor()
  const text = await answer(page, 0)
  expect(text).toContain('You said, in turn 1:\n\nFirst line')
  expect(page.url()).toMatch(/\/threads\/[0-9a-f-]{36}$/)
  expect(await page.locator('#composer-text').inputValue()).toBe('')
  // Focus is back in the composer for the next message, typed and sent by keyboard again.
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).document.activeElement?.id)).toBe(
    'composer-text',
  )
  await page.keyboard.type('Again')
  await page.keyboard.press('Enter')
  expect(await answer(page, 1)).toContain('You said, in turn 2:\n\nAgain')
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).__sameDocument)).toBe(true)
  // The new thread is in the sidebar, marked as the open one, named after its first line.
  expect(await page.locator('.thread-link[aria-current="page"]').textContent()).toBe('First line')
  const threadPath = new URL(page.url()).pathname

  // The sidebar by keyboard: Tab from the top of the page reaches "New thread", and Enter opens it.
  const focused = () =>
    page.evaluate(() => {
      const active = (globalThis as unknown as PageWindow).document.activeElement as {
        textContent: string | null
      } | null
      return active?.textContent?.trim() ?? ''
    })
  await page.evaluate(() => (globalThis as unknown as PageWindow).document.activeElement?.blur())
  for (let presses = 0; presses < 10 && (await focused()) !== 'New thread'; presses++) await page.keyboard.press('Tab')
  expect(await focused()).toBe('New thread')
  await page.keyboard.press('Enter')
  await page.waitForURL((url) => url.pathname === '/')
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).document.activeElement?.id)).toBe(
    'composer-text',
  )
  // …and Tab on from the search box reaches the thread, which Enter opens again.
  await page.getByLabel('Search', { exact: true }).focus()
  for (let presses = 0; presses < 20 && (await focused()) !== 'First line'; presses++) await page.keyboard.press('Tab')
  expect(await focused()).toBe('First line')
  await page.keyboard.press('Enter')
  await page.waitForURL((url) => url.pathname === threadPath)
  expect(session.errors).toEqual([])
})

test.concurrent('Markdown streams as Markdown; code is highlighted; the copy buttons copy', async () => {
  await using session = await signedIn()
  const { page, context } = session
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
  // Records what the answer being written showed: Markdown while it streams, never raw marks.
  await page.evaluate(() => {
    const page = globalThis as unknown as PageWindow
    page.__seen = { bold: false, code: false }
    new page.MutationObserver(() => {
      const live = page.document.querySelector('#live-answer .live-text')
      if (!page.__seen || !live) return
      page.__seen.bold ||= live.querySelector('strong') !== null
      page.__seen.code ||= live.querySelector('.code-block code.hljs') !== null
    }).observe(page.document, { childList: true, subtree: true, characterData: true })
  })
  const code = 'const total = [1, 2].reduce((a, b) => a + b, 0)\nconsole.log(total)'
  // Words after the code keep the answer streaming a while after the code block has arrived.
  const after = Array.from({ length: 40 }, (_, index) => `more${index}`).join(' ')
  // Marks that HTML would take for markup, and a table, whose Markdown the copy must give back as written.
  const written = `Some **bold** words <b>&amp;</b>\n\n\`\`\`js\n${code}\n\`\`\`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n${after}`
  await page.getByLabel('Message', { exact: true }).fill(written)
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await answer(page, 0)
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).__seen)).toEqual({ bold: true, code: true })
  const reply = page.locator('.message-assistant').first()
  expect(await reply.locator('strong').first().textContent()).toBe('bold')
  const block = reply.locator('.code-block')
  expect(await block.locator('.code-language').textContent()).toBe('js')
  expect(await block.locator('code.hljs .hljs-keyword').first().textContent()).toBe('const')
  expect(await block.locator('code').textContent()).toStartWith(code)

  await block.getByRole('button', { name: 'Copy' }).click()
  await clipboardHolds(page, `${code}\n`)

  // "Copy the message" copies its Markdown as written, not the page's text with the code block's labels: the
  // answer just streamed, and the question it answers.
  await reply.getByRole('button', { name: 'Copy the message' }).click()
  const quoted = written
    .split('\n')
    .map((line) => (line === '' ? '>' : `> ${line}`))
    .join('\n')
  await clipboardHolds(page, `You said, in turn 1:\n\n${quoted}`)
  await page.locator('.message-user').getByRole('button', { name: 'Copy the message' }).click()
  await clipboardHolds(page, written)
  expect(session.errors).toEqual([])
})

test.concurrent('files become chips by picker, drop and paste; a refused file is explained and the rest kept', async () => {
  await using session = await signedIn()
  const { page } = session
  const image = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c33' } })
    .png()
    .toBuffer()
  await page.getByLabel('Message', { exact: true }).fill('Here are my files')
  await page.locator('#composer-files').setInputFiles([
    { name: 'red.png', mimeType: 'image/png', buffer: image },
    { name: 'tool.exe', mimeType: 'application/x-msdownload', buffer: Buffer.from('MZ') },
  ])
  const chips = page.locator('.chip')
  await chips.first().waitFor()
  expect(await chips.allTextContents()).toEqual(['red.png×'])
  expect(await page.locator('.chip img').count()).toBe(1)
  expect(await page.locator('#composer-error').textContent()).toBe(
    'tool.exe cannot be sent: only JPEG, PNG, GIF or WebP images, PDFs, and text, Markdown or CSV files.',
  )

  // Dropped and pasted files join the chips.
  await page.evaluate(() => {
    const { DataTransfer, File, DragEvent, ClipboardEvent, document } = globalThis as unknown as PageWindow
    const dropped = new DataTransfer()
    dropped.items.add(new File(['# Notes'], 'notes.md', { type: 'text/markdown' }))
    document
      .getElementById('composer')
      ?.dispatchEvent(new DragEvent('drop', { dataTransfer: dropped, bubbles: true, cancelable: true }))
    const pasted = new DataTransfer()
    pasted.items.add(new File(['a,b'], 'table.csv', { type: 'text/csv' }))
    document
      .getElementById('composer-text')
      ?.dispatchEvent(new ClipboardEvent('paste', { clipboardData: pasted, bubbles: true, cancelable: true }))
  })
  await chips.nth(2).waitFor()
  expect(await page.locator('.chip-name').allTextContents()).toEqual(['red.png', 'notes.md', 'table.csv'])
  await page.getByRole('button', { name: 'Remove notes.md' }).click()
  expect(await page.locator('.chip-name').allTextContents()).toEqual(['red.png', 'table.csv'])
  expect(await page.locator('#composer-error').isVisible()).toBe(false)

  // The server refuses a file whose bytes are not what it claims: said beside the composer, the text and the
  // files kept, the refused one marked.
  await page.locator('#composer-files').setInputFiles({
    name: 'fake.png',
    mimeType: 'image/png',
    buffer: Buffer.from('not an image'),
  })
  await chips.nth(2).waitFor()
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.chip.refused').waitFor()
  expect(await page.locator('#composer-error').textContent()).toBe("fake.png isn't a PNG image: its contents are text.")
  expect(await page.locator('.chip.refused .chip-name').textContent()).toBe('fake.png')
  expect(await page.locator('#composer-text').inputValue()).toBe('Here are my files')
  expect(await page.locator('.message-user').count()).toBe(0)

  await page.getByRole('button', { name: 'Remove fake.png' }).click()
  await page.getByRole('button', { name: 'Send' }).click()
  expect(await answer(page, 0)).toContain('Attached: red.png (image/png), table.csv (text/csv).')
  expect(await page.locator('.chip').count()).toBe(0)
  expect(await page.evaluate(() => (globalThis as unknown as PageWindow).__sameDocument)).toBe(true)
  expect(session.errors.filter((error) => !error.includes('status of 4'))).toEqual([])
})

test.concurrent('a phone: Enter adds a line, tables scroll sideways, nothing else does; the sidebar folds away', async () => {
  await using session = await signedIn({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
  const { page } = session
  expect(await page.locator('#sidebar').isVisible()).toBe(false)
  // A touch keyboard's Enter is the only way to type a new line there: it adds one, and the button sends.
  const box = page.getByLabel('Message', { exact: true })
  await box.tap()
  await page.keyboard.type('Two lines')
  await page.keyboard.press('Enter')
  await page.keyboard.type('on a phone')
  expect(await box.inputValue()).toBe('Two lines\non a phone')
  expect(await page.locator('.message-user').count()).toBe(0)
  // …so the hint that Enter sends is not shown there.
  expect(await page.getByText('Enter sends, Shift+Enter adds a line.').isVisible()).toBe(false)
  const words = ['Internationalisation', 'Responsibilities', 'Accountabilities', 'Characteristics', 'Recommendations']
  const table = `| ${words.join(' | ')} |\n|${words.map(() => '---').join('|')}|\n| ${words.join(' | ')} |`
  const long = `${'x'.repeat(300)}\n\n\`\`\`\n${'y'.repeat(300)}\n\`\`\`\n\n${table}`
  await box.fill(long)
  await page.getByRole('button', { name: 'Send' }).tap()
  await answer(page, 0)
  // A wide table keeps its words whole, each on one line, and scrolls sideways in its own box.
  // Read from the document as it is now, not through a handle found a moment before: a change the feed reports just
  // after the answer's end swaps the conversation in again, and a measured node already replaced has no layout.
  const cells = await page.evaluate(() => {
    // Typed loosely: the project's TypeScript has no DOM library.
    const { document } = globalThis as unknown as {
      document: {
        createRange(): { selectNodeContents(node: unknown): void; getClientRects(): { length: number } }
        querySelector(s: string): unknown
      }
    }
    const element = document.querySelector('.message-assistant table') as {
      scrollWidth: number
      clientWidth: number
      querySelectorAll(s: string): unknown[]
    }
    const lines = [...element.querySelectorAll('th, td')].map((cell) => {
      const range = document.createRange()
      range.selectNodeContents(cell)
      return range.getClientRects().length
    })
    return { scrolls: element.scrollWidth > element.clientWidth, lines }
  })
  expect(cells).toEqual({ scrolls: true, lines: Array(words.length * 2).fill(1) })
  const overflow = () =>
    page.evaluate(() => {
      const { documentElement } = (globalThis as unknown as PageWindow).document
      return documentElement.scrollWidth - documentElement.clientWidth
    })
  expect(await overflow()).toBe(0)
  await page.getByRole('link', { name: 'Threads' }).click()
  await page.locator('#sidebar').waitFor()
  // The other tests' threads are there too (one person); this one is marked as open.
  await page.locator('#sidebar .thread-link[aria-current="page"]').waitFor()
  expect(await overflow()).toBe(0)
  await page.getByRole('link', { name: 'Close the list' }).click()
  await page.locator('#sidebar').waitFor({ state: 'hidden' })
  expect(session.errors).toEqual([])
})

test.concurrent("times read in the browser's own time zone, relative when recent, exact on hover", async () => {
  await using session = await signedIn({ timezoneId: 'Asia/Tokyo', locale: 'en-US' })
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('What time is it?')
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await answer(page, 0)
  const time = page.locator('.message-assistant time').first()
  expect(await time.textContent()).toBe('just now')
  const utc = new Date((await time.getAttribute('datetime')) ?? '')
  const tokyo = new Intl.DateTimeFormat('en-US', {
    timeZone: 'Asia/Tokyo',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
  })
  const title = (await time.getAttribute('title')) ?? ''
  expect(title).toContain(tokyo.format(utc))
  expect(title).toContain('GMT+9')
  // A reload renders UTC on the server; the script rewrites it again.
  await page.reload()
  expect(await page.locator('.message-assistant time').first().getAttribute('title')).toContain('GMT+9')
  expect(session.errors).toEqual([])
})

test.concurrent('the view follows a streaming answer until the person scrolls up; a thread opens at its end', async () => {
  await using session = await signedIn({ viewport: { width: 900, height: 500 } })
  const { page } = session
  const position = () =>
    page.evaluate(() => {
      const { document, scrollY, innerHeight } = globalThis as unknown as PageWindow
      const live = document.querySelector('#live-answer .live-text') as { textContent: string | null } | null
      return {
        scrollY,
        atEnd: document.documentElement.scrollHeight - scrollY - innerHeight < 80,
        written: live?.textContent?.length ?? -1,
      }
    })
  const words = Array.from({ length: 300 }, (_, index) => `word${index}`).join(' ')
  await page.getByLabel('Message', { exact: true }).fill(words)
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await page.locator('#live-answer.writing').waitFor()
  // While it streams, the newest words stay in view.
  await page.waitForFunction(() => {
    const { document, scrollY, innerHeight } = globalThis as unknown as PageWindow
    const live = document.querySelector('#live-answer .live-text') as { textContent: string | null } | null
    return (live?.textContent?.length ?? 0) > 600 && document.documentElement.scrollHeight - scrollY - innerHeight < 80
  })
  await page.evaluate(() => (globalThis as unknown as PageWindow).scrollTo(0, 0))
  const before = await position()
  // More words arrive (or the answer ends); the view stays where the person put it.
  await page.waitForFunction((written) => {
    const { document } = globalThis as unknown as PageWindow
    const live = document.querySelector('#live-answer .live-text') as { textContent: string | null } | null
    return !live || (live.textContent?.length ?? 0) > written + 300
  }, before.written)
  expect((await position()).scrollY).toBe(0)
  await answer(page, 0)
  expect((await position()).scrollY).toBe(0)
  // Opened again, the thread shows its latest message.
  await page.reload()
  await page.waitForFunction(() => {
    const { document, scrollY, innerHeight } = globalThis as unknown as PageWindow
    return scrollY > 0 && document.documentElement.scrollHeight - scrollY - innerHeight < 80
  })
  expect(session.errors).toEqual([])
})

test.concurrent('axe finds no accessibility problem in the new conversation and a thread, light or dark', async () => {
  // axe runs as a page script: the test's context bypasses the page's CSP to inject it (the pages never load it).
  await using session = await signedIn({ bypassCSP: true })
  const { page } = session
  await page
    .getByLabel('Message', { exact: true })
    .fill('An answer with `code`, a [link](https://example.com) and:\n\n```js\nlet a = 1\n```')
  await page.getByLabel('Message', { exact: true }).press('Enter')
  await answer(page, 0)
  const source = await Bun.file(require.resolve('axe-core/axe.min.js')).text()
  const problems: string[] = []
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    for (const path of ['/', new URL(page.url()).pathname]) {
      await page.goto(path)
      await page.addScriptTag({ content: source })
      const violations = await page.evaluate(async () => {
        const { axe } = globalThis as unknown as {
          axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> }
        }
        const result = await axe.run()
        return result.violations.map(
          (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
        )
      })
      problems.push(...violations.map((violation) => `${scheme} ${path} ${violation}`))
    }
  }
  expect(problems).toEqual([])
})

test.concurrent('every code highlighting colour reads at 4.5:1 or more on the code background, light and dark', async () => {
  await using session = await signedIn({ bypassCSP: true })
  const { page } = session
  await page.addScriptTag({ content: await Bun.file(require.resolve('axe-core/axe.min.js')).text() })
  // A code block holding one token of each kind the stylesheet colours, nested as its selectors say.
  const kinds = await page.evaluate(() => {
    // Typed loosely: the project's TypeScript has no DOM library.
    interface Element {
      id: string
      className: string
      textContent: string
      append(...nodes: Element[]): void
    }
    const { document } = globalThis as unknown as {
      document: {
        styleSheets: Iterable<{ cssRules: Iterable<{ selectorText?: string }> }>
        createElement(tag: string): Element
        getElementById(id: string): Element
      }
    }
    const element = (tag: string, className: string): Element => {
      const made = document.createElement(tag)
      made.className = className
      return made
    }
    const selectors = [...document.styleSheets]
      .flatMap((sheet) => [...sheet.cssRules])
      .flatMap((rule) => (rule.selectorText ?? '').split(','))
      .map((selector) => selector.trim())
      .filter((selector) => selector.includes('.hljs-'))
    const code = element('code', 'hljs language-js')
    for (const selector of selectors) {
      const parts = selector.split(/\s+/).map((part) => element('span', part.split('.').filter(Boolean).join(' ')))
      parts.reduce((outer, inner) => {
        outer.append(inner)
        return inner
      })
      const innermost = parts[parts.length - 1]
      if (innermost) innermost.textContent = `token ${selector}`
      if (parts[0]) code.append(parts[0], element('br', ''))
    }
    const pre = element('pre', '')
    pre.append(code)
    const block = element('div', 'code-block')
    block.id = 'every-token'
    block.append(pre)
    const markdown = element('div', 'markdown')
    markdown.append(block)
    document.getElementById('main').append(markdown)
    return selectors
  })
  expect(kinds.length).toBeGreaterThan(15)
  const problems: string[] = []
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    const result = await page.evaluate(async () => {
      const { axe, document } = globalThis as unknown as {
        axe: {
          run(
            context: unknown,
            options: unknown,
          ): Promise<
            Record<
              'violations' | 'passes' | 'incomplete',
              { nodes: { target: string[]; any: { message: string }[] }[] }[]
            >
          >
        }
        document: { getElementById(id: string): unknown }
      }
      const checked = await axe.run(document.getElementById('every-token'), {
        runOnly: { type: 'rule', values: ['color-contrast'] },
      })
      const describe = (kind: 'violations' | 'incomplete') =>
        checked[kind].flatMap((rule) => rule.nodes.map((node) => `${node.target.join(' ')}: ${node.any[0]?.message}`))
      return {
        failing: [...describe('violations'), ...describe('incomplete')],
        // Every token was judged, one way or the other.
        judged: [...checked.passes, ...checked.violations, ...checked.incomplete].reduce(
          (count, rule) => count + rule.nodes.length,
          0,
        ),
      }
    })
    problems.push(...result.failing.map((problem) => `${scheme}: ${problem}`))
    expect(result.judged).toBe(kinds.length)
  }
  expect(problems).toEqual([])
})

test.concurrent('a theme chosen on the switch gives every colour of that theme, whatever the system prefers', async () => {
  await using session = await signedIn()
  const { page } = session
  /** Each colour variable of the stylesheet's :root, as the page resolves it with the given theme chosen (or none). */
  const colours = (theme: 'light' | 'dark' | null) =>
    page.evaluate((chosen) => {
      // Typed loosely: the project's TypeScript has no DOM library.
      const { document, getComputedStyle } = globalThis as unknown as {
        document: {
          documentElement: { dataset: Record<string, string | undefined> }
          styleSheets: Iterable<{ cssRules: Iterable<{ selectorText?: string; style?: Iterable<string> }> }>
          createElement(tag: string): { style: { color: string }; remove(): void }
          body: { append(node: unknown): void }
        }
        getComputedStyle(node: unknown): { color: string }
      }
      if (chosen) document.documentElement.dataset.theme = chosen
      else delete document.documentElement.dataset.theme
      const names = [...document.styleSheets]
        .flatMap((sheet) => [...sheet.cssRules])
        .filter((rule) => rule.selectorText === ':root')
        .flatMap((rule) => [...(rule.style ?? [])].filter((name) => name.startsWith('--')))
      // Every probe is placed before any is read, so the page computes its styles once, not once per colour:
      // reading one probe at a time cost a style pass each, and the test its whole budget on a loaded machine.
      const probes = names.map((name) => {
        const probe = document.createElement('span')
        probe.style.color = `var(${name})`
        document.body.append(probe)
        return probe
      })
      const resolved = Object.fromEntries(names.map((name, i) => [name, getComputedStyle(probes[i]).color]))
      for (const probe of probes) probe.remove()
      return resolved
    }, theme)
  await page.emulateMedia({ colorScheme: 'dark' })
  const systemDark = await colours(null)
  await page.emulateMedia({ colorScheme: 'light' })
  const systemLight = await colours(null)
  expect(Object.keys(systemDark).length).toBeGreaterThan(20)
  expect(systemDark).not.toEqual(systemLight)
  // Chosen against the system, each way: the notice, row and danger-text colours once stayed the system's.
  expect(await colours('dark')).toEqual(systemDark)
  await page.emulateMedia({ colorScheme: 'dark' })
  expect(await colours('light')).toEqual(systemLight)
})

test.concurrent('without JavaScript the same page works by plain form posts: start, answer on reload, rate', async () => {
  await using session = await signedIn({ javaScriptEnabled: false })
  const { page } = session
  await page.getByLabel('Message', { exact: true }).fill('Plain and simple')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForURL(/\/threads\/[0-9a-f-]{36}#live-answer$/)
  const threadUrl = page.url().split('#')[0] ?? ''
  // The answer shows once the page is read again.
  for (;;) {
    await page.goto(threadUrl)
    if ((await page.locator('.message-assistant:not(.live)').count()) > 0) break
    await page.locator('#live-answer noscript, #live-answer').first().waitFor()
  }
  expect(await page.locator('.message-assistant .markdown').textContent()).toContain('Plain and simple')
  await page.locator('.message-assistant').getByRole('button', { name: 'Good answer' }).click()
  await page.waitForURL(/#message-[0-9a-f-]{36}$/)
  expect(await page.locator('.message-assistant button[title="Good answer"]').getAttribute('aria-pressed')).toBe('true')
  // Nothing the script would show is in the way: the copy buttons stay hidden.
  expect(await page.locator('.copy-message').first().isVisible()).toBe(false)
  expect(session.errors).toEqual([])
})

test.concurrent('the thread menu closes on Escape and on a click outside, downloads an export, and deletes the thread', async () => {
  await using session = await signedIn()
  const { page } = session
  const focusedClass = () =>
    page.evaluate(
      () =>
        (
          (globalThis as unknown as PageWindow).document.activeElement as {
            parentElement: { className: string }
          } | null
        )?.parentElement?.className,
    )
  // The new conversation's options close on Escape too, focus back on their button.
  await page.getByText('Options', { exact: true }).click()
  await page.getByLabel('Name (optional)').focus()
  await page.keyboard.press('Escape')
  await page.locator('.composer-options:not([open])').waitFor()
  expect(await focusedClass()).toBe('composer-options')
  await page.locator('#composer-text').fill('Soon gone')
  await page.keyboard.press('Enter')
  await answer(page, 0)
  const threadPath = new URL(page.url()).pathname
  const menu = page.locator('.thread-tools')
  // Escape from inside the menu closes it and gives the focus back to its button.
  await menu.locator('summary').click()
  await page.getByLabel('Name', { exact: true }).focus()
  await page.keyboard.press('Escape')
  await page.locator('.thread-tools:not([open])').waitFor()
  expect(await focusedClass()).toBe('thread-tools')
  // A click outside closes it; a click inside does not.
  await page.keyboard.press('Enter')
  await page.locator('.thread-tools[open]').waitFor()
  await page.getByLabel('Name', { exact: true }).click()
  expect(await menu.getAttribute('open')).toBe('')
  await page.locator('.chat-title').click()
  await page.locator('.thread-tools:not([open])').waitFor()
  await page.locator('.thread-tools summary').click()
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Export as Markdown' }).click(),
  ])
  expect(download.suggestedFilename()).toBe(`thread-${threadPath.slice('/threads/'.length)}.md`)
  await page.getByRole('link', { name: 'Delete thread…' }).click()
  await page.waitForURL((url) => url.pathname === `${threadPath}/delete`)
  await page.getByRole('button', { name: 'Delete thread' }).click()
  await page.waitForURL((url) => url.pathname === '/')
  expect(await page.locator(`.thread-link[href="${threadPath}"]`).count()).toBe(0)
  expect((await page.goto(threadPath))?.status()).toBe(404)
})
