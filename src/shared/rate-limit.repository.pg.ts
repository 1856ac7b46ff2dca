// Rate-limit windows on PostgreSQL (rate-limit.repository.ts): one upsert per request, counted by the row lock it
// takes, so two instances counting one key at once each see the other's request.
import { lte, sql } from 'drizzle-orm'
import type { PgDb } from '../db/postgres'
import type { RateLimitRepository } from './rate-limit.repository'
import { rateLimitWindows } from './rate-limit.table.pg'

export function pgRateLimitRepository(db: PgDb): RateLimitRepository {
  return {
    async hit(key, windowMs, now) {
      // A window that has ended starts again from this request; `excluded` is the row this request would insert.
      const ended = sql`${rateLimitWindows.endsAt} <= ${now}`
      const [window] = await db
        .insert(rateLimitWindows)
        .values({ key, startedAt: now, endsAt: now + windowMs, count: 1 })
        .onConflictDoUpdate({
          target: rateLimitWindows.key,
          set: {
            startedAt: sql`case when ${ended} then excluded.started_at else ${rateLimitWindows.startedAt} end`,
            endsAt: sql`case when ${ended} then excluded.ends_at else ${rateLimitWindows.endsAt} end`,
            count: sql`case when ${ended} then 1 else ${rateLimitWindows.count} + 1 end`,
          },
        })
        .returning({ endsAt: rateLimitWindows.endsAt, count: rateLimitWindows.count })
      if (!window) throw new Error('the rate-limit window was not counted')
      return window
    },

    async deleteEnded(now) {
      await db.delete(rateLimitWindows).where(lte(rateLimitWindows.endsAt, now))
    },
  }
}
