// The same-origin half of the CSRF defence, as real browsers send it.
import { expect, test } from 'bun:test'
import { isSameOriginRequest } from '../src/web/csrf'

const publicUrl = 'http://threadhouse.test'
const judge = (headers: Record<string, string>) => isSameOriginRequest(new Headers(headers), publicUrl)

test('a same-origin form post under Referrer-Policy: no-referrer (Origin: null) is ours', () => {
  expect(judge({ origin: 'null', 'sec-fetch-site': 'same-origin' })).toBe(true)
  expect(judge({ origin: publicUrl, 'sec-fetch-site': 'same-origin' })).toBe(true)
  expect(judge({ 'sec-fetch-site': 'none' })).toBe(true)
  expect(judge({})).toBe(true)
  expect(judge({ origin: 'null' })).toBe(true)
})

test('another site is refused, whatever Origin says', () => {
  expect(judge({ origin: 'null', 'sec-fetch-site': 'cross-site' })).toBe(false)
  expect(judge({ origin: publicUrl, 'sec-fetch-site': 'same-site' })).toBe(false)
  expect(judge({ origin: 'https://evil.example' })).toBe(false)
  expect(judge({ origin: 'http://threadhouse.test:8080' })).toBe(false)
})
