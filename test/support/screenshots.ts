// Retakes every picture in docs/screenshots/ with one command: `bun test/support/screenshots.ts`.
//
// The chat's pictures are taken here: a new conversation and a thread answered by a model, desktop and phone, light
// and dark, in headless Chromium against a real server whose model is a scripted OpenAI-compatible upstream on
// loopback (fake-llm.ts), so the pictures show what the product does with a real model: an answer with a heading, a
// list, highlighted code and a table. Then the settings, administration, share-link and usage pictures are retaken
// by their own tests (`UPDATE_SCREENSHOTS=1 bun test test/settings-browser.test.ts test/shares-browser.test.ts
// test/usage-browser.test.ts test/web-search-browser.test.ts`); `--chat-only` skips them. Each PNG is then
// quantised to 256 colours, which halves it.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { tokenize } from '../../src/generation/providers/echo'
import { openBrowser } from './browser'
import { FakeLlm, openaiText, type Received, sse } from './fake-llm'
import { startServerAtOwnUrl } from './helpers'

const root = join(import.meta.dir, '..', '..')
const out = join(root, 'docs', 'screenshots')

/** What the model answers, by the question it was asked. */
const answers: Record<string, string> = {
  'Draft an outline for the Q3 report.':
    '## Q3 report outline\n\n1. Highlights\n2. Revenue and costs\n3. Hiring\n4. Risks and next steps',
  'What should the 2.0 release checklist cover?':
    'Four areas: **migrations** tested on a copy of production, a changelog, updated docs, and a rollback plan.',
  'Summarise Tuesday’s meeting notes.':
    'The team agreed to ship the importer first, move the billing work to October, and hire a second designer.',
  'How do I page through a big PostgreSQL table without OFFSET slowing down?': `## Keyset pagination

\`OFFSET\` reads every row before the page. Start where the last page ended:

1. Sort by a unique key, such as \`(created_at, id)\`.
2. Send the last row's key with each page.
3. Ask for the rows after that key.

\`\`\`sql
SELECT id, title FROM posts
WHERE (created_at, id) < ($1, $2)
ORDER BY created_at DESC, id DESC
LIMIT 50;
\`\`\`

With an index on \`(created_at, id)\`:

| Page | OFFSET | Keyset |
| ---: | -----: | -----: |
| 1 | 0.4 ms | 0.4 ms |
| 100 | 18 ms | 0.4 ms |
| 1,000 | 190 ms | 0.5 ms |`,
}

/** The text of the last user message of a Chat Completions request. */
function question(request: Received): string {
  const messages = request.body.messages as { role: string; content: string | { type: string; text?: string }[] }[]
  const content = messages.filter((message) => message.role === 'user').at(-1)?.content ?? ''
  return typeof content === 'string' ? content : content.map((part) => part.text ?? '').join('')
}

/** What the model answers when the answer to a question is regenerated (the versions picture). */
const secondAnswers: Record<string, string> = {
  'What should the 2.0 release checklist cover?':
    'Start with a **rollback plan**, then migrations rehearsed on a copy of production, the changelog and the docs.',
}

await using llm = new FakeLlm()
const asked = new Set<string>()
const script = (request: Received) => {
  const text = question(request).trim()
  const answer = asked.has(text) ? secondAnswers[text] : answers[text]
  asked.add(text)
  if (!answer) throw new Error(`no scripted answer for: ${question(request)}`)
  return sse(openaiText(tokenize(answer)))
}
llm.reply(...[...Object.keys(answers), ...Object.keys(secondAnswers)].map(() => script))

