// Monthly budgets (issue 37, src/quotas/): set on the administration page and with `quota:set`, checked before an
// answer starts (the API's create-with-text, send, regenerate and edit, the pages and MCP), with a notice in the
// composer from 80%. What a month used is put in usage_totals by hand, as the usage feature writes it when answers end.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { testEvent } from './support/audit'
import { databaseOf, migratedEnv } from './support/backend'
import {
  type Harness,
  harness,
  ManualClock,
  parseEvents,
  publicUrl,
  runToEnd,
  ScriptedRunner,
  type TestUser,
} from './support/helpers'
import { hiddenField, signedIn } from './support/oauth-helpers'
import { submit } from './support/web-helpers'

/** Mid-January 2026, UTC: 11.5 days before February's budgets start. */
const midJanuary = Date.parse('2026-01-20T12:00:00.000Z')
const february = Date.parse('2026-02-01T00:00:00.000Z')

async function organizationOf(h: Harness, slug = 'default'): Promise<number> {
  return (await h.store.users.organizationIdBySlug(slug)) as number
}

/** Puts a month's totals in place as the usage feature keeps them (user 0: the organization's). */
async function spent(
  h: Harness,
  organizationId: number,
  userId: number,
  totals: { tokens?: number; costMicros?: number },
  period = '2026-01',
): Promise<void> {
  const values = { tokens: totals.tokens ?? 0, costMicros: totals.costMicros ?? 0 }
  const table = h.tables.usageTotals
  await h.orm
    .insert(table)
    .values({ period, organizationId, userId, ...values })
    .onConflictDoUpdate({ target: [table.period, table.organizationId, table.userId], set: values })
}

/** Lets the scripted answer to this user message finish, and waits until it is stored. */
async function answer(runner: ScriptedRunner, h: Harness, messageId: string, text: string): Promise<void> {
  const job = await runner.started(messageId)
  job.token(text)
  job.done()
  runner.jobs.delete(messageId)
  await h.app.decorator.engine.idle()
}

async function threadWithAnswer(h: Harness, runner: ScriptedRunner, user: TestUser) {
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Name a colour' } })
  expect(created.status).toBe(201)
  await answer(runner, h, created.body.message_id, 'Blue.')
  return { id: created.body.thread_id as string, question: created.body.message_id as string }
}

async function stateOf(h: Harness, user: TestUser, threadId: string): Promise<string> {
  return (await h.call('GET', `/api/v1/threads/${threadId}`, { token: user.token })).body.state
}

async function tree(h: Harness, user: TestUser, threadId: string, messageId: string) {
  const listed = await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })
  const versions = await h.call('GET', `/api/v1/threads/${threadId}/messages/${messageId}/versions`, {
    token: user.token,
  })
  return { messages: listed.body.data, versions: versions.body.data }
}

