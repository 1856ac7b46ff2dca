// A smoke test of the browser harness itself: real Chromium loads a page the server serves.
import { expect, test } from 'bun:test'
import { sharedBrowser } from './support/browser'
import { harness, listening } from './support/helpers'

const browser = sharedBrowser()

test('Swagger UI renders in Chromium from local assets, with no console errors', async () => {
  await using h = await harness()
  await using server = listening(h)
  const origin = server.url.origin
  await using session = await browser.open(origin)
  const external: string[] = []
  session.page.on('request', (request) => {
    if (!request.url().startsWith(origin)) external.push(request.url())
  })
  await session.page.goto('/swagger')
  await session.page.getByText('Threadhouse API').first().waitFor()
  await session.page.getByText('/api/v1/threads').first().waitFor()
  expect(external).toEqual([])
  expect(session.errors).toEqual([])
})
