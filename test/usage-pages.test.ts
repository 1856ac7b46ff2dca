// The usage pages (issue 37's charts) through app.handle: Administration → Usage for owners and admins (tokens per
// day by model, cost per model, top members, each an inline SVG with its numbers in a table, and CSV downloads),
// Settings → Usage with one's own, and ranges refused in words. A month of answers is put in answer_usage by hand, as
// the usage feature writes it when answers end.
import { expect, test } from 'bun:test'
import { formatTokens } from '../src/usage/price'
import { formatMoney } from '../src/usage/views/usage'
import { type Seeded, seededHarness, sum } from './support/usage-seed'
import { expectErrorPageHeaders, expectPageHeaders, hostile } from './support/web-helpers'

const inMarch = (row: Seeded) => row.day >= '2026-03-01' && row.day <= '2026-03-31'
const march = 'from=2026-03-01&to=2026-03-31'

/** The cells of a table row whose header is `name`, as shown. */
function rowCells(html: string, name: string): string[] {
  const start = html.indexOf(`<th scope="row">${name}</th>`)
  if (start < 0) return []
  const row = html.slice(start, html.indexOf('</tr>', start))
  return [...row.matchAll(/<td class="number">([^<]*)<\/td>/g)].map((match) => match[1] as string)
}

test('administration → usage: owners and admins see the month charted and tabled; members get a 403', async () => {
  const { h, owner, admin, max, rows } = await seededHarness()
  await using _ = h
  for (const path of ['/admin/usage', `/admin/usage?${march}`, `/admin/usage.csv?${march}`]) {
    const refused = await max.browser.get(path)
    expect(refused.status).toBe(403)
    expectErrorPageHeaders(refused)
  }
  const response = await owner.browser.get(`/admin/usage?${march}`)
  expect(response.status).toBe(200)
  expectPageHeaders(response)
  const html = await response.text()
  expect(html).toContain('<a href="/admin/usage" aria-current="page">Usage</a>')
  // The range chooser: a plain GET form holding the range shown.
  expect(html).toContain('<form method="get" action="/admin/usage"')
  expect(html).toContain('value="2026-03-01"')
  expect(html).toContain('value="2026-03-31"')
  // Three charts, each an image with its name, and no script needed.
  for (const name of [
    'Tokens per day, by model, 2026-03-01 to 2026-03-31',
    'Cost per model in USD',
    'Members who used the most tokens',
  ]) {
    expect(html).toContain(`role="img" aria-label="${name}"`)
  }
  expect(html).not.toContain('<script>window.pwned')
  // Tokens per day: each day's row holds the seeded numbers per model and their total.
  const models = ['gpt-large', 'claude-mid', 'local-small']
  for (const day of ['2026-03-02', '2026-03-14', '2026-03-31']) {
    const cells = rowCells(html, day)
    const total = sum(rows, (row) => row.day === day)
    expect(cells.at(-1)).toBe(formatTokens(total.tokens))
    expect(cells.length).toBe(models.length + 1)
    for (const model of models) {
      const tokens = sum(rows, (row) => row.day === day && row.model === model).tokens
      expect(cells).toContain(formatTokens(tokens))
    }
  }
  // February's answers and the other organization's are not counted.
  expect(rowCells(html, '2026-02-28')).toEqual([])
  expect(html).not.toContain(formatTokens(9_999_999 + 1))
  // Cost per model: priced models only, as the prices make them.
  for (const model of ['gpt-large', 'claude-mid']) {
    const cost = sum(rows, (row) => inMarch(row) && row.model === model).cost
    expect(cost).toBeGreaterThan(0)
    expect(rowCells(html, model)).toContain(formatMoney(cost))
  }
  // Top members: by name (escaped), input and output tokens and the total.
  const heaviest = sum(rows, (row) => inMarch(row) && row.userId === max.user.id)
  const members = html.slice(html.indexOf('id="usage-members"'))
  expect(members).toContain(formatTokens(heaviest.tokens))
  expect(members).toContain(formatTokens(heaviest.input))
  expect(members).toContain('Olga Owner')
  expect(members).not.toContain(hostile)
  expect(members.indexOf('Max')).toBeLessThan(members.indexOf('Olga Owner'))
  // The summary line and the CSV links.
  const all = sum(rows, inMarch)
  expect(html).toContain(`${formatTokens(all.answers)} answers, ${formatTokens(all.tokens)} tokens`)
  expect(html).toContain('href="/admin/usage.csv?from=2026-03-01&amp;to=2026-03-31&amp;group_by=model"')
  // An admin gets the same page.
  expect((await admin.browser.get('/admin/usage')).status).toBe(200)
})

