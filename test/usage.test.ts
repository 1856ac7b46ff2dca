// Usage and cost (issue 37), on both backends: what providers report (an OpenAI-compatible stream's usage chunk,
// Anthropic's message usage) and what the server estimates (the echo responder), the cost from a model's price and
// none without one, a message's details, GET /api/v1/usage by day, member, model and thread and as CSV, its refusals,
// the month's totals as the sum of the rows, and usage kept when its thread is deleted.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { createWorkerRunner } from '../src/generation/runner'
import { loadCatalogue, workerModels } from '../src/models/catalogue'
import { silentLogger } from '../src/shared/log'
import { periodOf } from '../src/usage/period'
import { usageCsv } from '../src/usage/service'
import { anthropicText, ask, FakeLlm, openaiText, providerHarness, sse } from './support/fake-llm'
import { type Harness, harness } from './support/helpers'

const price = { input_per_million: 2.5, output_per_million: 10, cached_input_per_million: 1.25, currency: 'USD' }

/** Two models behind one fake OpenAI-compatible upstream: one priced, one not. */
function pricedModels(fake: FakeLlm) {
  const upstream = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    provider: 'openai',
    model: `vendor-${id}`,
    base_url: `${fake.url}/v1`,
    context_tokens: 8192,
    max_output_tokens: 256,
    ...extra,
  })
  return { LLM_MODELS: JSON.stringify([upstream('priced', { price, default: true }), upstream('free')]) }
}

async function pricedHarness(fake: FakeLlm): Promise<Harness> {
  const config = pricedModels(fake)
  const catalogue = loadCatalogue(loadConfig(config), {})
  return harness({ config, runner: (blobs) => createWorkerRunner(workerModels(catalogue), blobs, silentLogger) })
}

const details = (h: Harness, token: string, threadId: string, messageId: string) =>
  h.call('GET', `/api/v1/threads/${threadId}/messages/${messageId}/details`, { token })

/** The answer to a user message, as GET …/messages lists it. */
async function answerOf(h: Harness, token: string, threadId: string): Promise<string> {
  const listed = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token })
  return listed.body.data.findLast((message: { role: string }) => message.role === 'assistant').id
}

test('an OpenAI-compatible stream reports usage: counted as reported, priced per million tokens, in details', async () => {
  await using fake = new FakeLlm()
  // The fake's usage chunk: 42 prompt tokens, 7 completion tokens.
  fake.reply(
    () => sse(openaiText(['Hello', ' there'])),
    () => sse(openaiText(['Free', ' answer'])),
  )
  await using h = await pricedHarness(fake)
  const user = await h.user()
  const { threadId } = await ask(h, user.token, 'hi')
  expect(fake.received[0]?.body.stream_options).toEqual({ include_usage: true })
  const answerId = await answerOf(h, user.token, threadId)
  const shown = await details(h, user.token, threadId, answerId)
  expect(shown.status).toBe(200)
  // 42 × 2.5 + 7 × 10 = 175 millionths of a dollar.
  expect(shown.body.usage).toEqual({
    input_tokens: 42,
    output_tokens: 7,
    cached_input_tokens: 0,
    estimated: false,
    cost: 0.000175,
    currency: 'USD',
    first_token_ms: expect.any(Number),
    total_ms: expect.any(Number),
  })
  expect(shown.body.usage.first_token_ms).toBeLessThanOrEqual(shown.body.usage.total_ms)
  // A user message's details have no usage.
  const question = (await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })).body.data[0]
  expect((await details(h, user.token, threadId, question.id)).body).not.toHaveProperty('usage')

  // The model without a price: no cost, never a guessed one.
  const settings = await h.call('PATCH', `/api/v1/threads/${threadId}/settings`, {
    token: user.token,
    body: { model: 'free' },
  })
  expect(settings.status).toBe(200)
  await ask(h, user.token, 'again', threadId)
  const free = await details(h, user.token, threadId, await answerOf(h, user.token, threadId))
  expect(free.body.usage).toMatchObject({ input_tokens: 42, output_tokens: 7, cost: null, currency: null })

  const rows = await h.orm.select().from(h.tables.answerUsage).where(eq(h.tables.answerUsage.threadId, threadId))
  expect(rows.map((row) => [row.model, row.outcome, row.costMicros, row.userId])).toEqual([
    ['priced', 'complete', 175, user.id],
    ['free', 'complete', null, user.id],
  ])
  // By model, the caller's own: the currency is the models list's.
  const byModel = await h.call('GET', '/api/v1/usage?group_by=model', { token: user.token })
  expect(byModel.body).toMatchObject({
    data: [
      { key: 'free', answers: 1, input_tokens: 42, output_tokens: 7, cost: null },
      { key: 'priced', answers: 1, input_tokens: 42, output_tokens: 7, cost: 0.000175 },
    ],
    currency: 'USD',
  })
})

