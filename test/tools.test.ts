// Answers that call the tools of an organization's MCP server, end to end: the real worker asks a fake provider
// (OpenAI and Anthropic alike), the engine hands each round of calls to the executor, and the real MCP client calls a
// real SDK server on loopback (support/tools-app.ts), which counts what it ran. What the tools did is read from the
// tool-call record.
import { expect, test } from 'bun:test'
import { approvalBlock } from '../src/connectors/executor'
import { newId } from '../src/shared/ids'
import { ask, messagesOf, type Received, stateOf } from './support/fake-llm'
import { type Harness, listening, tokensOf, until } from './support/helpers'
import { connect } from './support/mcp-helpers'
import { callsOf, deletePage, type Provider, search, toolsApp as setup, told } from './support/tools-app'

const providers: Provider[] = ['openai', 'anthropic']

async function lastAnswer(h: Harness, token: string, threadId: string) {
  const messages = await messagesOf(h, token, threadId)
  return messages.at(-1) as (typeof messages)[number]
}

/** The approval question the executor asks about a call. */
const approval = (callId: string, question: string) => ({
  type: 'user_get_choice' as const,
  tool_use_id: `approve_${callId.replaceAll('-', '')}`,
  question,
  choices: ['Allow', 'Deny'],
})

for (const provider of providers) {
  test(`${provider}: a read-only tool runs at once; the answer goes on, and its usage is both requests'`, async () => {
    await using s = await setup(provider)
    s.fake.reply(s.vendor.calls(['Searching.'], [search('call_s1', 'tokens')]), s.vendor.text(['Found 2 pages.']))
    const { threadId, events } = await ask(s.h, s.token, 'How do tokens work?')
    expect(tokensOf(events)).toBe('Searching.\n\nFound 2 pages.')
    expect(await stateOf(s.h, s.token, threadId)).toBe('ready')
    const answer = await lastAnswer(s.h, s.token, threadId)
    expect(answer.contents).toEqual([{ type: 'text', text: 'Searching.\n\nFound 2 pages.' }])
    const [call, ...others] = await callsOf(s.h, threadId)
    expect(others).toEqual([])
    expect(call).toMatchObject({
      answerId: answer.id,
      serverId: s.server.id,
      serverName: 'docs',
      toolName: 'search_docs',
      modelName: 'docs__search_docs',
      arguments: '{"query":"tokens"}',
      status: 'ok',
      result: 'Found 2 pages for tokens',
      approvalId: null,
    })
    expect(call?.durationMs).toBeGreaterThanOrEqual(0)
    // The answer's details say the same through the API, as the engine recorded it.
    const details = await s.h.call('GET', `/api/v1/threads/${threadId}/messages/${answer.id}/details`, {
      token: s.token,
    })
    expect(details.status).toBe(200)
    expect(details.body.tool_calls).toEqual([
      {
        id: call?.id,
        server: 'docs',
        tool: 'search_docs',
        arguments: { query: 'tokens' },
        outcome: 'ok',
        result: 'Found 2 pages for tokens',
        result_truncated: false,
        error: null,
        duration_ms: call?.durationMs,
        round: call?.round,
        started_at: expect.any(String),
        decided_by: null,
      },
    ])
    // The model got the result of its call, and the tool under the name it called.
    expect(s.vendor.toolNames(s.fake.received[0] as Received)).toContain('docs__search_docs')
    expect(told(s.fake.received[1])).toContain('Found 2 pages for tokens')
    const [usage] = await s.h.orm.select().from(s.h.tables.answerUsage)
    expect(usage).toMatchObject({
      inputTokens: 2 * s.vendor.usage.input,
      outputTokens: 2 * s.vendor.usage.output,
      estimated: false,
    })
    // Nothing of the person the answer is for reaches the server: no token, no authorization at all.
    expect(s.up.requests.some((request) => request.rpc === 'tools/call')).toBe(true)
    expect(JSON.stringify(s.up.requests)).not.toContain(s.token)
    expect(s.up.requests.every((request) => request.headers.authorization === undefined)).toBe(true)
  })

  test(`${provider}: a tool that changes something asks first; Allow runs it once, and a regenerate does not again`, async () => {
    await using s = await setup(provider)
    s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '7')]))
    const first = await ask(s.h, s.token, 'Delete page 7')
    const [asked] = await callsOf(s.h, first.threadId)
    const question = await lastAnswer(s.h, s.token, first.threadId)
    expect(question.contents).toEqual([
      { type: 'text', text: 'I will delete it.' },
      approval(asked?.id as string, 'Allow delete_page on docs with {"page":"7"}?'),
    ])
    expect(asked).toMatchObject({ status: 'awaiting_approval', answerId: question.id })
    expect(await stateOf(s.h, s.token, first.threadId)).toBe('ready')
    expect(s.up.deletes).toBe(0)
    expect(s.fake.received).toHaveLength(1)

    s.fake.reply(s.vendor.text(['Page 7 is gone.']))
    const allowed = await ask(s.h, s.token, 'Allow', first.threadId)
    expect(tokensOf(allowed.events)).toBe('Page 7 is gone.')
    expect(s.up.deletes).toBe(1)
    const [ran] = await callsOf(s.h, first.threadId)
    expect(ran).toMatchObject({ status: 'ok', result: 'Deleted 7', decidedBy: allowed.messageId })
    // The question's details show the call as it ended, and whose reply allowed it.
    const details = await s.h.call('GET', `/api/v1/threads/${first.threadId}/messages/${question.id}/details`, {
      token: s.token,
    })
    expect(details.body.tool_calls).toMatchObject([
      { tool: 'delete_page', outcome: 'ok', result: 'Deleted 7', decided_by: allowed.messageId },
    ])
    // The model's prompt goes on from its call: the result answers it, and the approval itself is left out.
    const request = s.fake.received[1] as Received
    expect(told(request)).toContain('Deleted 7')
    expect(told(request)).not.toContain('Allow delete_page')
    expect(s.vendor.toolsOff(request)).toBe(false)

    // Writing the answer again reuses the decision and the result: the page is not deleted twice.
    s.fake.reply(s.vendor.text(['Done: page 7 was deleted.']))
    const again = await s.h.call('POST', `/api/v1/threads/${first.threadId}/messages/${allowed.messageId}/regenerate`, {
      token: s.token,
    })
    expect(again.status).toBe(201)
    await s.h.app.decorator.engine.idle()
    expect((await lastAnswer(s.h, s.token, first.threadId)).contents).toEqual([
      { type: 'text', text: 'Done: page 7 was deleted.' },
    ])
    expect(s.up.deletes).toBe(1)
    expect(told(s.fake.received[2])).toContain('Deleted 7')
    expect(await callsOf(s.h, first.threadId)).toHaveLength(1)
  })

  test(`${provider}: Deny does not run the call, and the model is told it was denied`, async () => {
    await using s = await setup(provider)
    s.fake.reply(s.vendor.calls([], [deletePage('call_d1', '7')]))
    const first = await ask(s.h, s.token, 'Delete page 7')
    s.fake.reply(s.vendor.text(['Understood, I left it.']))
    const denied = await ask(s.h, s.token, 'Deny', first.threadId)
    expect(tokensOf(denied.events)).toBe('Understood, I left it.')
    expect(s.up.deletes).toBe(0)
    const [call] = await callsOf(s.h, first.threadId)
    expect(call).toMatchObject({ status: 'denied', decidedBy: denied.messageId })
    expect(told(s.fake.received[1])).toContain('denied')
    // "Deny" was the decision, not a message to the model.
    expect(told(s.fake.received[1])).not.toContain('"Deny"')
  })

  test(`${provider}: other words deny the call and reach the model as the person's turn`, async () => {
    await using s = await setup(provider)
    s.fake.reply(s.vendor.calls(['Deleting.'], [deletePage('call_d1', '7')]))
    const first = await ask(s.h, s.token, 'Delete page 7')
    s.fake.reply(s.vendor.text(['I will archive it instead.']))
    await ask(s.h, s.token, 'No, archive it instead', first.threadId)
    expect(s.up.deletes).toBe(0)
    expect((await callsOf(s.h, first.threadId))[0]).toMatchObject({ status: 'denied' })
    const body = (s.fake.received[1] as Received).body
    const last = body.messages.at(-1)
    expect(last.role).toBe('user')
    expect(JSON.stringify(last)).toContain('No, archive it instead')
    expect(told(s.fake.received[1])).toContain('denied')
  })

  test(`${provider}: an approval the thread's tools were turned off under ends refused at the reply, which the model answers`, async () => {
    await using s = await setup(provider)
    s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '7')]))
    const first = await ask(s.h, s.token, 'Delete page 7')
    const question = await lastAnswer(s.h, s.token, first.threadId)
    const settings = `/api/v1/threads/${first.threadId}/settings`
    expect((await s.h.call('PATCH', settings, { token: s.token, body: { tools: [] } })).status).toBe(200)

    s.fake.reply(s.vendor.text(['I could not: deleting pages is no longer available here.']))
    const allowed = await ask(s.h, s.token, 'Allow', first.threadId)
    expect(tokensOf(allowed.events)).toBe('I could not: deleting pages is no longer available here.')
    expect(await stateOf(s.h, s.token, first.threadId)).toBe('ready')
    expect(s.up.deletes).toBe(0)
    const [call] = await callsOf(s.h, first.threadId)
    // The reply decided nothing: the call ended because the thread no longer offers its tool.
    expect(call).toMatchObject({
      status: 'refused',
      error: 'no longer offered to this thread',
      decidedBy: null,
      answerId: question.id,
    })
    expect(call?.finishedAt).not.toBeNull()
    const details = await s.h.call('GET', `/api/v1/threads/${first.threadId}/messages/${question.id}/details`, {
      token: s.token,
    })
    expect(details.body.tool_calls).toMatchObject([
      { tool: 'delete_page', outcome: 'refused', error: 'no longer offered to this thread', decided_by: null },
    ])
    // The model is offered no tool of the server, reads the call and why it was not made as text (no tool defines
    // it), and answers the person's own words.
    const request = s.fake.received[1] as Received
    expect(s.vendor.toolNames(request).filter((name) => name.startsWith('docs__'))).toEqual([])
    expect(told(request)).toContain('no longer offered to this thread')
    expect(told(request)).not.toMatch(/"tool_calls"|"tool_use"|"tool_result"/)
    const last = request.body.messages.at(-1)
    expect(last.role).toBe('user')
    expect(JSON.stringify(last)).toContain('Allow')

    // Asked again, the answer finds the call ended and makes the same request.
    s.fake.reply(s.vendor.text(['Still not available.']))
    const again = await s.h.call('POST', `/api/v1/threads/${first.threadId}/messages/${allowed.messageId}/regenerate`, {
      token: s.token,
    })
    expect(again.status).toBe(201)
    await s.h.app.decorator.engine.idle()
    expect((await lastAnswer(s.h, s.token, first.threadId)).contents).toEqual([
      { type: 'text', text: 'Still not available.' },
    ])
    expect(told(s.fake.received[2])).toBe(told(request))
    expect(await callsOf(s.h, first.threadId)).toMatchObject([{ status: 'refused', decidedBy: null }])
    expect(s.up.deletes).toBe(0)
  })

  test(`${provider}: TOOLS_MAX_ROUNDS=2 makes the third request the last, with tool_choice none`, async () => {
    await using s = await setup(provider, { TOOLS_MAX_ROUNDS: 2 })
    s.fake.reply(
      s.vendor.calls(['One.'], [search('call_1', 'a')]),
      s.vendor.calls(['Two.'], [search('call_2', 'b')]),
      s.vendor.text(['Three.']),
    )
    const { events, threadId } = await ask(s.h, s.token, 'Search twice')
    expect(tokensOf(events)).toBe('One.\n\nTwo.\n\nThree.')
    expect(s.fake.received.map(s.vendor.toolsOff)).toEqual([false, false, true])
    expect((await callsOf(s.h, threadId)).map((call) => [call.round, call.status])).toEqual([
      [1, 'ok'],
      [2, 'ok'],
    ])
  })

  test(`${provider}: a tool that hangs past the answer's deadline is a timeout the model is told of`, async () => {
    await using s = await setup(provider, { TOOLS_ANSWER_DEADLINE_MS: 1000 })
    s.up.mode = 'hang'
    s.fake.reply(s.vendor.calls([], [search('call_1', 'slow')]), s.vendor.text(['The search timed out.']))
    const { events, threadId } = await ask(s.h, s.token, 'Search slowly')
    expect(tokensOf(events)).toBe('The search timed out.')
    expect((await lastAnswer(s.h, s.token, threadId)).role).toBe('assistant')
    expect((await callsOf(s.h, threadId))[0]).toMatchObject({ status: 'timeout' })
    expect(told(s.fake.received[1])).toContain('did not answer before the deadline')
    // The deadline is spent: the model's next request is its last.
    expect(s.vendor.toolsOff(s.fake.received[1] as Received)).toBe(true)
    await until(() => s.up.cancelled === 1)
  })

  test(`${provider}: a server failing, flooding or breaking its own schema gives tool errors, never a failed answer`, async () => {
    await using s = await setup(provider)
    let threadId: string | undefined
    for (const mode of ['fail', 'huge', 'lie'] as const) {
      s.up.mode = mode
      // A client reads the output schemas a server claims when it opens: the lying one is met by a new client.
      if (mode === 'lie') s.pool.forget(s.server.id)
      s.fake.reply(s.vendor.calls([], [search(`call_${mode}`, mode)]), s.vendor.text([`After ${mode}.`]))
      const answered = await ask(s.h, s.token, `Search in ${mode} mode`, threadId)
      threadId = answered.threadId
      expect(tokensOf(answered.events)).toBe(`After ${mode}.`)
      expect(await stateOf(s.h, s.token, threadId)).toBe('ready')
    }
    const calls = await callsOf(s.h, threadId as string)
    expect(calls.map((call) => call.status)).toEqual(['error', 'error', 'error'])
    expect(calls[0]?.result).toContain('No page matches')
    expect(calls[1]?.error).toContain('bytes')
    expect(calls[2]?.error).toContain('output schema')
  })

  test(`${provider}: unknown tools are refused and unusable arguments are not sent; the answer goes on`, async () => {
    await using s = await setup(provider)
    const huge = JSON.stringify({ query: 'x'.repeat(70_000) })
    s.fake.reply(
      s.vendor.calls(
        [],
        [
          { id: 'call_1', name: 'docs__drop_tables', arguments: '{}' },
          { id: 'call_2', name: 'docs__search_docs', arguments: '["not", "an", "object"]' },
          { id: 'call_3', name: 'docs__search_docs', arguments: huge },
        ],
      ),
      s.vendor.text(['None of that worked.']),
    )
    const { events, threadId } = await ask(s.h, s.token, 'Try some calls')
    expect(tokensOf(events)).toBe('None of that worked.')
    const calls = await callsOf(s.h, threadId)
    expect(calls.map((call) => [call.status, call.error])).toEqual([
      ['refused', 'not offered'],
      ['error', 'the arguments are not a JSON object'],
      ['error', 'the arguments are larger than 64 KiB'],
    ])
    expect(calls[2]?.arguments.length).toBeLessThan(2000)
    expect(s.up.requests.filter((request) => request.rpc === 'tools/call')).toEqual([])
    expect(told(s.fake.received[1])).toContain('not available to this answer')
  })

  test(`${provider}: a thread of another organization is not offered the tools`, async () => {
    await using s = await setup(provider)
    const outsider = await s.h.user({ org: 'other' })
    s.fake.reply(s.vendor.text(['No tools here.']))
    await ask(s.h, outsider.token, 'Search the docs')
    expect(s.vendor.toolNames(s.fake.received[0] as Received)).not.toContain('docs__search_docs')
    expect(s.up.requests.filter((request) => request.rpc === 'tools/call')).toEqual([])
  })

  test(`${provider}: a stop during a hanging call cancels it at the server, records it unknown, and the thread is ready`, async () => {
    await using s = await setup(provider)
    s.up.mode = 'hang'
    s.fake.reply(s.vendor.calls(['Searching.'], [search('call_1', 'forever')]))
    const sent = await s.h.call('POST', '/api/v1/threads', { token: s.token, body: { text: 'Search forever' } })
    const threadId: string = sent.body.thread_id
    await until(() => s.up.requests.some((request) => request.rpc === 'tools/call'))
    expect((await s.h.call('POST', `/api/v1/threads/${threadId}/stop`, { token: s.token })).status).toBe(202)
    await until(() => s.up.cancelled === 1)
    await until(async () => (await stateOf(s.h, s.token, threadId)) === 'ready')
    // The request went out: the server may have acted on it, so the call is not said to have failed.
    const [call] = await callsOf(s.h, threadId)
    expect(call).toMatchObject({
      status: 'unknown',
      error: 'cancelled while running; whether it took effect is unknown',
      result: 'The call was cancelled while running; whether it took effect is unknown.',
    })
    expect(call?.answerId).not.toBeNull()
    expect(s.fake.received).toHaveLength(1)
  })
}

