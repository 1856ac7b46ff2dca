// The settings and administration pages end to end: real headless Chromium against the real server process.
// An owner signs in, makes and revokes an API token, approves an OAuth client and disconnects it, rotates and
// deletes a client, adds a member who signs in with a one-time password; hostile text goes into every field we
// render, and no dialog may open nor any script run. UPDATE_SCREENSHOTS=1 also rewrites docs/screenshots/.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { type BrowserSession, clipboardHolds, sharedBrowser } from './support/browser'
import { firstRunToken, type ServerProcess, startServerAtOwnUrl } from './support/helpers'
import { basic, pkce } from './support/oauth-helpers'

const ownerEmail = 'owner@example.com'
const ownerPassword = 'owner password 1'
/** Each payload would open a dialog or set window.pwned if it ever became markup. */
const xss = `<img src=x onerror="alert(1);window.pwned=1"><script>alert(2);window.pwned=1</script>`
const logoHost = 'https://logo.example'
const callbackOrigin = 'http://127.0.0.1:9'
const screenshots = process.env.UPDATE_SCREENSHOTS === '1'
const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')
// A 1×1 PNG, served for the registered logo so no request leaves the machine.
const pixel = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)

const browser = sharedBrowser()
let dir = ''
let server: ServerProcess
let session: BrowserSession
let page: Page
const dialogs: string[] = []

/** A fresh database, server process and browser context; the module-level handles point at them. */
async function launch(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'threadhouse-settings-browser-'))
  server = await startServerAtOwnUrl({
    DATABASE_PATH: join(dir, 'db.sqlite'),
    UPLOADS_DIR: join(dir, 'uploads'),
    ADMIN_EMAIL: ownerEmail,
    ADMIN_PASSWORD: ownerPassword,
  })
  // Listening comes before the first run has created the owner: signing in any sooner may find no account.
  await firstRunToken(server)
  session = await browser.open(server.url)
  page = session.page
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  await session.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
  await session.context.route(`${logoHost}/**`, (route) => route.fulfill({ contentType: 'image/png', body: pixel }))
  // The pages name no icon; Chromium's own request for one would only add a 404 to the console.
  await session.context.route(`${server.url}/favicon.ico`, (route) => route.fulfill({ status: 204 }))
  await session.context.route(`${callbackOrigin}/**`, (route) =>
    route.fulfill({ contentType: 'text/html', body: 'ok' }),
  )
}

async function shutdown(): Promise<void> {
  await session?.[Symbol.asyncDispose]()
  await server?.[Symbol.asyncDispose]()
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = ''
}

beforeAll(launch, 60_000)
afterAll(shutdown, 60_000)

/** Nothing hostile ran: no dialog, no script, no CSP refusal of an injected inline script. */
async function expectNoScriptRan(): Promise<void> {
  expect(dialogs).toEqual([])
  expect(await page.evaluate<number | undefined>('window.pwned')).toBeUndefined()
  expect(session.errors).toEqual([])
}

async function shoot(name: string): Promise<void> {
  if (!screenshots) return
  mkdirSync(screenshotDir, { recursive: true })
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.screenshot({ path: join(screenshotDir, `${name}-${scheme}.png`), fullPage: true })
  }
  await page.emulateMedia({ colorScheme: null })
}

/** Lets markup typed into an email field through to the server, which must cope with it. */
function disableValidation(form: unknown): void {
  ;(form as { noValidate: boolean }).noValidate = true
}

async function signIn(email: string, password: string, next = '/settings'): Promise<void> {
  await page.goto(`/login?next=${encodeURIComponent(next)}`)
  await page.locator('form[action="/login"]').evaluate(disableValidation)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

async function signOut(): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL('**/login')
}

async function me(token: string): Promise<number> {
  return (await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).status
}

