// A month of answers in answer_usage, as the usage feature writes them when answers end: four members of one
// organization (an owner, an admin, two members) using three models (two priced, one not) through March 2026, with a
// few days of February and another organization's answer around it. For the usage pages' tests and screenshots.
import { type Harness, harness, ManualClock } from './helpers'
import { signedIn } from './oauth-helpers'
import { hostile } from './web-helpers'

const price = (input: number, output: number) => ({
  input_per_million: input,
  output_per_million: output,
  currency: 'USD',
})
const upstream = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: id,
  provider: 'openai',
  model: `vendor-${id}`,
  base_url: 'http://127.0.0.1:9/v1',
  context_tokens: 8192,
  max_output_tokens: 256,
  ...extra,
})
export const prices: Record<string, { input: number; output: number } | null> = {
  'gpt-large': { input: 2.5, output: 10 },
  'claude-mid': { input: 3, output: 15 },
  'local-small': null,
}
const config = {
  LLM_MODELS: JSON.stringify(
    Object.entries(prices).map(([id, p], index) =>
      upstream(id, { ...(p ? { price: price(p.input, p.output) } : {}), ...(index === 0 ? { default: true } : {}) }),
    ),
  ),
}

/** 20 March 2026, noon UTC: the default range is 1–20 March. */
export const now = Date.parse('2026-03-20T12:00:00.000Z')

export interface Seeded {
  userId: number
  model: string
  day: string
  input: number
  output: number
  costMicros: number | null
}

/** A repeatable spread in [0, 1) (mulberry32), so the month looks lived in and every run sees the same one. */
function* spread(seed: number): Generator<number> {
  let state = seed
  for (;;) {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    yield ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * March 2026 and the last days of February: each member on most weekdays, fewer at weekends, each with their own mix
 * of models; a few answers in another organization that must never show.
 */
async function seedMonth(h: Harness, members: { id: number; weight: number }[], organizationId: number) {
  const random = spread(37)
  const next = () => random.next().value as number
  const rows: Seeded[] = []
  const table = h.tables.answerUsage
  const values: (typeof table.$inferInsert)[] = []
  for (let ms = Date.parse('2026-02-26T00:00:00Z'); ms < Date.parse('2026-04-01T00:00:00Z'); ms += 86_400_000) {
    const date = new Date(ms)
    const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6
    for (const member of members) {
      for (const model of Object.keys(prices)) {
        if (next() < (weekend ? 0.75 : 0.25)) continue
        const answers = 1 + Math.floor(next() * 12 * member.weight)
        for (let n = 0; n < answers; n++) {
          const input = 400 + Math.floor(next() * 9000 * member.weight)
          const output = 80 + Math.floor(next() * 1400)
          const p = prices[model]
          const costMicros = p ? Math.round(input * p.input + output * p.output) : null
          const createdAt = ms + Math.floor(next() * 86_000_000)
          rows.push({ userId: member.id, model, day: date.toISOString().slice(0, 10), input, output, costMicros })
          values.push({
            organizationId,
            userId: member.id,
            threadId: `t-${member.id}-${values.length}`,
            questionId: `q-${values.length}`,
            answerId: `a-${values.length}`,
            model,
            inputTokens: input,
            outputTokens: output,
            cachedInputTokens: 0,
            estimated: false,
            costMicros,
            currency: p ? 'USD' : null,
            firstTokenMs: 300 + Math.floor(next() * 900),
            totalMs: 2000 + Math.floor(next() * 9000),
            outcome: next() < 0.05 ? 'stopped' : 'complete',
            createdAt,
          })
        }
      }
    }
  }
  // Another organization's answers, on the same days.
  values.push({
    ...(values[0] as typeof table.$inferInsert),
    organizationId: organizationId + 1000,
    inputTokens: 9_999_999,
    outputTokens: 1,
  })
  for (let start = 0; start < values.length; start += 200) {
    await h.orm.insert(table).values(values.slice(start, start + 200))
  }
  return rows
}

export function sum(rows: Seeded[], keep: (row: Seeded) => boolean) {
  const kept = rows.filter(keep)
  return {
    tokens: kept.reduce((total, row) => total + row.input + row.output, 0),
    input: kept.reduce((total, row) => total + row.input, 0),
    output: kept.reduce((total, row) => total + row.output, 0),
    cost: kept.reduce((total, row) => total + (row.costMicros ?? 0), 0),
    answers: kept.length,
  }
}

/** The seeded organization; `plainNames` leaves the hostile name out (screenshots). */
export async function seededHarness(options: { plainNames?: boolean } = {}) {
  const h = await harness({ config, clock: new ManualClock(now) })
  const owner = await signedIn(h, { role: 'owner', name: 'Olga Owner' })
  const admin = await signedIn(h, { role: 'admin', name: 'Adam Admin' })
  const max = await signedIn(h, { name: options.plainNames ? 'Max Mustermann' : `Max ${hostile}` })
  const mia = await signedIn(h, { name: 'Mia Member' })
  const organizationId = (await h.store.users.organizationIdBySlug('default')) as number
  const rows = await seedMonth(
    h,
    [
      { id: owner.user.id, weight: 0.6 },
      { id: admin.user.id, weight: 1 },
      { id: max.user.id, weight: 1.6 },
      { id: mia.user.id, weight: 0.3 },
    ],
    organizationId,
  )
  return { h, owner, admin, max, mia, rows }
}