test('an approval whose tool an admin turned off ends refused, the model told by its result beside the tools still on', async () => {
  await using s = await setup('openai')
  s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '7')]))
  const first = await ask(s.h, s.token, 'Delete page 7')
  expect(await s.h.store.mcpServers.setToolEnabled(s.server.organizationId, s.server.id, 'delete_page', false)).toBe(
    true,
  )
  s.fake.reply(s.vendor.text(['Deleting pages was turned off.']))
  const denied = await ask(s.h, s.token, 'Deny', first.threadId)
  expect(tokensOf(denied.events)).toBe('Deleting pages was turned off.')
  expect(s.up.deletes).toBe(0)
  expect(await callsOf(s.h, first.threadId)).toMatchObject([
    { status: 'refused', error: 'no longer offered to this thread', decidedBy: null },
  ])
  // The chain goes on natively, the call answered by its refusal, and the reply follows it as the person's words.
  const request = s.fake.received[1] as Received
  expect(s.vendor.toolNames(request)).toContain('docs__search_docs')
  expect(s.vendor.toolNames(request)).not.toContain('docs__delete_page')
  const messages: { role: string; content: unknown; tool_calls?: unknown }[] = request.body.messages
  const result = messages.find((message) => message.role === 'tool')
  expect(String(result?.content)).toContain('no longer offered to this thread')
  expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'Deny' })
})

