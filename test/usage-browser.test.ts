// The usage charts in headless Chromium, with the seeded month (support/usage-seed.ts): every chart is drawn (its
// SVG has a size and coloured bars, the colours differing between light and dark), nothing is refused by the pages'
// Content-Security-Policy, and no script is needed. UPDATE_SCREENSHOTS=1 also rewrites
// docs/screenshots/admin-usage-{light,dark}.png. The app answers in process: the browser's requests are fulfilled by
// app.handle.
import { expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { sharedBrowser } from './support/browser'
import { seededHarness } from './support/usage-seed'

const origin = 'http://threadhouse.test'
const screenshotDir = join(import.meta.dir, '..', 'docs', 'screenshots')

test('the administration usage charts draw in light and dark, without script', async () => {
  const { h, owner } = await seededHarness({ plainNames: true })
  await using _ = h
  await using session = await sharedBrowser().open(origin, { javaScriptEnabled: false })
  const { context, page } = session
  await context.addCookies([...owner.browser.cookies].map(([name, value]) => ({ name, value, url: origin })))
  await context.route(`${origin}/**`, async (route) => {
    const request = route.request()
    const response = await h.app.handle(new Request(request.url(), { headers: request.headers() }))
    await route.fulfill({
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: Buffer.from(await response.arrayBuffer()),
    })
  })
  await page.goto('/admin/usage?from=2026-03-01&to=2026-03-31')
  const fills: Record<string, string> = {}
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    const charts = page.getByRole('img')
    expect(await charts.count()).toBe(3)
    for (const name of ['Tokens per day', 'Cost per model', 'Members who used the most tokens']) {
      const box = await page.getByRole('img', { name: new RegExp(`^${name}`) }).boundingBox()
      expect(box?.width).toBeGreaterThan(600)
      expect(box?.height).toBeGreaterThan(60)
    }
    fills[scheme] = await page
      .locator('svg.chart g.series-0')
      .first()
      .evaluate((g) => g.ownerDocument.defaultView?.getComputedStyle(g).fill ?? '')
    expect(fills[scheme]).not.toBe('rgb(0, 0, 0)')
    if (process.env.UPDATE_SCREENSHOTS === '1') {
      mkdirSync(screenshotDir, { recursive: true })
      await page.screenshot({ path: join(screenshotDir, `admin-usage-${scheme}.png`), fullPage: true })
    }
  }
  expect(fills.light).not.toBe(fills.dark)
  expect(session.errors).toEqual([])
})
