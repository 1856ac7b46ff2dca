// Sealed secrets (shared/secret-box.ts): what one key seals only that key opens, only for the context it was sealed
// for, only as it was written; a retired key still opens what it sealed, and nothing is sealed without a key.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { SecretsUnavailable, SecretUnreadable, secretBox } from '../src/shared/secret-box'

const newKey = () => randomBytes(32).toString('base64')
const context = 'mcp_servers:0197-a:headers'
const secret = '{"Authorization":"Bearer sk-live-not-for-logs"}'

test('a sealed value opens to what was sealed, and shows nothing of it', () => {
  const box = secretBox({ current: newKey() })
  expect(box.available).toBe(true)
  const sealed = box.seal(secret, context)
  expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
  expect(sealed).not.toContain('sk-live')
  expect(box.open(sealed, context)).toBe(secret)
  // A fresh nonce each time: the same secret never seals the same way twice.
  expect(box.seal(secret, context)).not.toBe(sealed)
  expect(box.open(box.seal('', context), context)).toBe('')
  expect(box.open(box.seal('é ✓ 🔑', context), context)).toBe('é ✓ 🔑')
})

test('a value moved to another row or field does not open there', () => {
  const box = secretBox({ current: newKey() })
  const sealed = box.seal(secret, context)
  expect(() => box.open(sealed, 'mcp_servers:0197-b:headers')).toThrow(SecretUnreadable)
  expect(() => box.open(sealed, 'mcp_server_oauth:0197-a:tokens')).toThrow(SecretUnreadable)
})

test('altered bytes or a broken format are refused, never opened to something else', () => {
  const box = secretBox({ current: newKey() })
  const sealed = box.seal(secret, context)
  const [version, kid, iv, body] = sealed.split('.') as [string, string, string, string]
  const flipped = (text: string, at: number) => {
    const bytes = Buffer.from(text, 'base64url')
    bytes[at] = (bytes[at] as number) ^ 1
    return bytes.toString('base64url')
  }
  for (const altered of [
    [version, kid, iv, flipped(body, 0)].join('.'),
    // The last byte is the tag's.
    [version, kid, iv, flipped(body, Buffer.from(body, 'base64url').length - 1)].join('.'),
    [version, kid, flipped(iv, 3), body].join('.'),
    [version, kid, iv, body.slice(0, 10)].join('.'),
    ['v2', kid, iv, body].join('.'),
    [version, kid, iv].join('.'),
    `${sealed}.extra`,
    'not sealed at all',
  ]) {
    expect(() => box.open(altered, context)).toThrow(SecretUnreadable)
  }
})

test('after a rotation the previous key still opens what it sealed, and the current one seals', () => {
  const [old, current] = [newKey(), newKey()]
  const before = secretBox({ current: old }).seal(secret, context)
  const rotated = secretBox({ current, previous: [newKey(), old] })
  expect(rotated.open(before, context)).toBe(secret)
  const after = rotated.seal(secret, context)
  // Sealed under the new key: a box with only the new key opens it, a box with only the old one does not.
  expect(secretBox({ current }).open(after, context)).toBe(secret)
  expect(() => secretBox({ current: old }).open(after, context)).toThrow(SecretUnreadable)
})

test('without SECRETS_KEY nothing is sealed or opened; a value under a key not configured is unreadable', () => {
  const none = secretBox({})
  expect(none.available).toBe(false)
  expect(() => none.seal(secret, context)).toThrow(SecretsUnavailable)
  const sealed = secretBox({ current: newKey() }).seal(secret, context)
  expect(() => none.open(sealed, context)).toThrow(SecretsUnavailable)
  const other = secretBox({ current: newKey(), previous: [newKey()] })
  expect(() => other.open(sealed, context)).toThrow(SecretUnreadable)
  // The errors name the variables, never a key or the secret.
  for (const attempt of [() => none.seal(secret, context), () => other.open(sealed, context)]) {
    const message = (() => {
      try {
        attempt()
      } catch (error) {
        return (error as Error).message
      }
      return ''
    })()
    expect(message).toContain('SECRETS_KEY')
    expect(message).not.toContain('sk-live')
  }
})

test('a key that is not 32 bytes is refused without being repeated', () => {
  const short = randomBytes(16).toString('base64')
  expect(() => secretBox({ current: short })).toThrow('SECRETS_KEY must be 32 bytes as base64')
  expect(() => secretBox({ current: newKey(), previous: [short] })).toThrow('SECRETS_KEY_PREVIOUS must be 32 bytes')
  try {
    secretBox({ current: short })
  } catch (error) {
    expect((error as Error).message).not.toContain(short)
  }
})
