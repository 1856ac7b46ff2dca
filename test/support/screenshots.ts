// Regenerates the chat's pictures in docs/screenshots/: a new conversation and a thread with a streamed answer
// (Markdown, highlighted code, an image), desktop and phone, light and dark, taken in headless Chromium from a real
// server with threads made through the pages themselves.
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
  ECHO_TOKEN_DELAY_MS: '2',
})
const session = await openBrowser(server.url)
try {
  const { page } = session
  await page.setViewportSize({ width: 1280, height: 860 })
  await page.goto('/')
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.pathname === '/')

  /** Sends from the composer with Enter and waits until the answer has streamed in and the page settled. */
  async function send(text: string, image?: Buffer): Promise<void> {
    if (image) {
      await page.locator('#composer-files').setInputFiles({ name: 'skyline.png', mimeType: 'image/png', buffer: image })
    }
    const answers = await page.locator('.message-assistant:not(.live)').count()
    await page.getByLabel('Message', { exact: true }).fill(text)
    await page.getByLabel('Message', { exact: true }).press('Enter')
    await page.locator('.message-assistant:not(.live)').nth(answers).waitFor()
  }

  async function start(text: string, image?: Buffer): Promise<void> {
    await page.goto('/')
    await send(text, image)
  }

  await start('Draft an outline for the Q3 report.')
  await start('What should the 2.0 release checklist cover?')
  await start('Summarise the meeting notes from Tuesday')
  const sky = await sharp({ create: { width: 480, height: 270, channels: 3, background: '#f0a04b' } })
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
    'Plan a **weekend in Lyon** for two:\n\n- one museum\n- one *bouchon* for dinner\n\nThe photo is the view from our hotel. Keep it under `300 €`.',
    sky,
  )
  await send(
    'Turn the budget into code:\n\n```ts\nconst budget = { hotel: 180, dinner: 90, museum: 24 }\nconst total = Object.values(budget).reduce((a, b) => a + b, 0)\nconsole.log("Total:", total, "€") // 294 €\n```',
  )
  await page.locator('.message-assistant').first().getByRole('button', { name: 'Good answer' }).click()
  await page.locator('.message-assistant button[aria-pressed="true"]').waitFor()
  const threadUrl = page.url().split('#')[0] ?? ''

  mkdirSync(out, { recursive: true })
  for (const [device, width, height] of [
    ['desktop', 1280, 860],
    ['phone', 390, 844],
  ] as const) {
    await page.setViewportSize({ width, height })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await page.goto('/')
      await page.screenshot({ path: join(out, `new-${device}-${scheme}.png`) })
      await page.goto(threadUrl)
      await page.locator('.hljs').first().waitFor()
      await page.screenshot({ path: join(out, `thread-${device}-${scheme}.png`) })
    }
  }
  await page.emulateMedia({ colorScheme: 'light' })
  await page.goto(`${threadUrl}#sidebar`)
  await page.locator('#sidebar').waitFor()
  await page.screenshot({ path: join(out, 'sidebar-phone-light.png') })
  console.log(`screenshots written to ${out}`)
} catch (error) {
  await session.page.screenshot({ path: '/tmp/threadhouse-shot-failure.png' })
  console.error(session.errors)
  throw error
} finally {
  await session[Symbol.asyncDispose]()
  await server[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
}
