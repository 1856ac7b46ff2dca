// Secrets Threadhouse must use again, and so cannot hash (an MCP server's header values, OAuth tokens, a PKCE
// verifier), are stored sealed: AES-256-GCM from node:crypto under SECRETS_KEY, which lives in the environment and
// never in the database beside what it protects. A sealed value reads "v1.<kid>.<iv>.<ciphertext and tag>": `kid`
// names the key (the first 8 hex digits of its SHA-256), so a value sealed under a key since retired is opened with
// that key from SECRETS_KEY_PREVIOUS. The context (which row, which field) is the authenticated data: a sealed value
// copied to another row or field does not open there.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

/** SECRETS_KEY is not set: nothing can be sealed (or opened). */
export class SecretsUnavailable extends Error {
  constructor() {
    super('SECRETS_KEY is not set: secrets cannot be stored or read (see docs/configuration.md)')
    this.name = 'SecretsUnavailable'
  }
}

/** A sealed value that none of the configured keys opens: another key, another context, or altered bytes. */
export class SecretUnreadable extends Error {
  constructor(why: string) {
    super(`A stored secret cannot be read: ${why}`)
    this.name = 'SecretUnreadable'
  }
}

export interface SecretBox {
  /** Whether SECRETS_KEY is set, so that secrets can be sealed. */
  readonly available: boolean
  /** Seals `plain` for `context` under SECRETS_KEY; throws SecretsUnavailable without it. */
  seal(plain: string, context: string): string
  /** Opens what `seal` made for `context`, under SECRETS_KEY or SECRETS_KEY_PREVIOUS; throws SecretUnreadable. */
  open(sealed: string, context: string): string
}

const version = 'v1'
const algorithm = 'aes-256-gcm'
/** GCM's recommended nonce: 96 random bits, never reused with one key in practice (2^-32 after 2^32 seals). */
const ivBytes = 12
const tagBytes = 16
const keyBytes = 32

interface Key {
  id: string
  bytes: Buffer
}

function keyOf(base64: string, name: string): Key {
  const bytes = Buffer.from(base64, 'base64')
  // The value itself is never repeated: it is a secret.
  if (bytes.length !== keyBytes) throw new Error(`${name} must be ${keyBytes} bytes as base64`)
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 8), bytes }
}

/** A box over SECRETS_KEY (`current`, base64 of 32 bytes) and the keys it replaced (`previous`), newest first. */
export function secretBox(keys: { current?: string; previous?: string[] }): SecretBox {
  const current = keys.current === undefined ? undefined : keyOf(keys.current, 'SECRETS_KEY')
  const all = [...(current ? [current] : []), ...(keys.previous ?? []).map((key) => keyOf(key, 'SECRETS_KEY_PREVIOUS'))]
  return {
    available: current !== undefined,

    seal(plain, context) {
      if (!current) throw new SecretsUnavailable()
      const iv = randomBytes(ivBytes)
      const cipher = createCipheriv(algorithm, current.bytes, iv, { authTagLength: tagBytes })
      cipher.setAAD(Buffer.from(context, 'utf8'))
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()])
      return [version, current.id, iv.toString('base64url'), body.toString('base64url')].join('.')
    },

    open(sealed, context) {
      if (all.length === 0) throw new SecretsUnavailable()
      const [format, keyId, iv, body, ...rest] = sealed.split('.')
      if (format !== version || !keyId || !iv || !body || rest.length > 0) {
        throw new SecretUnreadable('it is not a sealed value')
      }
      const candidates = all.filter((key) => key.id === keyId)
      if (candidates.length === 0) {
        throw new SecretUnreadable(
          `it was sealed under key ${keyId}, which neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS is`,
        )
      }
      const nonce = Buffer.from(iv, 'base64url')
      const bytes = Buffer.from(body, 'base64url')
      if (nonce.length !== ivBytes || bytes.length < tagBytes) throw new SecretUnreadable('it is not a sealed value')
      // Two keys could share the 32 bits of an ID: each is tried, and only the right one authenticates.
      for (const key of candidates) {
        try {
          const decipher = createDecipheriv(algorithm, key.bytes, nonce, { authTagLength: tagBytes })
          decipher.setAAD(Buffer.from(context, 'utf8'))
          decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes))
          return Buffer.concat([
            decipher.update(bytes.subarray(0, bytes.length - tagBytes)),
            decipher.final(),
          ]).toString('utf8')
        } catch {
          // The tag did not match under this key: the next, if any.
        }
      }
      throw new SecretUnreadable('it was altered, or sealed for another place')
    },
  }
}