test('an approval whose thread moved to a model without tools ends refused, and that model answers the reply', async () => {
  await using s = await setup('openai', {}, { echo: true })
  s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '7')]))
  const first = await ask(s.h, s.token, 'Delete page 7')
  const settings = `/api/v1/threads/${first.threadId}/settings`
  expect((await s.h.call('PATCH', settings, { token: s.token, body: { model: 'echo' } })).status).toBe(200)
  const allowed = await ask(s.h, s.token, 'Allow', first.threadId)
  expect(tokensOf(allowed.events)).toBe('You said, in turn 2:\n\n> Allow')
  expect(await stateOf(s.h, s.token, first.threadId)).toBe('ready')
  expect(s.up.deletes).toBe(0)
  expect(s.fake.received).toHaveLength(1)
  expect(await callsOf(s.h, first.threadId)).toMatchObject([
    { status: 'refused', error: 'no longer offered to this thread', decidedBy: null },
  ])
})

test('an allowed call whose Allow reply was replaced on the branch is refused, not made', async () => {
  await using s = await setup('openai')
  s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '7')]))
  const first = await ask(s.h, s.token, 'Delete page 7')
  const [asked] = await callsOf(s.h, first.threadId)
  // What an Allow leaves when its answer is cut short between deciding and sending: the call allowed by a reply that
  // the owner then edited, so that it is no longer on the thread's branch.
  const replaced = newId()
  expect(await s.h.store.toolCalls.decide(asked?.id as string, 'allowed', replaced, s.h.clock.now())).toBe(true)
  s.fake.reply(s.vendor.text(['I did not delete it.']))
  const denied = await ask(s.h, s.token, 'Deny', first.threadId)
  expect(tokensOf(denied.events)).toBe('I did not delete it.')
  expect(s.up.deletes).toBe(0)
  expect(s.up.requests.filter((request) => request.rpc === 'tools/call')).toEqual([])
  expect(await callsOf(s.h, first.threadId)).toMatchObject([
    { status: 'refused', error: 'the reply that allowed it was replaced', decidedBy: replaced },
  ])
  // The model reads why the call was not made, then the reply as the owner's words.
  const request = s.fake.received[1] as Received
  expect(told(request)).toContain('the reply that allowed it was replaced')
  expect(request.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Deny' })
})

