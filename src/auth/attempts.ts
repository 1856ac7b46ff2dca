// Sign-in attempt limits: each client address and each email get RATE_LIMIT_AUTH_PER_MINUTE attempts a
// minute, counted before the password is checked, so guessing stays slow and argon2 cannot be used to load
// the server. The email key also slows a guesser spread over many addresses, at the price that someone
// hammering a known email can keep its owner waiting for as long as they keep going.
import type { Limiter } from '../shared/rate-limit'

/**
 * Counts one sign-in attempt; null when it may go ahead, else the seconds to wait. On PostgreSQL the limiter counts
 * in the database, so attempts spread over several instances count together.
 */
export async function signInRetryAfter(
  limiter: Limiter | undefined,
  ip: string | null,
  email: string,
): Promise<number | null> {
  if (!limiter) return null
  const waits = (
    await Promise.all([
      // Without a known address (in-process requests) only the email is limited, like the global per-IP limit.
      ip === null ? null : limiter.hit(`signin-ip:${ip}`),
      email === '' ? null : limiter.hit(`signin-email:${email.trim().toLowerCase()}`),
    ])
  ).filter((wait): wait is number => wait !== null)
  return waits.length === 0 ? null : Math.max(...waits)
}