const budgets = { context_tokens: 128_000, max_output_tokens: 4096 }
/** Two models on the one scripted upstream, so the composer shows its picker and each answer names its model. */
const models = JSON.stringify([
  { id: 'llama3.2', name: 'Llama 3.2', provider: 'openai', model: 'llama3.2', base_url: `${llm.url}/v1`, ...budgets },
  { id: 'qwen2.5', name: 'Qwen 2.5', provider: 'openai', model: 'qwen2.5', base_url: `${llm.url}/v1`, ...budgets },
])

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-shots-'))
const server = await startServerAtOwnUrl({
  DATABASE_PATH: join(dir, 'db.sqlite'),
  UPLOADS_DIR: join(dir, 'uploads'),
  ADMIN_EMAIL: 'ada@example.com',
  ADMIN_PASSWORD: 'correct horse battery',
  LLM_MODELS: models,
})
const session = await openBrowser(server.url)
try {
  const { page } = session
  await page.setViewportSize({ width: 1280, height: 960 })
  await page.goto('/')
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.pathname === '/')

  /** Starts a thread from the new conversation with Enter and waits until its answer has streamed in. */
  async function start(text: string): Promise<void> {
    await page.goto('/')
    await page.getByLabel('Message', { exact: true }).fill(text)
    await page.getByLabel('Message', { exact: true }).press('Enter')
    await page.locator('.message-assistant:not(.live)').first().waitFor()
  }
  const questions = Object.keys(answers)
  for (const text of questions) await start(text)
  await page.locator('.message-assistant').first().getByRole('button', { name: 'Good answer' }).click()
  await page.locator('.message-assistant button[aria-pressed="true"]').waitFor()
  const threadUrl = page.url().split('#')[0] ?? ''

  mkdirSync(out, { recursive: true })
  for (const [device, width, height] of [
    ['desktop', 1280, 960],
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
  // Versions: the release checklist's answer regenerated by the other model, so it shows `‹ 2/2 ›` and both names.
  await page.setViewportSize({ width: 1280, height: 760 })
  await page.emulateMedia({ colorScheme: 'light' })
  await page.locator('.thread-link', { hasText: 'What should the 2.0 release checklist cover?' }).click()
  await page.locator('.message-assistant').first().waitFor()
  // The new answer from the other model: chosen in the composer's picker, saved as the thread's model at once.
  await page.getByLabel('Model', { exact: true }).selectOption('qwen2.5')
  await page.locator('#thread-status', { hasText: 'The next answer comes from Qwen 2.5.' }).waitFor()
  await page.getByRole('button', { name: 'Regenerate the answer' }).click()
  await page.locator('#live-answer').waitFor({ state: 'detached' })
  await page.locator('.message-assistant .version-count', { hasText: '2/2' }).waitFor()
  await page.getByRole('button', { name: 'Regenerate the answer' }).focus()
  await page.screenshot({ path: join(out, 'thread-versions-light.png') })
  await page.goto(`${threadUrl}#sidebar`)
  await page.locator('#sidebar').waitFor()
  await page.screenshot({ path: join(out, 'sidebar-phone-light.png') })
} catch (error) {
  await session.page.screenshot({ path: join(tmpdir(), 'threadhouse-shot-failure.png') })
  console.error(session.errors)
  throw error
} finally {
  await session[Symbol.asyncDispose]()
  await server[Symbol.asyncDispose]()
  rmSync(dir, { recursive: true, force: true })
}

// `--chat-only` leaves the settings, administration and share-link pictures as they are.
const pictureTests = [
  'test/settings-browser.test.ts',
  'test/shares-browser.test.ts',
  'test/usage-browser.test.ts',
  'test/web-tools-browser.test.ts',
  'test/web-search-browser.test.ts',
]
const settings = process.argv.includes('--chat-only')
  ? undefined
  : Bun.spawn(['bun', 'test', '--timeout=120000', ...pictureTests], {
      cwd: root,
      env: { ...process.env, UPDATE_SCREENSHOTS: '1' },
      stdout: 'inherit',
      stderr: 'inherit',
    })
if (settings && (await settings.exited) !== 0)
  throw new Error(`${pictureTests.join(' or ')} failed: their pictures may be stale`)

for (const name of readdirSync(out).filter((file) => file.endsWith('.png'))) {
  const path = join(out, name)
  // 256 colours: plenty for pages of flat colours and text, at about half the bytes.
  const smaller = await sharp(path).png({ palette: true, compressionLevel: 9, effort: 10 }).toBuffer()
  if (smaller.length < Bun.file(path).size) await Bun.write(path, smaller)
}
console.log(`screenshots written to ${out}`)
