// The quotas feature's storage on either database (repository.ts): every method is one statement, the same on both
// dialects (db/dialect.ts). The budgets' columns on `organizations` are auth's and `usage_totals` is the usage
// feature's, handed in by the composition: the check before every answer joins them into one prepared read, and the
// pages' and CLI's month totals are the usage feature's own read (usage/repository.ts monthTotals), handed in too.
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { organizations, users } from '../auth/auth.table.pg'
import type { AnyDb, Audited } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import type { UsageRepository } from '../usage/repository'
import type { usageTotals } from '../usage/usage.table.pg'
import type { memberQuotas } from './quotas.table.pg'
import type { Budget, QuotaRepository, Spent } from './repository'

/** The tables the quotas feature reads and writes: either dialect's (db/dialect.ts). */
export interface QuotaTables {
  organizations: typeof organizations
  users: typeof users
  memberQuotas: typeof memberQuotas
  /** The usage feature's running totals, read by the check before an answer starts. */
  usageTotals: typeof usageTotals
}

const none: Budget = { tokens: null, costMicros: null }

export function quotaRepository(
  db: AnyDb,
  { organizations, users, memberQuotas, usageTotals }: QuotaTables,
  usage: Pick<UsageRepository, 'monthTotals'>,
  audited: Audited,
): QuotaRepository {
  // Every send runs the standing read: built and prepared once (on first use: the SQLite store may be built before
  // its migrations have run), then only bound, as the hot reads of threads/repository.common.ts are.
  const organizationTotal = alias(usageTotals, 'organization_total')
  const memberTotal = alias(usageTotals, 'member_total')
  const bound = {
    organizationId: sql.placeholder('organizationId'),
    userId: sql.placeholder('userId'),
    period: sql.placeholder('period'),
  }
  const totalOf = (total: typeof organizationTotal | typeof memberTotal, userId: typeof bound.userId | number) =>
    and(eq(total.period, bound.period), eq(total.organizationId, organizations.id), eq(total.userId, userId))
  const standing = () =>
    prepared(db as unknown as PgDb, 'quotas:standing', () =>
      db
        .select({
          tokens: organizations.quotaTokens,
          costMicros: organizations.quotaCostMicros,
          memberTokens: organizations.memberQuotaTokens,
          memberCostMicros: organizations.memberQuotaCostMicros,
          overridden: memberQuotas.userId,
          overrideTokens: memberQuotas.tokens,
          overrideCostMicros: memberQuotas.costMicros,
          organizationUsedTokens: organizationTotal.tokens,
          organizationUsedCost: organizationTotal.costMicros,
          memberUsedTokens: memberTotal.tokens,
          memberUsedCost: memberTotal.costMicros,
        })
        .from(organizations)
        .leftJoin(memberQuotas, eq(memberQuotas.userId, bound.userId))
        .leftJoin(organizationTotal, totalOf(organizationTotal, 0))
        .leftJoin(memberTotal, totalOf(memberTotal, bound.userId))
        .where(eq(organizations.id, bound.organizationId))
        .prepare('quota_standing'),
    )
  /** A month with no answer yet has no totals row: nothing spent. */
  const spent = (tokens: unknown, costMicros: unknown): Spent => ({
    tokens: Number(tokens ?? 0),
    costMicros: Number(costMicros ?? 0),
  })

  return {
    async budgets(organizationId) {
      // The organization's row beside each member with an override (none: one row, its member columns null).
      const rows = await db
        .select({
          tokens: organizations.quotaTokens,
          costMicros: organizations.quotaCostMicros,
          memberTokens: organizations.memberQuotaTokens,
          memberCostMicros: organizations.memberQuotaCostMicros,
          userId: memberQuotas.userId,
          email: users.email,
          name: users.name,
          overrideTokens: memberQuotas.tokens,
          overrideCostMicros: memberQuotas.costMicros,
        })
        .from(organizations)
        .leftJoin(
          users,
          and(
            eq(users.organizationId, organizations.id),
            inArray(users.id, db.select({ id: memberQuotas.userId }).from(memberQuotas)),
          ),
        )
        .leftJoin(memberQuotas, eq(memberQuotas.userId, users.id))
        .where(eq(organizations.id, organizationId))
        .orderBy(asc(users.email))
      const first = rows[0]
      if (!first) return { organization: none, memberDefault: none, overrides: [] }
      return {
        organization: { tokens: first.tokens, costMicros: first.costMicros },
        memberDefault: { tokens: first.memberTokens, costMicros: first.memberCostMicros },
        overrides: rows.flatMap((row) =>
          row.userId === null || row.email === null
            ? []
            : [
                {
                  userId: row.userId,
                  email: row.email,
                  name: row.name,
                  tokens: row.overrideTokens,
                  costMicros: row.overrideCostMicros,
                },
              ],
        ),
      }
    },

    async standing(organizationId, userId, period) {
      const [row] = await standing().execute({ organizationId, userId, period })
      if (!row) {
        const nothing = spent(0, 0)
        return {
          budgets: { organization: none, member: none, overridden: false },
          totals: { organization: nothing, member: nothing },
        }
      }
      const overridden = row.overridden !== null
      return {
        budgets: {
          organization: { tokens: row.tokens, costMicros: row.costMicros },
          member: overridden
            ? { tokens: row.overrideTokens, costMicros: row.overrideCostMicros }
            : { tokens: row.memberTokens, costMicros: row.memberCostMicros },
          overridden,
        },
        totals: {
          organization: spent(row.organizationUsedTokens, row.organizationUsedCost),
          member: spent(row.memberUsedTokens, row.memberUsedCost),
        },
      }
    },

    async setOrganizationBudget(organizationId, budget, audit) {
      await audited(
        (tx) => [
          tx
            .update(organizations)
            .set({ quotaTokens: budget.tokens, quotaCostMicros: budget.costMicros })
            .where(eq(organizations.id, organizationId))
            .returning({ id: organizations.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    async setMemberDefault(organizationId, budget, audit) {
      await audited(
        (tx) => [
          tx
            .update(organizations)
            .set({ memberQuotaTokens: budget.tokens, memberQuotaCostMicros: budget.costMicros })
            .where(eq(organizations.id, organizationId))
            .returning({ id: organizations.id }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    async setMemberOverride(userId, budget, audit) {
      const values = budget && { tokens: budget.tokens, costMicros: budget.costMicros }
      await audited(
        (tx) => [
          values === null
            ? tx.delete(memberQuotas).where(eq(memberQuotas.userId, userId)).returning({ userId: memberQuotas.userId })
            : tx
                .insert(memberQuotas)
                .values({ userId, ...values })
                .onConflictDoUpdate({ target: memberQuotas.userId, set: values })
                .returning({ userId: memberQuotas.userId }),
        ],
        (rows) => (rows.length > 0 ? audit : null),
      )
    },

    // One indexed read of both rows, the usage feature's.
    monthTotals: (organizationId, userId, period) => usage.monthTotals(organizationId, userId, period),
  }
}
