// The benchmark's output: one Markdown table (printed and written to bench/results/latest.md) and an
// SVG bar chart of the ratios to the baseline, built as a string so the bench needs no chart library.
import type { Measure } from './load'

export interface Row {
  scenario: string
  app?: Measure
  base?: Measure
  /** A row with no measurement, such as a scenario that cannot run yet. */
  note?: string
  /** Goals drawn in the chart, one bar each. */
  goals?: Goal[]
}

export interface Goal {
  ratio: number
  label: string
  /** Which way is better: requests/s (higher) or a cost such as p99 or memory (lower). */
  higherIsBetter: boolean
  value: (row: Row) => number
}

const fixed = (value: number | undefined, digits: number) =>
  value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits)
const mib = (bytes: number | undefined) => (bytes === undefined || !(bytes > 0) ? '–' : (bytes / 1048576).toFixed(0))

export function throughputRatio(row: Row): number {
  return row.app && row.base ? row.app.rps / row.base.rps : Number.NaN
}

export function p99Ratio(row: Row): number {
  return row.app && row.base ? row.app.p99 / row.base.p99 : Number.NaN
}

export function table(rows: Row[]): string {
  const header =
    '| scenario | req/s | p50 ms | p99 ms | RSS MiB | baseline req/s | baseline p50 | baseline p99 | baseline RSS | ratio req/s | ratio p99 | failures |\n' +
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
  const lines = rows.map((row) => {
    if (!row.app) return `| ${row.scenario} | ${row.note ?? '–'} | | | | | | | | | | |`
    const { app, base } = row
    const failures = `${app.failures}${base ? ` / ${base.failures}` : ''}`
    return `| ${row.scenario} | ${fixed(app.rps, 0)} | ${fixed(app.p50, 2)} | ${fixed(app.p99, 2)} | ${mib(app.rss)} | ${fixed(base?.rps, 0)} | ${fixed(base?.p50, 2)} | ${fixed(base?.p99, 2)} | ${mib(base?.rss)} | ${fixed(throughputRatio(row), 2)} | ${fixed(p99Ratio(row), 2)} | ${failures} |`
  })
  return [header, ...lines].join('\n')
}

const xml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

/** Horizontal bars: one per scenario for the requests/s ratio, with the goal drawn as a tick. */
export function chart(rows: Row[], title: string): string {
  const measured = rows.flatMap((row) => (row.app && row.base ? (row.goals ?? []).map((goal) => ({ row, goal })) : []))
  const barHeight = 22
  const gap = 10
  const left = 330
  const width = 900
  const scaleMax =
    Math.max(1.5, ...measured.flatMap(({ row, goal }) => [goal.value(row), goal.ratio]).filter(Number.isFinite)) * 1.05
  const plot = width - left - 60
  const x = (ratio: number) => left + (Math.min(ratio, scaleMax) / scaleMax) * plot
  const height = 70 + measured.length * (barHeight + gap) + 30
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="16" y="26" font-size="16" font-weight="bold">${xml(title)}</text>`,
    '<text x="16" y="46" fill="#555">Threadhouse ÷ baseline in the same run. Bars: measured ratio; black tick: goal. Green meets the goal, red does not.</text>',
  ]
  for (const tick of [0, 0.5, 1, 1.5, 2, 3, 4].filter((value) => value <= scaleMax)) {
    parts.push(
      `<line x1="${x(tick)}" y1="58" x2="${x(tick)}" y2="${height - 28}" stroke="#ddd"/>`,
      `<text x="${x(tick)}" y="${height - 12}" text-anchor="middle" fill="#555">${tick}</text>`,
    )
  }
  measured.forEach(({ row, goal }, index) => {
    const value = goal.value(row)
    const meets = goal.higherIsBetter ? value >= goal.ratio : value <= goal.ratio
    const y = 64 + index * (barHeight + gap)
    parts.push(
      `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${xml(`${row.scenario.replace(/ \(.*\)$/, '')} (${goal.label})`)}</text>`,
      `<rect x="${left}" y="${y}" width="${Math.max(1, x(value) - left)}" height="${barHeight}" fill="${meets ? '#3a9a5b' : '#c8453b'}"/>`,
      `<line x1="${x(goal.ratio)}" y1="${y - 3}" x2="${x(goal.ratio)}" y2="${y + barHeight + 3}" stroke="black" stroke-width="2"/>`,
      `<text x="${x(value) + 6}" y="${y + 15}">${Number.isFinite(value) ? value.toFixed(2) : '–'}</text>`,
    )
  })
  parts.push('</svg>')
  return parts.join('\n')
}