test('the default range is this month so far; a refused range is said in words', async () => {
  const { h, owner, max, rows } = await seededHarness()
  await using _ = h
  const html = await (await owner.browser.get('/admin/usage?from=&to=')).text()
  expect(html).toContain('value="2026-03-01"')
  expect(html).toContain('value="2026-03-20"')
  expect(rowCells(html, '2026-03-20').length).toBeGreaterThan(0)
  expect(rowCells(html, '2026-03-21')).toEqual([])
  const soFar = sum(rows, (row) => row.day >= '2026-03-01' && row.day <= '2026-03-20')
  expect(html).toContain(`${formatTokens(soFar.tokens)} tokens`)
  const refusals: [string, string][] = [
    ['from=2026-03-10&to=2026-03-01', 'from must not be after to'],
    ['from=2024-01-01&to=2026-03-01', 'The range is longer than 400 days'],
    ['from=2026-02-30', 'from is not a valid ISO 8601 date'],
  ]
  for (const [query, words] of refusals) {
    for (const browser of [owner.browser, max.browser]) {
      const path = browser === owner.browser ? '/admin/usage' : '/settings/usage'
      const response = await browser.get(`${path}?${query}`)
      expect(response.status).toBe(400)
      const page = await response.text()
      expect(page).toContain(words)
      expect(page).not.toContain('role="img"')
      // The form keeps what was entered, to correct it.
      expect(page).toContain(`value="${new URLSearchParams(query).get('from')}"`)
    }
    const csv = await owner.browser.get(`/admin/usage.csv?${query}`)
    expect(csv.status).toBe(400)
    expect(await csv.text()).toContain(words)
  }
})

test('settings → usage: a member sees their own answers only, charted, tabled and as CSV', async () => {
  const { h, owner, max, mia, rows } = await seededHarness()
  await using _ = h
  const response = await max.browser.get(`/settings/usage?${march}`)
  expect(response.status).toBe(200)
  expectPageHeaders(response)
  const html = await response.text()
  expect(html).toContain('<a href="/settings/usage" aria-current="page">Usage</a>')
  expect(html).toContain('role="img" aria-label="Tokens per day, by model, 2026-03-01 to 2026-03-31"')
  expect(html).toContain('role="img" aria-label="Cost per model in USD"')
  expect(html).not.toContain('id="usage-members"')
  const own = (row: Seeded) => inMarch(row) && row.userId === max.user.id
  expect(html).toContain(`${formatTokens(sum(rows, own).tokens)} tokens`)
  for (const day of ['2026-03-03', '2026-03-17']) {
    expect(rowCells(html, day).at(-1)).toBe(formatTokens(sum(rows, (row) => own(row) && row.day === day).tokens))
  }
  const cost = sum(rows, (row) => own(row) && row.model === 'gpt-large').cost
  expect(rowCells(html, 'gpt-large')).toEqual([formatMoney(cost)])
  // Nobody else's numbers.
  const everyone = sum(rows, (row) => inMarch(row) && row.day === '2026-03-03').tokens
  expect(rowCells(html, '2026-03-03').at(-1)).not.toBe(formatTokens(everyone))
  // A range without answers says so instead of drawing empty charts.
  const empty = await (await max.browser.get('/settings/usage?from=2026-04-01&to=2026-04-10')).text()
  expect(empty).toContain('No answers in this range.')
  expect(empty).not.toContain('role="img"')
  // Another member's page is their own.
  const miaPage = await (await mia.browser.get(`/settings/usage?${march}`)).text()
  expect(miaPage).toContain(
    `${formatTokens(sum(rows, (row) => inMarch(row) && row.userId === mia.user.id).tokens)} tokens`,
  )

  // The CSV: a header row, then the member's own rows in GET /usage's columns.
  const csv = await max.browser.get(`/settings/usage.csv?${march}&group_by=model`)
  expect(csv.status).toBe(200)
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  expect(csv.headers.get('content-disposition')).toBe('attachment; filename="usage-2026-03-01-2026-03-31.csv"')
  const lines = (await csv.text()).trimEnd().split('\r\n')
  expect(lines[0]).toBe('key,answers,input_tokens,output_tokens,cost')
  const large = sum(rows, (row) => own(row) && row.model === 'gpt-large')
  expect(lines).toContain(`gpt-large,${large.answers},${large.input},${large.output},${large.cost / 1_000_000}`)
  const local = sum(rows, (row) => own(row) && row.model === 'local-small')
  expect(lines).toContain(`local-small,${local.answers},${local.input},${local.output},`)

  // The organization's CSV by member, for its owner: one line per member.
  const byMember = await owner.browser.get(`/admin/usage.csv?${march}&group_by=user`)
  expect(byMember.status).toBe(200)
  const memberLines = (await byMember.text()).trimEnd().split('\r\n')
  expect(memberLines[0]).toBe('key,answers,input_tokens,output_tokens,cost')
  expect(memberLines.length).toBe(5)
  const maxAll = sum(rows, own)
  expect(memberLines).toContain(
    `${max.user.id},${maxAll.answers},${maxAll.input},${maxAll.output},${maxAll.cost / 1_000_000}`,
  )
})
