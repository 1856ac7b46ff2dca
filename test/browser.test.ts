// A smoke test of the browser harness itself: real Chromium loads a page the server serves.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openBrowser } from './support/browser'
import { startServer } from './support/helpers'

test('Swagger UI renders in Chromium from local assets, with no console errors', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-browser-'))
  try {
    await using server = await startServer({ DATABASE_PATH: join(dir, 'db.sqlite'), UPLOADS_DIR: join(dir, 'uploads') })
    await using session = await openBrowser(server.url)
    const external: string[] = []
    session.page.on('request', (request) => {
      if (!request.url().startsWith(server.url)) external.push(request.url())
    })
    await session.page.goto('/swagger')
    await session.page.getByText('Threadhouse API').first().waitFor()
    await session.page.getByText('/api/v1/threads').first().waitFor()
    expect(external).toEqual([])
    expect(session.errors).toEqual([])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)