test('over a budget, create-with-text, send, regenerate and edit are 429 quota_exceeded with Retry-After; nothing is stored', async () => {
  const clock = new ManualClock(midJanuary)
  const runner = new ScriptedRunner()
  await using h = await harness({ clock, runner })
  const user = await h.user()
  const organization = await organizationOf(h)
  const thread = await threadWithAnswer(h, runner, user)
  const before = await tree(h, user, thread.id, thread.question)
  const threadCount = async () => (await h.call('GET', '/api/v1/threads', { token: user.token })).body.data.length

  // Each member's budget: 1,000 tokens a month, used up.
  await h.store.quotas.setMemberDefault(
    organization,
    { tokens: 1000, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, user.id, { tokens: 1000 })
  await spent(h, organization, 0, { tokens: 1000 })
  const message =
    'Your monthly token budget is used up (1,000 tokens of 1,000 tokens this month). Answers can start again on ' +
    '1 February 2026 at 00:00 UTC (2026-02-01T00:00:00.000Z).'
  const refused = { status: 429, retryAfter: String(11.5 * 24 * 3600), body: { error: 'quota_exceeded', message } }
  const attempts = {
    create: () => h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Another' } }),
    send: () => h.call('POST', `/api/v1/threads/${thread.id}/messages`, { token: user.token, body: { text: 'More' } }),
    regenerate: () =>
      h.call('POST', `/api/v1/threads/${thread.id}/messages/${thread.question}/regenerate`, { token: user.token }),
    edit: () =>
      h.call('POST', `/api/v1/threads/${thread.id}/messages/${thread.question}/edit`, {
        token: user.token,
        body: { text: 'Name a fruit' },
      }),
  }
  for (const [name, attempt] of Object.entries(attempts)) {
    const reply = await attempt()
    expect({ name, status: reply.status, retryAfter: reply.headers.get('retry-after'), body: reply.body }).toEqual({
      name,
      ...refused,
    })
  }
  // Nothing stored: one thread, its messages and versions as they were, still ready, nothing queued.
  expect(await threadCount()).toBe(1)
  expect(await tree(h, user, thread.id, thread.question)).toEqual(before)
  expect(await stateOf(h, user, thread.id)).toBe('ready')
  expect(runner.jobs.size).toBe(0)
  // A thread created empty starts no answer: not refused.
  expect((await h.call('POST', '/api/v1/threads', { token: user.token, body: { name: 'Empty' } })).status).toBe(201)

  // The organization's budget, used up by everyone together, is named as the organization's, in cost this time.
  await h.store.quotas.setMemberDefault(
    organization,
    { tokens: null, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await h.store.quotas.setOrganizationBudget(
    organization,
    { tokens: null, costMicros: 25_000_000 },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, 0, { tokens: 1000, costMicros: 25_000_001 })
  const over = await attempts.send()
  expect(over.status).toBe(429)
  expect(over.body.message).toStartWith(
    "Your organization's monthly cost budget is used up (25.000001 of 25.00 this month). Answers can start again on 1 February 2026",
  )
  // Another organization is not concerned.
  const elsewhere = await h.user({ org: 'elsewhere' })
  const theirs = await h.call('POST', '/api/v1/threads', { token: elsewhere.token, body: { text: 'Hi' } })
  expect(theirs.status).toBe(201)
  await answer(runner, h, theirs.body.message_id, 'Hello.')

  // Half a second before February: Retry-After rounds up to 1. At the turn of the month the budget starts again.
  clock.ms = february - 500
  expect((await attempts.send()).headers.get('retry-after')).toBe('1')
  clock.ms = february
  const sent = await attempts.send()
  expect(sent.status).toBe(201)
  await answer(runner, h, sent.body.message_id, 'Again.')
  // February's own total counts from then on.
  await spent(h, organization, 0, { costMicros: 25_000_000 }, '2026-02')
  const march = (await attempts.send()).body.message
  expect(march).toContain('Answers can start again on 1 March 2026 at 00:00 UTC (2026-03-01T00:00:00.000Z).')
})

test('a member’s own budget replaces the default for them, in tokens or cost, both; the organization’s still counts', async () => {
  const clock = new ManualClock(midJanuary)
  await using h = await harness({ clock })
  const [limited, exempt] = [await h.user(), await h.user()]
  const organization = await organizationOf(h)
  const send = (user: TestUser) =>
    h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Hi' } }).then((reply) => reply.status)
  await h.store.quotas.setMemberDefault(
    organization,
    { tokens: 100, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await h.store.quotas.setMemberOverride(
    exempt.id,
    { tokens: null, costMicros: 2_000_000 },
    testEvent('settings.quota_changed'),
  )
  for (const user of [limited, exempt]) await spent(h, organization, user.id, { tokens: 150, costMicros: 1_000_000 })
  expect(await send(limited)).toBe(429)
  expect(await send(exempt)).toBe(201)
  await spent(h, organization, exempt.id, { tokens: 150, costMicros: 2_000_000 })
  expect(await send(exempt)).toBe(429)
  // Removed, the override gives way to the default again.
  await h.store.quotas.setMemberOverride(exempt.id, null, testEvent('settings.quota_changed'))
  // The answer to the one send allowed has been counted by now; the totals are then set as the test wants them.
  await h.app.decorator.engine.idle()
  await spent(h, organization, 0, { tokens: 0 })
  await spent(h, organization, exempt.id, { tokens: 150, costMicros: 2_000_000 })
  expect(await h.store.quotas.standing(organization, exempt.id, '2026-01')).toEqual({
    budgets: {
      organization: { tokens: null, costMicros: null },
      member: { tokens: 100, costMicros: null },
      overridden: false,
    },
    totals: { organization: { tokens: 0, costMicros: 0 }, member: { tokens: 150, costMicros: 2_000_000 } },
  })
})

test('an answer already running is not cut off when the budget runs out under it; the next one is refused', async () => {
  const clock = new ManualClock(midJanuary)
  const runner = new ScriptedRunner()
  await using h = await harness({ clock, runner })
  const user = await h.user()
  const organization = await organizationOf(h)
  await h.store.quotas.setOrganizationBudget(
    organization,
    { tokens: 1000, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Write at length' } })
  expect(created.status).toBe(201)
  const job = await runner.started(created.body.message_id)
  job.token('A long ')
  // The budget is used up while the answer is written (another answer of the organization ended meanwhile).
  await spent(h, organization, 0, { tokens: 5000 })
  job.token('answer.')
  job.done()
  await h.app.decorator.engine.idle()
  const { messages } = await tree(h, user, created.body.thread_id, created.body.message_id)
  expect(messages.map((message: { contents: { text: string }[] }) => message.contents[0]?.text)).toEqual([
    'Write at length',
    'A long answer.',
  ])
  expect(await stateOf(h, user, created.body.thread_id)).toBe('ready')
  const next = await h.call('POST', `/api/v1/threads/${created.body.thread_id}/messages`, {
    token: user.token,
    body: { text: 'Go on' },
  })
  expect(next.status).toBe(429)
  expect(await stateOf(h, user, created.body.thread_id)).toBe('ready')
})

test('the composer: a notice from 80% of a budget naming it and the reset date, the refusal once it is used up', async () => {
  const clock = new ManualClock(midJanuary)
  const runner = new ScriptedRunner()
  await using h = await harness({ clock, runner })
  const { browser, user } = await signedIn(h)
  const organization = await organizationOf(h)
  const thread = await threadWithAnswer(h, runner, user)
  const page = async (path = `/threads/${thread.id}`) => {
    const response = await browser.get(path)
    expect(response.status).toBe(200)
    return response.text()
  }
  await h.store.quotas.setMemberDefault(
    organization,
    { tokens: 1000, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, user.id, { tokens: 799 })
  expect(await page()).not.toContain('id="composer-quota"')
  await spent(h, organization, user.id, { tokens: 850 })
  const near = 'Your monthly token budget is 85% used (850 tokens of 1,000 tokens). It resets on 1 February 2026 (UTC).'
  expect(await page()).toContain(`<p id="composer-quota" class="notice composer-quota">${near}</p>`)
  expect(await page('/')).toContain(near)
  // The organization's budget nearer its end is the one named.
  await h.store.quotas.setOrganizationBudget(
    organization,
    { tokens: null, costMicros: 10_000_000 },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, 0, { tokens: 850, costMicros: 9_500_000 })
  expect(await page()).toContain('Your organization&#x27;s monthly cost budget is 95% used (9.50 of 10.00).')

  // Used up: the composer says so with the date, and a message posted anyway is refused with the same sentence.
  await spent(h, organization, user.id, { tokens: 1000 })
  const refusal = 'Your monthly token budget is used up (1,000 tokens of 1,000 tokens this month).'
  expect(await page()).toContain('<p id="composer-quota" class="alert composer-quota">')
  expect(await page()).toContain(refusal)
  const csrf = hiddenField(await page(), 'csrf')
  const posted = await browser.postForm(`/threads/${thread.id}/messages`, { csrf, text: 'One more' })
  expect(posted.status).toBe(429)
  const html = await posted.text()
  expect(html).toContain(refusal)
  expect(html).toContain('Answers can start again on 1 February 2026 at 00:00 UTC')
  expect(html).toContain('One more</textarea>')
  // A new thread from the page is refused before the thread is made.
  const started = await browser.postForm('/threads', { csrf, text: 'A new question' })
  expect(started.status).toBe(429)
  expect(await started.text()).toContain(refusal)
  expect((await h.call('GET', '/api/v1/threads', { token: user.token })).body.data).toHaveLength(1)
  // Regenerate from the page: refused, the thread as it was.
  const regenerated = await browser.postForm(`/threads/${thread.id}/messages/${thread.question}/regenerate`, { csrf })
  expect(regenerated.status).toBe(429)
  expect(await stateOf(h, user, thread.id)).toBe('ready')
  expect(runner.jobs.size).toBe(0)
})

test('settings → usage: a member sees each budget that applies to them, how much of it this month used, and the reset', async () => {
  await using h = await harness({ clock: new ManualClock(midJanuary) })
  const { browser, user } = await signedIn(h)
  const organization = await organizationOf(h)
  const page = async () => {
    const response = await browser.get('/settings/usage')
    expect(response.status).toBe(200)
    return response.text()
  }
  expect(await page()).toContain('No monthly budget limits your answers.')
  await h.store.quotas.setMemberDefault(
    organization,
    { tokens: 1000, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await h.store.quotas.setOrganizationBudget(
    organization,
    { tokens: null, costMicros: 10_000_000 },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, user.id, { tokens: 250 })
  await spent(h, organization, 0, { tokens: 900, costMicros: 9_990_000 })
  const html = await page()
  expect(html).not.toContain('No monthly budget limits your answers.')
  expect(html).toContain('Your organization&#x27;s monthly cost budget: 9.99 of 10.00 used (99%)')
  expect(html).toContain('Your monthly token budget: 250 tokens of 1,000 tokens used (25%)')
  expect(html).toContain('value="25"')
  expect(html).toContain('Budgets start again on 1 February 2026 at 00:00 UTC.')
})

test('MCP send_message over a budget is a tool error with the same sentence; nothing is stored', async () => {
  const clock = new ManualClock(midJanuary)
  const runner = new ScriptedRunner()
  await using h = await harness({ clock, runner })
  const user = await h.user()
  const organization = await organizationOf(h)
  const thread = await threadWithAnswer(h, runner, user)
  await h.store.quotas.setOrganizationBudget(
    organization,
    { tokens: 500, costMicros: null },
    testEvent('settings.quota_changed'),
  )
  await spent(h, organization, 0, { tokens: 500 })
  const call = async (name: string, args: Record<string, unknown>) => {
    const response = await h.app.handle(
      new Request(`${publicUrl}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${user.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
      }),
    )
    expect(response.status).toBe(200)
    for await (const event of parseEvents(response)) return JSON.parse(event.data).result
  }
  const sentence =
    "Your organization's monthly token budget is used up (500 tokens of 500 tokens this month). Answers can start " +
    'again on 1 February 2026 at 00:00 UTC (2026-02-01T00:00:00.000Z).'
  for (const [name, args] of [
    ['send_message', { thread_id: thread.id, text: 'More' }],
    ['regenerate_response', { thread_id: thread.id, message_id: thread.question }],
    ['create_thread', { text: 'Another' }],
  ] as const) {
    expect({ name, result: await call(name, args) }).toEqual({
      name,
      result: { isError: true, content: [{ type: 'text', text: sentence }] },
    })
  }
  const { messages } = await tree(h, user, thread.id, thread.question)
  expect(messages).toHaveLength(2)
  expect((await h.call('GET', '/api/v1/threads', { token: user.token })).body.data).toHaveLength(1)
  expect(await stateOf(h, user, thread.id)).toBe('ready')
})

test('Administration → Usage limits: owners and admins set the budgets; members are refused', async () => {
  const clock = new ManualClock(midJanuary)
  await using h = await harness({ clock })
  const admin = await signedIn(h, { role: 'admin' })
  const member = await signedIn(h)
  const organization = await organizationOf(h)
  const page = await admin.browser.get('/admin/quotas')
  expect(page.status).toBe(200)
  const html = await page.text()
  expect(html).toContain('<h2 id="quotas-title">Usage limits</h2>')
  expect(html).toContain('they start again on 1 February 2026')
  expect(html).toContain('href="/admin/quotas"')

  const saved = await submit(admin.browser, '/admin/quotas', { scope: 'organization', tokens: '1,000,000', cost: '25' })
  expect({ status: saved.status, location: saved.headers.get('location') }).toEqual({
    status: 303,
    location: '/admin/quotas?notice=quota-saved',
  })
  expect(
    (await submit(admin.browser, '/admin/quotas', { scope: 'member-default', tokens: '', cost: '2.5' })).status,
  ).toBe(303)
  const own = await submit(admin.browser, '/admin/quotas', {
    scope: 'member',
    member: member.user.sub,
    tokens: '5000',
    cost: '',
  })
  expect(own.status).toBe(303)
  const budgets = await h.store.quotas.budgets(organization)
  expect(budgets).toEqual({
    organization: { tokens: 1_000_000, costMicros: 25_000_000 },
    memberDefault: { tokens: null, costMicros: 2_500_000 },
    overrides: [
      { userId: member.user.id, email: member.user.email, name: expect.any(String), tokens: 5000, costMicros: null },
    ],
  })
  const shown = await (await admin.browser.get('/admin/quotas?notice=quota-saved')).text()
  expect(shown).toContain('The budget was saved.')
  expect(shown).toContain('Now: 1,000,000 tokens and 25.00 in cost a month.')
  expect(shown).toContain(`<td>${member.user.email}</td><td>5,000</td><td>No limit</td>`)

  // Refused, next to the form, as entered; nothing changes.
  const refused = await submit(admin.browser, '/admin/quotas', { scope: 'organization', tokens: 'lots', cost: '' })
  expect(refused.status).toBe(400)
  const refusedHtml = await refused.text()
  expect(refusedHtml).toContain('&quot;lots&quot; is not a number of tokens (or none)')
  expect(refusedHtml).toContain('value="lots"')
  expect((await submit(admin.browser, '/admin/quotas', { scope: 'organization', cost: '1.2345678' })).status).toBe(400)
  const stranger = await h.user({ org: 'elsewhere' })
  const otherOrg = await submit(admin.browser, '/admin/quotas', { scope: 'member', member: stranger.sub, tokens: '1' })
  expect(otherOrg.status).toBe(404)
  expect(await h.store.quotas.budgets(organization)).toEqual(budgets)

  // Back to each member's budget.
  const removed = await submit(admin.browser, '/admin/quotas', {
    scope: 'member',
    member: member.user.sub,
    remove: 'true',
  })
  expect(removed.headers.get('location')).toBe('/admin/quotas?notice=quota-removed')
  expect((await h.store.quotas.budgets(organization)).overrides).toEqual([])

  // Members: the page and its form are 403, and nothing changes.
  expect((await member.browser.get('/admin/quotas')).status).toBe(403)
  expect((await submit(member.browser, '/admin/quotas', { scope: 'organization', tokens: 'none' })).status).toBe(403)
  expect((await h.store.quotas.budgets(organization)).organization).toEqual({
    tokens: 1_000_000,
    costMicros: 25_000_000,
  })
})

test('quota:set and quota:show, as operators run them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-quotas-'))
  try {
    const env = await migratedEnv(join(dir, 'db.sqlite'))
    const cli = (...args: string[]) => runToEnd(['bun', 'run', 'cli', ...args], env)
    const created = await cli('user:create', '--email', 'ada@example.com', '--password', 'long enough', '--org', 'ops')
    expect(created).toMatchObject({ code: 0, stderr: '' })
    const set = async (...args: string[]) => {
      const result = await cli('quota:set', '--org', 'ops', ...args)
      expect({ args, stderr: result.stderr, code: result.code }).toEqual({ args, stderr: '', code: 0 })
      return result.stdout
    }
    expect(await set('--tokens', '1000000', '--cost', '25')).toBe(
      "ops's budget: 1,000,000 tokens and 25.00 in cost a month\n",
    )
    expect(await set('--member-default', '--cost', '2.50')).toBe("Each member's budget in ops: 2.50 in cost a month\n")
    expect(await set('--email', 'ADA@example.com', '--tokens', '5000')).toBe(
      "ada@example.com's own budget in ops: 5,000 tokens and 2.50 in cost a month\n",
    )
    expect(await set('--email', 'ada@example.com', '--cost', 'none')).toBe(
      "ada@example.com's own budget in ops: 5,000 tokens a month\n",
    )
    expect(await set('--cost', 'none')).toBe("ops's budget: 1,000,000 tokens a month\n")
    // What this month used, as the usage feature keeps it.
    {
      await using database = await databaseOf(env)
      const organizationId = (await database.store.users.organizationIdBySlug('ops')) as number
      const table = database.tables.usageTotals
      await database.orm.insert(table).values({
        period: new Date().toISOString().slice(0, 7),
        organizationId,
        userId: 0,
        tokens: 1234,
        costMicros: 1_500_000,
      })
      expect(
        await database.orm
          .select()
          .from(table)
          .where(and(eq(table.organizationId, organizationId), eq(table.userId, 0))),
      ).toHaveLength(1)
    }
    const shown = await cli('quota:show', '--org', 'ops')
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    expect(shown.stdout.trimEnd().split('\n')).toEqual([
      'budget\ttokens\tcost\tused_tokens\tused_cost',
      'organization\t1000000\tnone\t1234\t1.50',
      'member-default\tnone\t2.50\t\t',
      'ada@example.com\t5000\tnone\t0\t0.00',
    ])
    expect(await set('--email', 'ada@example.com', '--remove')).toBe(
      "ada@example.com has each member's budget of ops again\n",
    )
    // Refused in one line, nothing changed.
    for (const [args, message] of [
      [['--tokens', 'many'], '"many" is not a number of tokens (or none)'],
      [['--cost=-1'], '"-1" is not an amount (such as 25 or 12.50, or none)'],
      [[], 'Give --tokens, --cost or both'],
      [['--email', 'nobody@example.com', '--tokens', '1'], 'No member nobody@example.com in ops'],
      [['--remove'], '--remove needs --email'],
      [
        ['--email', 'ada@example.com', '--member-default', '--tokens', '1'],
        'Give --email or --member-default, not both',
      ],
    ] as [string[], string][]) {
      const refused = await cli('quota:set', '--org', 'ops', ...args)
      expect({ args, code: refused.code, stdout: refused.stdout, stderr: refused.stderr }).toEqual({
        args,
        code: 1,
        stdout: '',
        stderr: `error: ${message}\n`,
      })
    }
    expect((await cli('quota:show', '--org', 'nowhere')).stderr).toBe('error: No organization with slug nowhere\n')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the OpenAPI document gives the requests that start an answer a 429 that names quota_exceeded and Retry-After', async () => {
  await using h = await harness()
  const spec = (await h.call('GET', '/swagger/json')).body
  const threads = '/api/v1/threads'
  const messages = `${threads}/{threadId}/messages`
  for (const path of [threads, messages, `${messages}/{messageId}/regenerate`, `${messages}/{messageId}/edit`]) {
    const refused = spec.paths[path].post.responses['429']
    expect({ path, quota: refused.description.includes('`quota_exceeded`') }).toEqual({ path, quota: true })
    expect(refused.headers['Retry-After'].description).toContain('until the next month starts (UTC)')
  }
  // Elsewhere the shared rate-limit 429.
  expect(spec.paths[threads].get.responses['429']).toEqual({ $ref: '#/components/responses/TooManyRequests' })
})