describe('settings and administration in Chromium', () => {
  test('sign in, create an API token (copied once), use it, revoke it', async () => {
    await signIn(ownerEmail, ownerPassword)
    await page.waitForURL('**/settings/tokens')
    await page.getByLabel('Name').fill(`Laptop ${xss}`)
    await page.getByLabel(/threads:read Read every/).check()
    await page.getByLabel(/threads:write/).check()
    await page.getByLabel('Expires after').selectOption({ label: '90 days' })
    await page.getByRole('button', { name: 'Create token' }).click()
    const secret = page.locator('#new-token')
    await secret.waitFor()
    const token = (await secret.textContent()) ?? ''
    expect(token).toStartWith('thp_')
    // The local script reveals the copy button, which puts exactly the token on the clipboard.
    await page.getByRole('button', { name: 'Copy' }).click()
    await clipboardHolds(page, token)
    await page.getByRole('rowheader', { name: `Laptop ${xss}` }).waitFor()
    expect(await me(token)).toBe(200)

    await page.getByRole('button', { name: `Revoke token Laptop ${xss}` }).click()
    await page.getByText('The token was revoked. It no longer works.').waitFor()
    expect(await page.locator('#new-token').count()).toBe(0)
    expect(await me(token)).toBe(401)
    await expectNoScriptRan()
  })

  test('approve an OAuth client on the consent page, then revoke it under Connected apps', async () => {
    const registration = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: `Notes ${xss}`,
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
        logo_uri: `${logoHost}/logo.png?"><script>alert(3)</script>`,
        client_uri: `https://notes.example/?"onmouseover="alert(4)`,
      }),
    })
    const client = (await registration.json()) as { client_id: string }
    const { verifier, challenge } = pkce()
    const redirectUri = `${callbackOrigin}/callback`
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'threads:read threads:write',
      state: 'xyz',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })
    await page.goto(`/oauth/authorize?${query}`)
    await page.getByRole('heading', { name: `Notes ${xss} wants to access your Threadhouse account` }).waitFor()
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.waitForURL(`${callbackOrigin}/callback?**`)
    const code = new URL(page.url()).searchParams.get('code') ?? ''
    const exchanged = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: client.client_id,
        code_verifier: verifier,
      }),
    })
    const tokens = (await exchanged.json()) as { access_token: string }
    expect(await me(tokens.access_token)).toBe(200)

    await page.goto('/settings')
    await page.getByRole('link', { name: 'Connected apps' }).click()
    await page.getByRole('rowheader', { name: `Notes ${xss} Not verified` }).waitFor()
    await page.getByRole('button', { name: `Revoke Notes ${xss}` }).click()
    await page.getByText('The app was disconnected.').waitFor()
    expect(await me(tokens.access_token)).toBe(401)
    await expectNoScriptRan()
  })

  test('as owner: create a client in settings, rotate its secret and delete it in Administration', async () => {
    await page.goto('/settings/clients')
    await page.getByLabel('Name').fill(`Dashboard ${xss}`)
    await page
      .getByLabel('Redirect URIs')
      .fill(`https://dash.example/cb\nhttps://dash.example/cb?x="><script>alert(5)</script>`)
    await page.getByRole('button', { name: 'Create client' }).click()
    const firstSecret = (await page.locator('#new-client-secret').textContent()) ?? ''
    const clientId = (await page.locator('.secret-panel p code').textContent()) ?? ''
    expect(firstSecret).toStartWith('ths_')
    const revokeWith = async (secret: string): Promise<number> =>
      (
        await fetch(`${server.url}/oauth/token/revoke`, {
          method: 'POST',
          headers: { authorization: basic(clientId, secret) },
          body: new URLSearchParams({ token: 'tho_unknown' }),
        })
      ).status
    expect(await revokeWith(firstSecret)).toBe(200)

    await page.getByRole('link', { name: 'Administration' }).click()
    await page.waitForURL('**/admin/clients')
    await page.getByRole('link', { name: `Dashboard ${xss}` }).click()
    await page.getByRole('heading', { name: `Dashboard ${xss}` }).waitFor()
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const rotated = (await page.locator('#rotated-secret').textContent()) ?? ''
    expect(rotated).toStartWith('ths_')
    expect(await revokeWith(firstSecret)).toBe(401)
    expect(await revokeWith(rotated)).toBe(200)

    // The consent-approved client shows its https logo in the detail panel.
    await page.goto('/admin/clients')
    await page.getByRole('link', { name: `Notes ${xss}` }).click()
    await page.getByRole('img', { name: `Logo of Notes ${xss}` }).waitFor()
    expect(
      await page.getByRole('img').evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
    ).toBe(1)

    await page.goto('/admin/clients')
    await page.getByRole('link', { name: `Dashboard ${xss}` }).click()
    await page.getByRole('link', { name: 'Delete client…' }).click()
    await page.getByRole('heading', { name: `Delete Dashboard ${xss}?` }).waitFor()
    await page.getByRole('button', { name: 'Delete client' }).click()
    await page.getByText('The client was deleted').waitFor()
    expect(await page.getByRole('link', { name: `Dashboard ${xss}` }).count()).toBe(0)
    expect(await revokeWith(rotated)).toBe(401)
    await expectNoScriptRan()
  })

  test('add a member with a one-time password; they sign in, must choose a password, and see no administration', async () => {
    await page.goto('/admin/members')
    // The browser's own email check would stop markup in an email; the server must escape it anyway.
    await page.locator('form[action="/admin/members"]').evaluate(disableValidation)
    const email = `"><svg/onload=alert(6)>@example.com`
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Name (optional)').fill(`Mia ${xss}`)
    await page.getByLabel('Role', { exact: true }).selectOption('member')
    await page.getByRole('button', { name: 'Add member' }).click()
    const oneTime = (await page.locator('#one-time-password').textContent()) ?? ''
    expect(oneTime).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/)
    await page.getByRole('rowheader', { name: `Mia ${xss}` }).waitFor()
    await expectNoScriptRan()

    await signOut()
    await signIn(email.toLowerCase(), oneTime, '/settings/apps')
    await page.waitForURL('**/settings/password?next=%2Fsettings%2Fapps')
    await page.getByRole('heading', { name: 'Choose your own password' }).waitFor()
    await page.getByLabel('One-time password').fill(oneTime)
    await page.getByLabel('New password', { exact: true }).fill('mia has her own')
    await page.getByLabel('New password again').fill('mia has her own')
    await page.getByRole('button', { name: 'Change password' }).click()
    await page.waitForURL('**/settings/apps')
    expect(await page.getByRole('link', { name: 'Administration' }).count()).toBe(0)
    const forbidden = await page.goto('/admin/members')
    expect(forbidden?.status()).toBe(403)
    // Chromium logs every refused document load; this refusal is the expected one.
    expect(session.errors.splice(0)).toEqual([
      'Failed to load resource: the server responded with a status of 403 (Forbidden)',
    ])
    await page.getByRole('heading', { name: 'Administration only' }).waitFor()
    await signOut()
    await expectNoScriptRan()
  })

  test('on a phone-sized screen the settings pages fit without sideways scrolling', async () => {
    await signIn(ownerEmail, ownerPassword, '/admin/members')
    await page.setViewportSize({ width: 390, height: 844 })
    for (const path of ['/settings/tokens', '/admin/members']) {
      await page.goto(path)
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')
      expect(overflow).toBeLessThanOrEqual(0)
    }
    await page.goto('/settings/tokens')
    // Keyboard: the skip link comes first and leads to the content.
    await page.keyboard.press('Tab')
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Skip to content')
    await page.setViewportSize({ width: 1280, height: 720 })
    await expectNoScriptRan()
  })

  // Documentation, not a check: realistic data instead of attack strings, light and dark.
  test.if(screenshots)(
    'screenshots for docs/screenshots/',
    async () => {
      // A fresh server, so the pictures show realistic data rather than the attack strings above.
      await shutdown()
      await launch()
      await signIn(ownerEmail, ownerPassword)
      await page.setViewportSize({ width: 1100, height: 720 })
      await page.goto('/settings/tokens')
      await page.getByLabel('Name').fill('CI pipeline')
      await page.getByLabel(/threads:read:own/).check()
      await page.getByRole('button', { name: 'Create token' }).click()
      await page.getByLabel('Name').fill('Deploy scripts')
      await page.getByLabel(/threads:read Read every/).check()
      await page.getByLabel(/threads:write/).check()
      await page.getByLabel('Expires after').selectOption({ label: '90 days' })
      await page.getByRole('button', { name: 'Create token' }).click()
      await page.locator('#new-token').waitFor()
      await shoot('settings-tokens')

      const registration = await fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_name: 'Notes for Mac',
          redirect_uris: ['http://127.0.0.1/callback'],
          token_endpoint_auth_method: 'none',
          logo_uri: `${logoHost}/notes.png`,
          client_uri: 'https://notes.example/',
          policy_uri: 'https://notes.example/privacy',
        }),
      })
      const client = (await registration.json()) as { client_id: string }
      const { verifier, challenge } = pkce()
      await page.goto(
        `/oauth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: `${callbackOrigin}/callback`,
          scope: 'threads:read threads:write',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        })}`,
      )
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.waitForURL(`${callbackOrigin}/callback?**`)
      const exchanged = await fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: new URL(page.url()).searchParams.get('code') ?? '',
          redirect_uri: `${callbackOrigin}/callback`,
          client_id: client.client_id,
          code_verifier: verifier,
        }),
      })
      await me(((await exchanged.json()) as { access_token: string }).access_token)
      await page.goto('/settings/apps')
      await shoot('settings-connected-apps')

      await page.goto('/settings/clients')
      await page.getByLabel('Name').fill('Team dashboard')
      await page.getByLabel('Redirect URIs').fill('https://dashboard.example/oauth/callback')
      await page.getByRole('button', { name: 'Create client' }).click()
      await page.locator('#new-client-secret').waitFor()
      await shoot('settings-oauth-clients')

      await page.goto('/admin/members')
      await page.getByLabel('Email').fill('mia@example.com')
      await page.getByLabel('Name (optional)').fill('Mia Chen')
      await page.getByLabel('Role', { exact: true }).selectOption('admin')
      await page.getByRole('button', { name: 'Add member' }).click()
      await page.locator('#one-time-password').waitFor()
      await shoot('admin-members')

      await page.goto('/admin/clients')
      await shoot('admin-clients')
      await page.getByRole('link', { name: 'Notes for Mac' }).click()
      await page.getByRole('img', { name: 'Logo of Notes for Mac' }).waitFor()
      await shoot('admin-client-detail')
      await page.goto('/admin/clients')
      await page.getByRole('link', { name: 'Team dashboard' }).click()
      await page.getByRole('link', { name: 'Delete client…' }).click()
      await shoot('admin-client-delete')

      await page.setViewportSize({ width: 390, height: 844 })
      await page.goto('/settings/tokens')
      await shoot('settings-tokens-phone')
      await page.setViewportSize({ width: 1280, height: 720 })
      await expectNoScriptRan()
    },
    60_000,
  )
})
