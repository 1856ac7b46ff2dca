// What the in-process benchmarks (shared-state, feed, idempotency, webhooks) share: an owner to act as, and reading
// percentiles off sorted timings.

import type { Scope } from '../src/auth/model'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import type { Store } from '../src/store'
import { testOrigin, tokenHolder } from '../test/support/audit'

/** The value at percentile `p` of ascending `sorted` (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN
}

/** A new organization `slug` with its owner, and a personal access token of theirs with `scopes`. */
export async function benchOwner(
  store: Store,
  slug = 'default',
  scopes: Scope[] = ['threads:read', 'threads:write'],
): Promise<{ userId: number; organizationId: number; token: string }> {
  const email = `${slug}@bench.example`
  const created = await store.users.create(
    {
      sub: Bun.randomUUIDv7(),
      email,
      name: null,
      role: 'owner',
      passwordHash: 'not used',
      mustChangePassword: false,
      organizationSlug: slug,
      mayCreateOrganization: true,
    },
    Date.now(),
  )
  if (typeof created !== 'object') throw new Error(created)
  const token = await createPersonalAccessToken(
    store.accessTokens,
    { user: await tokenHolder(store, created.id), name: 'bench', scopes },
    Date.now(),
    testOrigin,
  )
  const organizationId = (await store.users.findByEmail(email))?.organizationId ?? -1
  return { userId: created.id, organizationId, token }
}
