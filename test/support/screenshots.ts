// Regenerates docs/screenshots/: the threads list and a thread with a streamed answer, light and dark, taken in
// headless Chromium from a real server with a few threads made through the pages.
// Run: bun test/support/screenshots.ts
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { openBrowser } from './browser'
import { startServerAtOwnUrl } from './helpers'

const out = join(import.meta.dir, '..', '..', 'docs', 'screenshots')
const dir = mkdtempSync(join(tmpdir(), 'threadhouse-shots-'))
const server = await startServerAtOwnUrl({
  DATABASE_PATH: join(dir, 'db.sqlite'),
  UPLOADS_DIR: join(dir, 'uploads'),
  ADMIN_EMAIL: 'ada@example.com',
  ADMIN_PASSWORD: 'correct horse battery',
  ECHO_TOKEN_DELAY_MS: '5',
})
const session = await openBrowser(server.url)
try {
  const { page } = session
  await page.setViewportSize({ width: 1100, height: 1000 })
  await page.goto('/')
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/threads$/)

  async function start(name: string, text: string, image?: Buffer): Promise<void> {
    await page.goto('/threads')
    await page.getByLabel('Message', { exact: true }).fill(text)
    await page.getByLabel(/^Name/).fill(name)
    if (image)
      await page.locator('#new-files').setInputFiles({ name: 'skyline.png', mimeType: 'image/png', buffer: image })
    await page.getByRole('button', { name: 'Start thread' }).click()
    await page.getByRole('heading', { name: 'Rate this answer' }).or(page.locator('.feedback')).first().waitFor()
  }

  await start('Quarterly report outline', 'Draft an outline for the Q3 report.')
  await start('Release checklist', 'What should the 2.0 release checklist cover?')
  const sky = await sharp({
    create: { width: 480, height: 270, channels: 3, background: '#f0a04b' },
  })
    .composite([
      {
        input: Buffer.from(
          '<svg width="480" height="270"><rect y="150" width="480" height="120" fill="#3b4a6b"/><rect x="60" y="90" width="50" height="180" fill="#26324d"/><rect x="150" y="60" width="70" height="210" fill="#1f2a40"/><rect x="260" y="110" width="60" height="160" fill="#26324d"/><rect x="350" y="40" width="55" height="230" fill="#1f2a40"/><circle cx="400" cy="70" r="28" fill="#ffe3a3"/></svg>',
        ),
      },
    ])
    .png()
    .toBuffer()
  await start(
    'Weekend in Lyon',
    'Plan a **weekend in Lyon** for two:\n\n- one museum\n- one *bouchon* for dinner\n\nThe photo is the view from our hotel. Keep it under `300 €`.',
    sky,
  )
  const threadUrl = page.url().split('#')[0] ?? ''
  await page.getByLabel('Message', { exact: true }).fill('And if it rains on Sunday?')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForFunction(
    () =>
      !(globalThis as unknown as { document: { getElementById(id: string): unknown } }).document.getElementById(
        'live-answer',
      ),
  )
  await page.locator('.message-assistant').first().getByRole('button', { name: 'Good answer' }).click()
  await page.locator('.message-assistant button[aria-pressed="true"]').waitFor()

  mkdirSync(out, { recursive: true })
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.goto('/threads')
    await page.screenshot({ path: join(out, `threads-${scheme}.png`), fullPage: true })
    await page.goto(threadUrl)
    await page.screenshot({ path: join(out, `thread-${scheme}.png`), fullPage: true })
  }
  await page.setViewportSize({ width: 390, height: 844 })
  await page.emulateMedia({ colorScheme: 'light' })
  await page.goto(threadUrl)
  await page.screenshot({ path: join(out, 'thread-phone.png') })
  console.log(`screenshots written to ${out}`)
} finally {
  await session[Symbol.asyncDispose]()
  await server[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
}