test('an approval answered through MCP answer_choice runs the call and the answer goes on', async () => {
  await using s = await setup('openai')
  s.fake.reply(s.vendor.calls(['I will delete it.'], [deletePage('call_d1', '9')]))
  const first = await ask(s.h, s.token, 'Delete page 9')
  const question = await lastAnswer(s.h, s.token, first.threadId)
  await using served = listening(s.h)
  await using client = await connect(served.url.origin, s.token)
  s.fake.reply(s.vendor.text(['Page 9 is gone.']))
  const result = await client.callTool({
    name: 'answer_choice',
    arguments: { thread_id: first.threadId, message_id: question.id, choice: 'Allow', wait_seconds: 30 },
  })
  expect(result.isError).toBeFalsy()
  expect(JSON.stringify(result.structuredContent)).toContain('Page 9 is gone.')
  expect(s.up.deletes).toBe(1)
  expect((await callsOf(s.h, first.threadId))[0]).toMatchObject({ status: 'ok', result: 'Deleted 9' })
})

test('the approval question shows compact arguments, cut at 1000 characters with how many are left out, and none when there are none', () => {
  const call = { id: '0190a0b0-0000-7000-8000-000000000001', toolName: 'delete_page', serverName: 'docs' }
  expect(approvalBlock({ ...call, arguments: '{ "page" : "7" }' }).question).toBe(
    'Allow delete_page on docs with {"page":"7"}?',
  )
  expect(approvalBlock({ ...call, arguments: '{}' })).toEqual({
    type: 'user_get_choice',
    tool_use_id: 'approve_0190a0b0000070008000000000000001',
    question: 'Allow delete_page on docs?',
    choices: ['Allow', 'Deny'],
  })
  const whole = `{"page":"${'p'.repeat(500)}"}`
  expect(approvalBlock({ ...call, arguments: whole }).question).toBe(`Allow delete_page on docs with ${whole}?`)
  // A padded field cannot push another out of sight unnoticed: the question says how much it does not show.
  const padded = JSON.stringify({ note: 'x'.repeat(1200), page: '7' })
  expect(approvalBlock({ ...call, arguments: padded }).question).toBe(
    `Allow delete_page on docs with ${padded.slice(0, 1000)}… (${padded.length - 1000} more characters: the call's details show them all)?`,
  )
})
