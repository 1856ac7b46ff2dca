// Real headless Chromium (Debian's package) driven by playwright-core, for end-to-end tests of the pages.
// Playwright never downloads a browser here: it is pointed at /usr/bin/chromium.
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export interface BrowserSession extends AsyncDisposable {
  browser: Browser
  context: BrowserContext
  page: Page
  /** Every console error and page error seen so far (CSP violations show up here). */
  errors: string[]
}

/** A fresh browser with one page; closed by `await using`. */
export async function openBrowser(baseURL: string): Promise<BrowserSession> {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
  const context = await browser.newContext({ baseURL })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  return {
    browser,
    context,
    page,
    errors,
    async [Symbol.asyncDispose]() {
      await browser.close()
    },
  }
}
