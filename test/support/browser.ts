// Real headless Chromium (Debian's package) driven by playwright-core, for end-to-end tests of the pages.
// Playwright never downloads a browser here: it is pointed at /usr/bin/chromium.
import { accessSync, constants } from 'node:fs'
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Page } from 'playwright-core'
import { closeAfterRun } from './after-run'

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

let installed: boolean | undefined

/** One line naming the package to install, instead of Playwright's launch error and call log; checked once. */
function requireChromium(): void {
  installed ??= (() => {
    try {
      accessSync(chromiumPath, constants.X_OK)
      return true
    } catch {
      return false
    }
  })()
  if (!installed) {
    throw new Error(
      `Chromium not found at ${chromiumPath}: install Debian's package with \`apt-get install chromium\` ` +
        '(or set CHROMIUM_PATH)',
    )
  }
}

async function launch(): Promise<Browser> {
  requireChromium()
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      // Headless Chromium keeps the address bar's suggestion popup, a page of its own, loaded in every window, where
      // it takes a third of a core even while the page is idle: a run of browser tests spent most of its time there.
      '--disable-features=PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup',
    ],
  })
}

/** The cookies and storage of a signed-in context. */
export type SignedIn = Awaited<ReturnType<BrowserContext['storageState']>>

export interface BrowserSession extends AsyncDisposable {
  browser: Browser
  context: BrowserContext
  page: Page
  /** Every console error and page error seen so far (CSP violations show up here). */
  errors: string[]
}

/** A fresh context (its own cookies, storage and permissions) with one page; `close` ends it. */
async function session(
  browser: Browser,
  baseURL: string,
  close: () => Promise<void>,
  options: BrowserContextOptions = {},
): Promise<BrowserSession> {
  const context = await browser.newContext({ ...options, baseURL })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  return { browser, context, page, errors, [Symbol.asyncDispose]: close }
}

/** A browser of its own with one page; closed by `await using`. */
export async function openBrowser(baseURL: string): Promise<BrowserSession> {
  const browser = await launch()
  return session(browser, baseURL, () => browser.close())
}

let shared: Promise<Browser> | undefined

/**
 * One Chromium for every browser test of the run: started by the first `open`, closed by the after-run closing
 * (after-run.ts), which in a parallel worker comes after each file. Launching costs seconds; a context costs a
 * fraction of one and shares nothing with the others, so each `open` (closed by `await using`) is as fresh as a
 * browser of its own, and concurrent tests may each have one.
 */
export function sharedBrowser(): {
  open(baseURL: string, options?: BrowserContextOptions): Promise<BrowserSession>
  signIn(baseURL: string, email: string, password: string): Promise<SignedIn>
} {
  return {
    /**
     * Signs in once on the sign-in page and returns the cookies, which later contexts start with
     * (`open(url, { storageState })`): signing in is web-e2e.test.ts's subject, and each more sign-in costs an argon2
     * check and a page load that test nothing new.
     */
    async signIn(baseURL, email, password) {
      await using session = await this.open(baseURL)
      const { page } = session
      await page.goto('/login')
      await page.getByLabel('Email').fill(email)
      await page.getByLabel('Password').fill(password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.waitForURL((url) => url.pathname === '/')
      // Awaited here: `await using` closes the context as this function returns.
      return await session.context.storageState()
    },
    async open(baseURL, options) {
      if (!shared) {
        shared = launch()
        closeAfterRun(async () => {
          const browser = await shared?.catch(() => undefined)
          shared = undefined
          await browser?.close()
        }, 'Chromium')
      }
      const browser = await shared
      const opened = await session(
        browser,
        baseURL,
        async () => {
          await opened.context.close()
        },
        options,
      )
      return opened
    },
  }
}

/**
 * Waits until the page's clipboard holds `text`: what a copy button did, rather than its "Copied" label, which goes
 * back after 1.5 s and can come and go between two polls of a busy machine (a CI run missed it at load 11).
 */
export async function clipboardHolds(page: Page, text: string): Promise<void> {
  type Clipboard = { navigator: { clipboard: { readText(): Promise<string> } } }
  await page.waitForFunction(
    async (expected) => (await (globalThis as unknown as Clipboard).navigator.clipboard.readText()) === expected,
    text,
    { polling: 50 },
  )
}
