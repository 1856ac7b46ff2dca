// Administration → Audit in headless Chromium, without script: the filter form narrows the log, its pages follow
// each other, the CSV download is a file of the matching events, and on a phone the table scrolls in its own region
// while the page does not. Nothing is refused by the pages' Content-Security-Policy. UPDATE_SCREENSHOTS=1 also
// rewrites docs/screenshots/admin-audit-light.png. The app answers in process: the browser's requests are fulfilled
// by app.handle.
import { expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { auditEntry, requestOrigin, sessionActor, target } from '../src/shared/audit'
import { sharedBrowser } from './support/browser'
import { harness, ManualClock } from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { submit } from './support/web-helpers'

const origin = 'http://threadhouse.test'
const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')

test('the audit page filters, pages and downloads in the browser, on a desktop and a phone', async () => {
  const clock = new ManualClock(Date.parse('2026-04-14T08:00:00Z'))
  await using h = await harness({ clock })
  const { browser: owner, user } = await signedIn(h, { role: 'owner', name: 'Olga Owner' })
  const organizationId = (await h.store.users.findMemberById(user.id))?.organizationId ?? 0
  // What a morning in an organization looks like, made through the pages, then a burst of sign-ins to page through.
  for (const [email, role] of [
    ['rita@example.com', 'admin'],
    ['sam@example.com', 'member'],
  ] as const) {
    expect((await submit(owner, '/admin/members', { email, name: '', role })).status).toBe(200)
    clock.advance(60_000)
  }
  expect((await submit(owner, '/admin/retention', { days: '180' })).status).toBe(303)
  expect((await submit(owner, '/admin/webhooks', { url: 'https://hooks.example.com/services/T1/B2/c3' })).status).toBe(
    200,
  )
  const agent = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 Safari/605.1.15'
  const request = new Request(origin, { headers: { 'user-agent': agent } })
  for (let i = 0; i < 56; i++) {
    clock.advance(90_000)
    await h.store.audit.append(
      auditEntry({ ...requestOrigin(request, sessionActor(100 + i, user.id)), address: '198.51.100.7' }, clock.now(), {
        organizationId,
        action: 'signin.succeeded',
        target: target('user', user.id),
        detail: { method: i % 3 === 0 ? 'oidc' : 'password', session_id: String(100 + i) },
      }),
    )
  }
  clock.advance(60_000)
  await h.store.audit.append(
    auditEntry(
      { actor: { kind: 'anonymous', id: null, userId: null }, address: '203.0.113.50', userAgent: 'curl/8.5.0' },
      clock.now(),
      {
        organizationId,
        action: 'signin.failed',
        outcome: 'failure',
        target: target('user', user.id),
        detail: { method: 'password', reason: 'wrong_password' },
      },
    ),
  )

  await using session = await sharedBrowser().open(origin, { javaScriptEnabled: false })
  const { context, page } = session
  await context.addCookies([...owner.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await context.route(`${origin}/**`, async (route) => {
    const sent = route.request()
    const response = await h.app.handle(
      new Request(sent.url(), { method: sent.method(), headers: sent.headers(), body: sent.postDataBuffer() }),
    )
    await route.fulfill({
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: Buffer.from(await response.arrayBuffer()),
    })
  })
  await page.setViewportSize({ width: 1280, height: 900 })
  await page.goto('/admin/audit')
  const rows = page.locator('table.audit-events tbody tr')
  expect(await rows.count()).toBe(50)
  expect(await rows.first().textContent()).toContain('signin.failed')
  if (process.env.UPDATE_SCREENSHOTS === '1') {
    mkdirSync(screenshotDir, { recursive: true })
    await page.screenshot({ path: join(screenshotDir, 'admin-audit-light.png'), fullPage: false })
  }
  await page.screenshot({ path: join(process.env.AUDIT_SHOTS ?? '/tmp', 'admin-audit-desktop.png'), fullPage: false })

  // The next page holds the rest, oldest last; Newest events goes back.
  await page.getByRole('link', { name: 'Older events' }).click()
  const actions = page.locator('table.audit-events tbody td:first-child code')
  const older = await actions.allTextContents()
  // 63 events in all: the owner's token and sign-in, two members, the retention, the webhook, 56 sign-ins, a failure.
  expect(older).toHaveLength(63 - 50)
  expect(older.slice(-2)).toEqual(['token.created', 'signin.succeeded'].reverse())
  await page.getByRole('link', { name: 'Newest events' }).click()
  expect(await rows.count()).toBe(50)

  // Every member event, chosen in the form's list and shown.
  await page.getByLabel('Action').selectOption('member.*')
  await page.getByRole('button', { name: 'Show' }).click()
  expect(new URL(page.url()).searchParams.get('action')).toBe('member.*')
  expect(await actions.allTextContents()).toEqual(['member.added', 'member.added'])
  expect(await page.getByRole('link', { name: 'Older events' }).count()).toBe(0)

  // Its CSV link keeps the filter: the same two events, as a file. (Chromium cancels downloads whose response a
  // route fulfils, so the file is fetched as the page's session would fetch it.)
  const href = (await page.getByRole('link', { name: 'CSV' }).getAttribute('href')) ?? ''
  expect(href).toBe('/admin/audit.csv?action=member.*')
  const file = await owner.get(href)
  expect(file.headers.get('content-disposition')).toMatch(
    /^attachment; filename="audit-default-\d{4}-\d{2}-\d{2}\.csv"$/,
  )
  expect((await file.text()).trimEnd().split('\r\n')).toHaveLength(3)

  // On a phone: the table scrolls within its region; the page itself does not scroll sideways.
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto('/admin/audit')
  expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBeLessThanOrEqual(0)
  await page.screenshot({ path: join(process.env.AUDIT_SHOTS ?? '/tmp', 'admin-audit-phone.png'), fullPage: false })
  expect(session.errors).toEqual([])
})
