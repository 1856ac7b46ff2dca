// Where a form post came from: the CSRF module's same-origin judgement, as browsers and scripts present it.
import { expect, test } from 'bun:test'
import { isSameOriginRequest } from '../src/web/csrf'

test('fetch metadata decides where a form came from; Origin only counts for browsers without it', () => {
  const judge = (headers: Record<string, string>) =>
    isSameOriginRequest(new Headers(headers), 'http://threadhouse.test')
  // What Chromium sends for our own form posts under Referrer-Policy: no-referrer.
  expect(judge({ 'sec-fetch-site': 'same-origin', origin: 'null' })).toBe(true)
  expect(judge({ 'sec-fetch-site': 'none' })).toBe(true)
  expect(judge({ 'sec-fetch-site': 'cross-site', origin: 'http://threadhouse.test' })).toBe(false)
  expect(judge({ 'sec-fetch-site': 'same-site', origin: 'null' })).toBe(false)
  expect(judge({ origin: 'https://evil.example' })).toBe(false)
  expect(judge({ origin: 'null' })).toBe(false)
  expect(judge({ origin: 'http://threadhouse.test' })).toBe(true)
  expect(judge({})).toBe(true)
})
