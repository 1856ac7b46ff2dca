// The usage pages' views: Administration → Usage (the organization's) and Settings → Usage (one's own). A GET form
// chooses the range; each chart is inline SVG drawn here (no script, no outside asset, colours from the stylesheet's
// variables so both themes work) with the same numbers in a table beneath it; CSV links reuse GET /usage's rows.
import { escapeHtml } from '@kitajs/html'
import { ErrorAlert, TableRegion } from '../../web/components'
import { AdminFrame, SettingsFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'
import { formatCost, formatTokens } from '../price'
import type { UsageAggregate } from '../repository'
import { tokensOf, type UsageOverview } from '../service'

export const adminUsagePath = '/admin/usage'
export const settingsUsagePath = '/settings/usage'

/** Series colours: the stylesheet's --chart-1 … --chart-6, reused in turn. */
const seriesClass = (index: number): string => `series-${index % 6}`

/** Costs as the pages show them: to the cent, or (under a cent) as precisely as the price makes them. */
export function formatMoney(micros: number): string {
  return formatCost(micros >= 10_000 ? Math.round(micros / 10_000) * 10_000 : micros)
}

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 2 })

/** The smallest of 1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8 × 10ⁿ at or above `value`: an axis top whose quarters read well. */
function niceMax(value: number): number {
  if (value <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  return ([1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8, 10].find((step) => step * power >= value) ?? 10) * power
}

export interface ChartBar {
  /** The bar's name in full (titles, and the table's rows). */
  label: string
  /** Its name on the axis, when shorter; empty: no label under this bar. */
  axisLabel?: string
  /** One value per series, in the series' order. */
  values: number[]
}

export interface StackedBarsProps {
  /** The chart's accessible name. */
  label: string
  series: string[]
  bars: ChartBar[]
  format: (value: number) => string
  /** Columns over an axis of values (days), or rows, each named on its left and valued on its right (names). */
  layout: 'columns' | 'rows'
}

/** Stacked bars as inline SVG; a plain bar chart is a stack of one series. Each segment's <title> says its value. */
export function StackedBars(props: StackedBarsProps): JSX.Element {
  const { bars, series, format } = props
  const totals = bars.map((bar) => bar.values.reduce((sum, value) => sum + value, 0))
  const width = 720
  const segments = (bar: ChartBar, place: (start: number, value: number) => JSX.Element) => {
    let start = 0
    return bar.values.map((value, index) => {
      if (value <= 0) return ''
      const element = (
        <g class={seriesClass(index)}>
          {place(start, value)}
          <title safe>{`${bar.label} · ${series[index] ?? ''}: ${format(value)}`}</title>
        </g>
      )
      start += value
      return element
    })
  }
  if (props.layout === 'rows') {
    const rowHeight = 28
    const labelWidth = 190
    const barRoom = width - labelWidth - 110
    const top = Math.max(...totals, 0) || 1
    const height = bars.length * rowHeight
    return (
      <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={escapeHtml(props.label)}>
        <title safe>{props.label}</title>
        {bars.map((bar, row) => {
          const y = row * rowHeight
          const name = bar.label.length > 24 ? `${bar.label.slice(0, 23)}…` : bar.label
          return (
            <g>
              <text x={labelWidth - 8} y={y + rowHeight / 2 + 4} text-anchor="end" safe>
                {name}
              </text>
              {segments(bar, (start, value) => (
                <rect
                  x={labelWidth + (start / top) * barRoom}
                  y={y + 5}
                  width={Math.max((value / top) * barRoom, 1)}
                  height={rowHeight - 10}
                />
              ))}
              <text
                class="value"
                x={labelWidth + ((totals[row] ?? 0) / top) * barRoom + 6}
                y={y + rowHeight / 2 + 4}
                safe
              >
                {format(totals[row] ?? 0)}
              </text>
            </g>
          )
        })}
      </svg>
    )
  }
  const height = 250
  const left = 56
  const plotTop = 10
  const plotHeight = 206
  const slot = (width - left - 4) / Math.max(bars.length, 1)
  const top = niceMax(Math.max(...totals, 0))
  const y = (value: number) => plotTop + plotHeight - (value / top) * plotHeight
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => share * top)
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={escapeHtml(props.label)}>
      <title safe>{props.label}</title>
      {ticks.map((tick) => (
        <g>
          <line class="grid" x1={left} x2={width} y1={y(tick)} y2={y(tick)} />
          <text x={left - 6} y={y(tick) + 4} text-anchor="end" safe>
            {compact.format(tick)}
          </text>
        </g>
      ))}
      {bars.map((bar, index) => {
        const x = left + index * slot
        return (
          <g>
            {segments(bar, (start, value) => (
              <rect
                x={x + slot * 0.15}
                y={y(start + value)}
                width={slot * 0.7}
                height={Math.max(y(start) - y(start + value), 0.5)}
              />
            ))}
            {bar.axisLabel ? (
              <text x={x + slot / 2} y={height - 16} text-anchor="middle" safe>
                {bar.axisLabel}
              </text>
            ) : (
              ''
            )}
          </g>
        )
      })}
    </svg>
  )
}

