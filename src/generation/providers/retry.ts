// Retries a model request that failed transiently, with exponential backoff, but only while nothing
// has reached the user: once a token is out, a second attempt would repeat or contradict it.
import { type FailureKind, ProviderFailure } from './failures'

export interface RetryPolicy {
  maxAttempts: number
  baseDelayMs: number
}

/** Longest wait between two attempts, whether computed or asked for with Retry-After. */
const maxDelayMs = 30_000

/** Exponential backoff with up to 25% jitter, so that many threads failing together spread out. */
export function retryDelayMs(attempt: number, failure: ProviderFailure, policy: RetryPolicy): number {
  if (failure.retryAfterMs !== undefined) return Math.min(failure.retryAfterMs, maxDelayMs)
  const backoff = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), maxDelayMs)
  return backoff * (1 - Math.random() * 0.25)
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

function attemptsSuffix(attempts: number): string {
  return attempts > 1 ? ` (gave up after ${attempts} attempts)` : ''
}

export async function* withRetries<T>(
  attempt: () => AsyncIterable<T>,
  policy: RetryPolicy,
  signal: AbortSignal,
  /** Told of every attempt made again, with the kind of failure that called for it (the operators' metrics). */
  retried?: (kind: FailureKind) => void,
): AsyncIterable<T> {
  for (let number = 1; ; number++) {
    let produced = false
    try {
      for await (const item of attempt()) {
        produced = true
        yield item
      }
      return
    } catch (error) {
      if (signal.aborted || !(error instanceof ProviderFailure)) throw error
      if (!error.transient || produced) throw error
      if (number >= policy.maxAttempts) {
        throw new ProviderFailure(error.kind, `${error.message}${attemptsSuffix(number)}`)
      }
      await delay(retryDelayMs(number, error, policy), signal)
      retried?.(error.kind)
    }
  }
}
