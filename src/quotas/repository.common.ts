// The quotas feature's storage on either database (repository.ts): every method is one statement, the same on both
// dialects (db/dialect.ts). The budgets' columns on `organizations` are auth's, handed in by the composition; the
// month's totals are the usage feature's read (usage/repository.ts monthTotals), handed in the same way.
import { and, asc, eq, inArray } from 'drizzle-orm'
import type { organizations, users } from '../auth/auth.table.pg'
import type { AnyDb } from '../db/dialect'
import type { UsageRepository } from '../usage/repository'
import type { memberQuotas } from './quotas.table.pg'
import type { Budget, QuotaRepository } from './repository'

/** The tables the quotas feature reads and writes: either dialect's (db/dialect.ts). */
export interface QuotaTables {
  organizations: typeof organizations
  users: typeof users
  memberQuotas: typeof memberQuotas
}

const none: Budget = { tokens: null, costMicros: null }

export function quotaRepository(
  db: AnyDb,
  { organizations, users, memberQuotas }: QuotaTables,
  usage: Pick<UsageRepository, 'monthTotals'>,
): QuotaRepository {
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

    async budgetsFor(organizationId, userId) {
      const [row] = await db
        .select({
          tokens: organizations.quotaTokens,
          costMicros: organizations.quotaCostMicros,
          memberTokens: organizations.memberQuotaTokens,
          memberCostMicros: organizations.memberQuotaCostMicros,
          overridden: memberQuotas.userId,
          overrideTokens: memberQuotas.tokens,
          overrideCostMicros: memberQuotas.costMicros,
        })
        .from(organizations)
        .leftJoin(memberQuotas, eq(memberQuotas.userId, userId))
        .where(eq(organizations.id, organizationId))
      if (!row) return { organization: none, member: none, overridden: false }
      const overridden = row.overridden !== null
      return {
        organization: { tokens: row.tokens, costMicros: row.costMicros },
        member: overridden
          ? { tokens: row.overrideTokens, costMicros: row.overrideCostMicros }
          : { tokens: row.memberTokens, costMicros: row.memberCostMicros },
        overridden,
      }
    },

    async setOrganizationBudget(organizationId, budget) {
      await db
        .update(organizations)
        .set({ quotaTokens: budget.tokens, quotaCostMicros: budget.costMicros })
        .where(eq(organizations.id, organizationId))
    },

    async setMemberDefault(organizationId, budget) {
      await db
        .update(organizations)
        .set({ memberQuotaTokens: budget.tokens, memberQuotaCostMicros: budget.costMicros })
        .where(eq(organizations.id, organizationId))
    },

    async setMemberOverride(userId, budget) {
      if (budget === null) {
        await db.delete(memberQuotas).where(eq(memberQuotas.userId, userId))
        return
      }
      const values = { tokens: budget.tokens, costMicros: budget.costMicros }
      await db
        .insert(memberQuotas)
        .values({ userId, ...values })
        .onConflictDoUpdate({ target: memberQuotas.userId, set: values })
    },

    // One indexed read of both rows, the usage feature's.
    monthTotals: (organizationId, userId, period) => usage.monthTotals(organizationId, userId, period),
  }
}
