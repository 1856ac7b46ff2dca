// Administration → Usage limits: the organization's monthly budget, the default budget of each member, and members'
// own budgets (tokens, cost, or both; an empty field is no limit). Plain forms: they work without the script.
import { escapeHtml } from '@kitajs/html'
import type { Member } from '../../auth/members'
import type { Budget, OrganizationBudgets, Spent } from '../../quotas/repository'
import { describeBudget } from '../../quotas/service'
import { formatCost, formatTokens } from '../../usage/price'
import { CsrfField, ErrorAlert, Notice, TableRegion } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export const quotasPath = '/admin/quotas'

/** Which form was posted: the organization's budget, the default per member, or one member's. */
export type QuotaScope = 'organization' | 'member-default' | 'member'

/** What a form holds as posted, when it was refused. */
export interface QuotaFormValues {
  scope: QuotaScope
  tokens: string
  cost: string
  /** The member's `sub` (scope `member`). */
  member?: string
}

export interface QuotasPageProps {
  viewer: Viewer
  budgets: OrganizationBudgets
  members: Member[]
  /** What the organization has used this month (UTC), and the month's name. */
  used: Spent
  month: string
  /** The day every budget starts again, in words. */
  resetDay: string
  notice?: string | null
  error?: string | null
  entered?: QuotaFormValues
}

const tokensField = (budget: Budget): string => (budget.tokens === null ? '' : String(budget.tokens))
const costField = (budget: Budget): string =>
  budget.costMicros === null ? '' : formatCost(budget.costMicros).replaceAll(',', '')

function BudgetFields(props: { id: string; tokens: string; cost: string }): JSX.Element {
  return (
    <>
      <div class="field">
        <label for={`${props.id}-tokens`}>Tokens a month</label>
        <input
          id={`${props.id}-tokens`}
          name="tokens"
          type="text"
          inputmode="numeric"
          value={escapeHtml(props.tokens)}
          aria-describedby={`${props.id}-help`}
        />
      </div>
      <div class="field">
        <label for={`${props.id}-cost`}>Cost a month</label>
        <input
          id={`${props.id}-cost`}
          name="cost"
          type="text"
          inputmode="decimal"
          value={escapeHtml(props.cost)}
          aria-describedby={`${props.id}-help`}
        />
      </div>
      <p id={`${props.id}-help`} class="muted">
        Tokens count what answers read and write (input and output). Cost is in the currency of the models' prices, such
        as 25 or 12.50. Leave a field empty for no limit.
      </p>
    </>
  )
}

function SaveButton({ label = 'Save' }: { label?: string }): JSX.Element {
  return (
    <div class="actions start">
      <button type="submit" class="primary" safe>
        {label}
      </button>
    </div>
  )
}

export function QuotasPage(props: QuotasPageProps): JSX.Element {
  const { budgets, entered } = props
  const values = (scope: QuotaScope, budget: Budget) =>
    entered?.scope === scope ? entered : { tokens: tokensField(budget), cost: costField(budget) }
  const organization = values('organization', budgets.organization)
  const memberDefault = values('member-default', budgets.memberDefault)
  const overridden = new Set(budgets.overrides.map((override) => override.userId))
  const member =
    entered?.scope === 'member' ? entered : { tokens: tokensField(budgets.memberDefault), cost: '', member: '' }
  const used = `${formatTokens(props.used.tokens)} tokens and ${formatCost(props.used.costMicros)} in cost`
  return (
    <AdminFrame viewer={props.viewer} current={quotasPath} title="Usage limits">
      <section aria-labelledby="quotas-title" class="stack">
        <h2 id="quotas-title">Usage limits</h2>
        <Notice text={props.notice ?? null} />
        <ErrorAlert text={props.error} />
        <p safe>
          {`Monthly budgets, by calendar month in UTC: they start again on ${props.resetDay}. Once one is used up, nobody it applies to can start an answer until then (the API answers 429); an answer already running is finished. Members see a notice from 80%. This month (${props.month}) the organization has used ${used}.`}
        </p>
        <form method="post" action={quotasPath} class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <input type="hidden" name="scope" value="organization" />
          <h3>The organization's budget</h3>
          <p class="muted" safe>
            {`For everyone together. Now: ${describeBudget(budgets.organization)}.`}
          </p>
          <BudgetFields id="quota-organization" {...organization} />
          <SaveButton />
        </form>
        <form method="post" action={quotasPath} class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <input type="hidden" name="scope" value="member-default" />
          <h3>Each member's budget</h3>
          <p class="muted" safe>
            {`For each person, unless they have their own below. Now: ${describeBudget(budgets.memberDefault)}.`}
          </p>
          <BudgetFields id="quota-default" {...memberDefault} />
          <SaveButton />
        </form>
        <form method="post" action={quotasPath} class="card stack">
          <CsrfField token={props.viewer.csrf} />
          <input type="hidden" name="scope" value="member" />
          <h3>A member's own budget</h3>
          <p class="muted">
            Replaces each member's budget for one person: a field left empty is no limit for them. Their answers still
            count toward the organization's budget.
          </p>
          <div class="field">
            <label for="quota-member">Member</label>
            <select id="quota-member" name="member" required>
              <option value="" selected={!member.member}>
                Choose a member
              </option>
              {props.members.map((person) => (
                <option value={escapeHtml(person.sub)} selected={member.member === person.sub} safe>
                  {overridden.has(person.id) ? `${person.email} (has their own)` : person.email}
                </option>
              ))}
            </select>
          </div>
          <BudgetFields id="quota-member" {...member} />
          <SaveButton label="Save their budget" />
        </form>
        <h3>Members with their own budget</h3>
        {budgets.overrides.length === 0 ? (
          <p class="muted">Nobody: every member has the budget above.</p>
        ) : (
          <TableRegion label="Members with their own budget">
            <table>
              <caption class="visually-hidden">Members with their own budget</caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Tokens a month</th>
                  <th scope="col">Cost a month</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {budgets.overrides.map((override) => {
                  const sub = props.members.find((person) => person.id === override.userId)?.sub
                  return (
                    <tr>
                      <td safe>{override.email}</td>
                      <td safe>{override.tokens === null ? 'No limit' : formatTokens(override.tokens)}</td>
                      <td safe>{override.costMicros === null ? 'No limit' : formatCost(override.costMicros)}</td>
                      <td>
                        {sub ? (
                          <form method="post" action={quotasPath}>
                            <CsrfField token={props.viewer.csrf} />
                            <input type="hidden" name="scope" value="member" />
                            <input type="hidden" name="member" value={escapeHtml(sub)} />
                            <input type="hidden" name="remove" value="true" />
                            <button type="submit" safe>
                              {`Use each member's budget for ${override.email}`}
                            </button>
                          </form>
                        ) : null}
                      </td>
                    </tr>
                  )
                })}
              </tbody>
            </table>
          </TableRegion>
        )}
      </section>
    </AdminFrame>
  )
}
