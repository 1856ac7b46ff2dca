// The quotas feature's storage contract: monthly budgets (the organization's, its default per member, and members'
// overrides) and the month's totals they are checked against. Every method is one statement (repository.common.ts,
// both dialects).
import type { AuditEntry } from '../shared/audit'

/** A monthly budget: tokens (input + output), cost in millionths of the models' currency, or both; null: no limit. */
export interface Budget {
  tokens: number | null
  costMicros: number | null
}

/** A member's own budget, which replaces the organization's default per member for them. */
export interface MemberOverride extends Budget {
  userId: number
  email: string
  name: string | null
}

/** Every budget of an organization, as the administration page and `quota:show` show them. */
export interface OrganizationBudgets {
  organization: Budget
  memberDefault: Budget
  overrides: MemberOverride[]
}

/** The budgets a person's answers are checked against: the organization's, and theirs (override, else default). */
export interface CallerBudgets {
  organization: Budget
  member: Budget
  /** Whether the member's budget is their own override rather than the default. */
  overridden: boolean
}

export interface Spent {
  tokens: number
  costMicros: number
}

/** What a month's answers have used so far: the organization's total and the member's (zero when none ran). */
export interface MonthTotals {
  organization: Spent
  member: Spent
}

export interface QuotaRepository {
  /** The organization's budgets with every override, by the members' e-mail addresses. */
  budgets(organizationId: number): Promise<OrganizationBudgets>

  /**
   * The budgets that apply to this member of the organization and what the month (`period` YYYY-MM, UTC) has used of
   * them: the check before every answer, so one prepared statement reading the organization's row, the member's
   * override and the month's two totals, each by its key.
   */
  standing(
    organizationId: number,
    userId: number,
    period: string,
  ): Promise<{ budgets: CallerBudgets; totals: MonthTotals }>

  /** Each setter records `audit` in its own transaction when it changed a row. */
  setOrganizationBudget(organizationId: number, budget: Budget, audit: AuditEntry): Promise<void>

  setMemberDefault(organizationId: number, budget: Budget, audit: AuditEntry): Promise<void>

  /** Stores a member's override (the caller checks they are of the organization); null removes it. */
  setMemberOverride(userId: number, budget: Budget | null, audit: AuditEntry): Promise<void>

  /**
   * The month's totals (`period` YYYY-MM, UTC) of the organization (usage_totals' user 0) and of the member: one
   * indexed read of both rows in one statement (the usage feature's `monthTotals`); `standing` reads the same rows
   * within its one statement.
   */
  monthTotals(organizationId: number, userId: number, period: string): Promise<MonthTotals>
}