test('Anthropic reports usage in message_start and message_delta', async () => {
  await using fake = new FakeLlm()
  fake.reply(() => sse(anthropicText(['Hi', '!'])))
  const { h, token } = await providerHarness('anthropic', fake)
  await using _ = h
  const { threadId } = await ask(h, token, 'hello')
  const shown = await details(h, token, threadId, await answerOf(h, token, threadId))
  // The fake: 25 input tokens at the start, 15 output tokens at the end.
  expect(shown.body.usage).toMatchObject({ input_tokens: 25, output_tokens: 15, estimated: false, cost: null })
})

test('the echo responder gets estimated counts; totals are the sum of the rows; usage outlives its thread', async () => {
  await using h = await harness()
  const owner = await h.user({ role: 'owner' })
  const member = await h.user({ role: 'member' })
  const first = await ask(h, owner.token, 'a fairly short question for the echo responder')
  await ask(h, owner.token, 'and another one', first.threadId)
  const second = await ask(h, member.token, 'a member asks')
  const shown = await details(h, owner.token, first.threadId, await answerOf(h, owner.token, first.threadId))
  expect(shown.body.usage).toMatchObject({ estimated: true, cost: null, cached_input_tokens: 0 })
  expect(shown.body.usage.input_tokens).toBeGreaterThan(0)
  expect(shown.body.usage.output_tokens).toBeGreaterThan(0)

  const rows = await h.orm.select().from(h.tables.answerUsage)
  expect(rows).toHaveLength(3)
  const organizationId = rows[0]?.organizationId as number
  const tokens = (userId?: number) =>
    rows
      .filter((row) => userId === undefined || row.userId === userId)
      .reduce((sum, row) => sum + row.inputTokens + row.outputTokens, 0)
  const period = periodOf(rows[0]?.createdAt as number)
  const totals = await h.store.usage.monthTotals(organizationId, owner.id, period)
  expect(totals).toEqual({
    organization: { tokens: tokens(), costMicros: 0 },
    member: { tokens: tokens(owner.id), costMicros: 0 },
  })
  expect(await h.store.usage.monthTotals(organizationId, member.id, '1999-01')).toEqual({
    organization: { tokens: 0, costMicros: 0 },
    member: { tokens: 0, costMicros: 0 },
  })

  // Deleting a thread keeps its usage: the sums do not shrink.
  const before = await h.call('GET', '/api/v1/usage?group_by=thread', { token: owner.token })
  expect(before.body.data.map((row: { key: string }) => row.key)).toEqual([first.threadId])
  expect((await h.call('DELETE', `/api/v1/threads/${first.threadId}`, { token: owner.token })).status).toBe(204)
  const after = await h.call('GET', '/api/v1/usage?group_by=thread', { token: owner.token })
  expect(after.body).toEqual(before.body)
  expect(await h.store.usage.monthTotals(organizationId, owner.id, period)).toEqual(totals)
  void second
})