function Legend({ series }: { series: string[] }): JSX.Element {
  return (
    <ul class="chart-legend" aria-hidden="true">
      {series.map((name, index) => (
        <li>
          <span class={`swatch ${seriesClass(index)}`} />
          <span safe>{name}</span>
        </li>
      ))}
    </ul>
  )
}

/** A table of the chart's numbers: one row per bar, one column per series, and a total when there are several. */
function ChartTable(props: { caption: string; first: string; chart: StackedBarsProps; total?: string }): JSX.Element {
  const { chart } = props
  const several = chart.series.length > 1
  return (
    <TableRegion label={props.caption}>
      <table>
        <caption class="visually-hidden" safe>
          {props.caption}
        </caption>
        <thead>
          <tr>
            <th scope="col" safe>
              {props.first}
            </th>
            {chart.series.map((name) => (
              <th scope="col" class="number" safe>
                {name}
              </th>
            ))}
            {several ? (
              <th scope="col" class="number" safe>
                {props.total ?? 'Total'}
              </th>
            ) : (
              ''
            )}
          </tr>
        </thead>
        <tbody>
          {chart.bars.map((bar) => (
            <tr>
              <th scope="row" safe>
                {bar.label}
              </th>
              {bar.values.map((value) => (
                <td class="number" safe>
                  {chart.format(value)}
                </td>
              ))}
              {several ? (
                <td class="number" safe>
                  {chart.format(bar.values.reduce((sum, value) => sum + value, 0))}
                </td>
              ) : (
                ''
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  )
}

function Chart(props: {
  id: string
  title: string
  intro?: string
  chart: StackedBarsProps
  first: string
  /** What an empty chart says instead. */
  none?: string
}) {
  const empty = props.chart.bars.every((bar) => bar.values.every((value) => value <= 0))
  return (
    <section aria-labelledby={props.id} class="card stack chart-card">
      <h3 id={props.id} safe>
        {props.title}
      </h3>
      {props.intro ? (
        <p class="muted" safe>
          {props.intro}
        </p>
      ) : (
        ''
      )}
      {empty ? (
        <p class="muted" safe>
          {props.none ?? 'No answers in this range.'}
        </p>
      ) : (
        <>
          {props.chart.series.length > 1 ? <Legend series={props.chart.series} /> : ''}
          <StackedBars {...props.chart} />
          <ChartTable caption={props.title} first={props.first} chart={props.chart} />
        </>
      )}
    </section>
  )
}

const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** `2026-12-07` as `Dec 7`. */
function shortDay(day: string): string {
  return `${monthNames[Number(day.slice(5, 7)) - 1]} ${Number(day.slice(8, 10))}`
}

/** The three charts' data: tokens per day by model, cost per model, the members using most (organization only). */
function chartsOf(overview: UsageOverview, memberName: (userId: string) => string) {
  const { days, models } = overview
  const perDay = new Map<string, number[]>(days.map((day) => [day, models.map(() => 0)]))
  for (const row of overview.byDayAndModel) {
    const values = perDay.get(row.keys.day ?? '')
    const index = models.indexOf(row.keys.model ?? '')
    if (values && index >= 0) values[index] = tokensOf(row)
  }
  const every = Math.ceil(days.length / 8)
  const tokens: StackedBarsProps = {
    label: `Tokens per day, by model, ${overview.range.from} to ${overview.range.to}`,
    layout: 'columns',
    series: models,
    format: formatTokens,
    bars: days.map((day, index) => ({
      label: day,
      axisLabel: index % every === 0 ? shortDay(day) : '',
      values: perDay.get(day) ?? [],
    })),
  }
  const currency = overview.currency
  const cost: StackedBarsProps | null = currency
    ? {
        label: `Cost per model in ${currency}`,
        layout: 'rows',
        series: [`Cost (${currency})`],
        format: formatMoney,
        bars: overview.byModel
          .filter((row) => row.cost_micros !== null)
          .sort((a, b) => (b.cost_micros ?? 0) - (a.cost_micros ?? 0))
          .map((row) => ({ label: row.keys.model ?? '', values: [row.cost_micros ?? 0] })),
      }
    : null
  const members: StackedBarsProps | null = overview.byMember
    ? {
        label: 'Members who used the most tokens',
        layout: 'rows',
        series: ['Input tokens', 'Output tokens'],
        format: formatTokens,
        bars: overview.byMember.slice(0, 10).map((row: UsageAggregate) => ({
          label: memberName(row.keys.user ?? ''),
          values: [row.input_tokens, row.output_tokens],
        })),
      }
    : null
  return { tokens, cost, members }
}

export interface UsagePageProps {
  viewer: Viewer
  /** The form's values as entered (or the defaults). */
  from: string
  to: string
  /** Null when the range was refused (error says why). */
  overview: UsageOverview | null
  error?: string | null
  /** The name to show for a user ID (organization page). */
  memberName?: (userId: string) => string
}

/**
 * One monthly budget a person's answers count against, in words: the shape of quotas/service.ts BudgetStanding, declared
 * here because usage may not import quotas (quotas imports usage; docs/architecture.md, dependency rules).
 */
export interface BudgetLine {
  name: string
  used: string
  limit: string
  percent: number
}

/** Settings → Usage's first card: how much of each budget this month has used, and when they reset. */
function BudgetCard(props: { budgets: BudgetLine[]; resets: string }): JSX.Element {
  return (
    <section aria-labelledby="budgets-title" class="card stack">
      <h2 id="budgets-title">Budgets this month</h2>
      {props.budgets.length === 0 ? (
        <p class="muted">No monthly budget limits your answers.</p>
      ) : (
        <>
          <ul class="budgets">
            {props.budgets.map((budget) => (
              <li>
                <span safe>{`${budget.name}: ${budget.used} of ${budget.limit} used (${budget.percent}%)`}</span>
                <meter
                  aria-label={escapeHtml(budget.name)}
                  min="0"
                  max="100"
                  low="80"
                  high="99"
                  optimum="0"
                  value={String(budget.percent)}
                />
              </li>
            ))}
          </ul>
          <p class="muted" safe>
            {`Budgets start again on ${props.resets} at 00:00 UTC. Once one is used up, new answers wait until then; an answer already running is never cut off.`}
          </p>
        </>
      )}
    </section>
  )
}

function UsageReport(props: UsagePageProps & { path: string; groups: [string, string][] }): JSX.Element {
  const { overview } = props
  const charts = overview ? chartsOf(overview, props.memberName ?? String) : null
  const query = (group: string) =>
    `${props.path}.csv?${new URLSearchParams({ from: props.from, to: props.to, group_by: group })}`
  const totals = overview?.byModel.reduce(
    (sum, row) => ({
      answers: sum.answers + row.answers,
      tokens: sum.tokens + tokensOf(row),
      cost: sum.cost + (row.cost_micros ?? 0),
    }),
    { answers: 0, tokens: 0, cost: 0 },
  )
  return (
    <section aria-labelledby="usage-title" class="stack">
      <h2 id="usage-title">Usage</h2>
      <form method="get" action={props.path} class="card usage-range">
        <div class="field">
          <label for="usage-from">From</label>
          <input id="usage-from" name="from" type="date" value={escapeHtml(props.from)} />
        </div>
        <div class="field">
          <label for="usage-to">To (included)</label>
          <input id="usage-to" name="to" type="date" value={escapeHtml(props.to)} />
        </div>
        <button type="submit" class="primary">
          Show
        </button>
      </form>
      <ErrorAlert text={props.error} />
      {overview && charts && totals ? (
        <>
          <p safe>
            {`From ${overview.range.from} to ${overview.range.to} (UTC): ${formatTokens(totals.answers)} answers, ${formatTokens(totals.tokens)} tokens${overview.currency ? `, ${formatMoney(totals.cost)} ${overview.currency}` : ''}. Tokens count what answers read and write (input and output); answers whose model has no price cost nothing here.`}
          </p>
          <p>
            Download as CSV:{' '}
            {props.groups.map(([group, name], index) => (
              <>
                {index > 0 ? ', ' : ''}
                <a href={escapeHtml(query(group))} download="" safe>
                  {name}
                </a>
              </>
            ))}
            .
          </p>
          <Chart id="usage-tokens" title="Tokens per day" chart={charts.tokens} first="Day" />
          {charts.cost ? (
            <Chart
              id="usage-cost"
              title="Cost per model"
              chart={charts.cost}
              first="Model"
              none="No answer in this range used a model with a price."
            />
          ) : (
            <p class="muted">No model has a price in the models list, so there is no cost to show.</p>
          )}
          {charts.members ? (
            <Chart
              id="usage-members"
              title="Top members"
              intro="The ten members whose answers used the most tokens."
              chart={charts.members}
              first="Member"
            />
          ) : (
            ''
          )}
        </>
      ) : (
        ''
      )}
    </section>
  )
}

export function AdminUsagePage(props: UsagePageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current={adminUsagePath} title="Usage">
      <UsageReport
        {...props}
        path={adminUsagePath}
        groups={[
          ['day', 'by day'],
          ['model', 'by model'],
          ['user', 'by member'],
        ]}
      />
    </AdminFrame>
  )
}

export function SettingsUsagePage(
  props: UsagePageProps & { budgets: { budgets: BudgetLine[]; resets: string } },
): JSX.Element {
  return (
    <SettingsFrame viewer={props.viewer} current={settingsUsagePath} title="Usage">
      <BudgetCard {...props.budgets} />
      <UsageReport
        {...props}
        path={settingsUsagePath}
        groups={[
          ['day', 'by day'],
          ['model', 'by model'],
          ['thread', 'by thread'],
        ]}
      />
    </SettingsFrame>
  )
}
