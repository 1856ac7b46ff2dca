// Swagger UI in real headless Chromium, against a real server process: the page loads from this server alone with
// no script error; Authorize offers only what a page can fill in (no session cookie, which the browser sends by
// itself); the OAuth flow it starts works; and a settings operation answers once the browser has signed in.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sharedBrowser } from './support/browser'
import { firstRunToken, startServerAtOwnUrl } from './support/helpers'

const browser = sharedBrowser()
const email = 'ada@example.com'
const password = 'correct horse battery'

test('/swagger loads and Authorize opens, authorizes and runs operations with no page error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-swagger-'))
  await using _dir = { [Symbol.asyncDispose]: async () => rmSync(dir, { recursive: true, force: true }) }
  await using server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
  })
  // The owner is made just after the server listens, so a sign-in before that is refused: on a loaded machine (its
  // password hash then takes seconds) this test signed in first and was told the password was wrong.
  await firstRunToken(server)
  await using session = await browser.open(server.url)
  const { page, context, errors } = session
  const popupErrors: string[] = []
  context.on('page', (popup) => popup.on('pageerror', (error) => popupErrors.push(error.message)))

  await page.goto('/login')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  // Signed in once the redirect is committed: the chat page behind it need not finish loading before /swagger. A
  // failure says where the page is and what it shows (a refusal is in its alert).
  await page
    .waitForURL((url) => url.pathname === '/', { waitUntil: 'commit' })
    .catch(async (error: Error) => {
      const shown = await page
        .locator('main')
        .textContent({ timeout: 1_000 })
        .catch(() => '(no main element)')
      throw new Error(`sign-in did not reach /: the page is at ${page.url()} and shows ${JSON.stringify(shown)}`, {
        cause: error,
      })
    })

  await page.goto('/swagger')
  await page.locator('.opblock').first().waitFor()
  await page.locator('.auth-wrapper .authorize').click()
  const dialog = page.locator('.modal-ux')
  const schemes = dialog.locator('.auth-container h4')
  await schemes.first().waitFor()
  expect((await schemes.allInnerTexts()).map((text) => text.replace(/\s+/g, ' '))).toEqual([
    'bearer (http, Bearer)',
    'oauth2 (OAuth2, authorizationCode with PKCE)',
    'registrationToken (http, Bearer)',
  ])
  // The OAuth flow through the built-in docs client: a consent popup, then back with a token.
  const oauth = dialog.locator('.auth-container').nth(1)
  const opened = context.waitForEvent('page')
  await oauth.locator('button.authorize').click()
  const popup = await opened
  // Listening before the click: the popup may close before a click's own wait returns, and a close already past is
  // never told again (a full run's loaded moment met exactly that).
  const closed = popup.waitForEvent('close')
  await popup.getByRole('button', { name: 'Allow' }).click()
  await closed
  await oauth.getByRole('button', { name: 'Remove authorization' }).or(oauth.getByText('Logout')).first().waitFor()
  await dialog.locator('.close-modal').click()

  /** Runs an operation with Try it out and answers the status Swagger UI shows. */
  async function tryOut(path: string): Promise<string> {
    const block = page
      .locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: new RegExp(`^${path}$`) }) })
      .first()
    await block.locator('.opblock-summary').click()
    await block.getByRole('button', { name: 'Try it out' }).click()
    await block.getByRole('button', { name: 'Execute' }).click()
    const status = block.locator('.live-responses-table tbody .response-col_status').first()
    await status.waitFor()
    return (await status.textContent())?.trim() ?? ''
  }
  // The API with the OAuth token; the settings operations with the browser's own session cookie.
  expect(await tryOut('/api/v1/threads')).toBe('200')
  expect(await tryOut('/settings/api/session')).toBe('200')
  expect({ errors, popupErrors }).toEqual({ errors: [], popupErrors: [] })
})
