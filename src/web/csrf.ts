// Cross-site request forgery defence for every state-changing form and settings write. Two layers:
// a token the attacker cannot know, and a check that the browser says the request came from our own pages.
// Signed-in forms carry a token derived from the session cookie; the sign-in form, which has no session yet,
// uses a signed double-submit cookie (OWASP's "signed double-submit cookie" pattern).
import { hmac } from '@oslojs/crypto/hmac'
import { SHA256 } from '@oslojs/crypto/sha2'
import { encodeBase64urlNoPadding } from '@oslojs/encoding'
import { secretsEqual } from '../shared/security'

const encoder = new TextEncoder()

/** What a refused form says, on every page that has forms. */
export const formRefusedMessage =
  'This form could not be accepted because it did not come from a Threadhouse page, or it has expired. ' +
  'Go back, reload the page and try again.'

/** The token for forms shown to a signed-in person: only someone holding the session cookie can compute it. */
export function sessionCsrfToken(sessionToken: string): string {
  return encodeBase64urlNoPadding(hmac(SHA256, encoder.encode(sessionToken), encoder.encode('threadhouse csrf v1')))
}

/** A fresh random value for the pre-sign-in CSRF cookie. */
export function newCsrfNonce(): string {
  const bytes = new Uint8Array(24)
  crypto.getRandomValues(bytes)
  return encodeBase64urlNoPadding(bytes)
}

/**
 * The name of the server key (shared/server-keys.repository.ts) that signs pre-sign-in cookies: stored in the
 * database on PostgreSQL, so a sign-in form served by one instance can be posted to another.
 */
export const anonymousCsrfKeyName = 'csrf'

/** The form token that goes with a pre-sign-in cookie: signed with a server key so it cannot be forged. */
export function anonymousCsrfToken(key: Uint8Array, nonce: string): string {
  return encodeBase64urlNoPadding(hmac(SHA256, key, encoder.encode(`anonymous:${nonce}`)))
}

export function csrfTokenMatches(expected: string, given: string | null | undefined): boolean {
  return typeof given === 'string' && secretsEqual(expected, given)
}

/**
 * Whether the browser vouches that a request came from our own origin. Browsers send Sec-Fetch-Site and Origin
 * on form posts; scripts (curl, tests) send neither and are judged by the CSRF token alone. Where Sec-Fetch-Site
 * is sent it decides: our pages' `Referrer-Policy: no-referrer` makes browsers send `Origin: null` even on
 * same-origin form posts, and `null` names no site, so it is left to the token too.
 */
export function isSameOriginRequest(headers: Headers, publicUrl: string): boolean {
  const site = headers.get('sec-fetch-site')
  if (site !== null) return site === 'same-origin' || site === 'none'
  const origin = headers.get('origin')
  return origin === null || origin === 'null' || origin === new URL(publicUrl).origin
}