test('GET /usage: each grouping, the organization for owners only, CSV, defaults and refusals', async () => {
  await using h = await harness()
  const owner = await h.user({ role: 'owner' })
  const member = await h.user({ role: 'member' })
  const mine = await ask(h, member.token, 'one')
  await ask(h, member.token, 'two', mine.threadId)
  await ask(h, owner.token, 'three')
  const rows = await h.orm.select().from(h.tables.answerUsage)
  const sum = (of: typeof rows) => ({
    answers: of.length,
    input_tokens: of.reduce((total, row) => total + row.inputTokens, 0),
    output_tokens: of.reduce((total, row) => total + row.outputTokens, 0),
    cost: null,
  })
  const memberRows = rows.filter((row) => row.userId === member.id)
  const today = new Date(h.clock.now()).toISOString().slice(0, 10)

  // Defaults: this month through today, by day, the caller's own.
  const own = await h.call('GET', '/api/v1/usage', { token: member.token })
  expect(own.status).toBe(200)
  expect(own.body).toEqual({
    data: [{ key: today, ...sum(memberRows) }],
    from: `${today.slice(0, 7)}-01`,
    to: today,
    currency: null,
  })
  const org = (group: string) =>
    h.call('GET', `/api/v1/usage?scope=organization&group_by=${group}`, { token: owner.token })
  expect((await org('day')).body.data).toEqual([{ key: today, ...sum(rows) }])
  expect((await org('user')).body.data).toEqual(
    [owner.id, member.id]
      .sort((a, b) => a - b)
      .map((id) => ({ key: String(id), ...sum(rows.filter((row) => row.userId === id)) })),
  )
  expect((await org('model')).body.data).toEqual([{ key: 'echo', ...sum(rows) }])
  const byThread = (await org('thread')).body.data
  expect(byThread).toHaveLength(2)
  expect(byThread.find((row: { key: string }) => row.key === mine.threadId)).toEqual({
    key: mine.threadId,
    ...sum(memberRows),
  })
  // A member may not read the organization's.
  const refused = await h.call('GET', '/api/v1/usage?scope=organization', { token: member.token })
  expect(refused.status).toBe(403)
  expect(refused.body.error).toBe('forbidden')

  // CSV: a header row, then one line per row.
  const csv = await h.call('GET', '/api/v1/usage?group_by=user&scope=organization&format=csv', { token: owner.token })
  expect(csv.status).toBe(200)
  expect(csv.headers.get('content-type')).toStartWith('text/csv')
  const lines = (csv.body as string).trimEnd().split('\r\n')
  expect(lines[0]).toBe('key,answers,input_tokens,output_tokens,cost')
  expect(lines.slice(1)).toEqual(
    (await org('user')).body.data.map(
      (row: { key: string; answers: number; input_tokens: number; output_tokens: number }) =>
        `${row.key},${row.answers},${row.input_tokens},${row.output_tokens},`,
    ),
  )

  // A range with nothing in it, date-times, and the refusals.
  const empty = await h.call('GET', '/api/v1/usage?from=2001-01-01&to=2001-01-31', { token: member.token })
  expect(empty.body).toEqual({ data: [], from: '2001-01-01', to: '2001-01-31', currency: null })
  const dateTimes = await h.call('GET', `/api/v1/usage?from=${today}T00:00:00Z&to=2999-01-01T00:00:00%2B01:00`, {
    token: member.token,
  })
  expect(dateTimes.status).toBe(400)
  const inRange = await h.call('GET', `/api/v1/usage?from=${today}T00:00:00Z&to=${today}T23:59:59.999Z`, {
    token: member.token,
  })
  expect(inRange.body.data).toEqual([{ key: today, ...sum(memberRows) }])
  for (const query of [
    'from=2026-02-01&to=2026-01-01',
    'from=2024-01-01&to=2025-12-31',
    'from=2026-02-30',
    'from=yesterday',
    'group_by=week',
  ]) {
    const reply = await h.call('GET', `/api/v1/usage?${query}`, { token: member.token })
    expect({ query, status: reply.status }).toEqual({ query, status: 400 })
  }
  // The scope it needs: threads:read (or threads:read:own).
  const writer = await h.user({ scopes: ['threads:write'] })
  expect((await h.call('GET', '/api/v1/usage', { token: writer.token })).status).toBe(403)
  const ownReader = await h.user({ scopes: ['threads:read:own'] })
  expect((await h.call('GET', '/api/v1/usage', { token: ownReader.token })).status).toBe(200)
})

test('a usage CSV key a spreadsheet would read as a formula is led by an apostrophe', () => {
  const row = { answers: 1, input_tokens: 2, output_tokens: 3, cost: null }
  const csv = usageCsv({
    data: [
      { key: '=HYPERLINK("http://x","y")', ...row },
      { key: 'ada@example.com', ...row },
    ],
    from: '2026-12-01',
    to: '2026-12-31',
    currency: null,
  })
  expect(csv.split('\r\n').slice(1, 3)).toEqual(['"\'=HYPERLINK(""http://x"",""y"")",1,2,3,', 'ada@example.com,1,2,3,'])
})
