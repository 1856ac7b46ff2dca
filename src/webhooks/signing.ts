// Standard Webhooks signatures: a `whsec_` secret (base64 of 32 random bytes) and, per request, the headers
// `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature` = `v1,` + base64(HMAC-SHA256(secret,
// `${id}.${timestamp}.${body}`)), so that receivers verify with the `standardwebhooks` or `svix` libraries.
import { hmac } from '@oslojs/crypto/hmac'
import { SHA256 } from '@oslojs/crypto/sha2'
import { decodeBase64, encodeBase64 } from '@oslojs/encoding'
import { randomKey } from '../shared/security'

const secretPrefix = 'whsec_'

/** A new endpoint secret: 256 random bits, as the Standard Webhooks libraries expect them. */
export function generateWebhookSecret(): string {
  return `${secretPrefix}${encodeBase64(randomKey())}`
}

export function signatureHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const key = decodeBase64(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret)
  const signed = new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`)
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${encodeBase64(hmac(SHA256, key, signed))}`,
  }
}
