// What an answer did with the tools of the organization's MCP servers, where people and programs read it (issue 38): a
// message's details and the export (JSON and Markdown) through the API, and the thread page, where each call is a
// disclosure opening to its arguments and result, escaped; and the composer's Tools menu, which saves the thread's
// tools as its settings. The calls are recorded as the engine records them (test/support/tool-calls.ts).
import { expect, test } from 'bun:test'
import type { DiscoveredTool } from '../src/connectors/repository'
import type { ToolCallRecord } from '../src/generation/tool-calls.repository'
import type { ThreadsModel } from '../src/threads/model'
import { testEvent } from './support/audit'
import { type Harness, harness, ScriptedRunner, type TestUser } from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { answerWithTools, seedTime } from './support/tool-calls'
import { submit } from './support/web-helpers'

const iso = (ms: number) => new Date(ms).toISOString()
const approval: Extract<ThreadsModel.contentBlock, { type: 'user_get_choice' }> = {
  type: 'user_get_choice',
  tool_use_id: 'approve_0197a1b2c3d4e5f6a7b8c9d0e1f2a3b4',
  question: 'Allow delete_page on docs with {"id":"7"}?',
  choices: ['Allow', 'Deny'],
}
const cut = `${'Leases are held for 30 seconds. '.repeat(3)}\n…[truncated: the result had 90000 characters; the first 96 are shown]`

/** A thread whose first answer called six tools in two rounds and ended asking to allow the last. */
async function answeredWithTools(h: Harness, runner: ScriptedRunner, user: TestUser) {
  const created = await h.call('POST', '/api/v1/threads', {
    token: user.token,
    body: { name: 'Leases', text: 'Find the page about leases and delete it' },
  })
  const { thread_id: threadId, message_id: questionId } = created.body
  const calls = await answerWithTools(
    h,
    runner,
    { threadId, messageId: questionId },
    [
      {
        text: 'Let me look. ',
        calls: [
          { arguments: '{"q":"<script>alert(1)</script>"}' },
          {
            toolName: 'fetch_page',
            arguments: 'page 7, please',
            status: 'error',
            result: 'The page server said no',
            resultChars: 23,
            error: 'The page server said no',
            durationMs: 40,
          },
        ],
      },
      {
        text: 'Found it. ',
        calls: [
          {
            arguments: '{"q":"lease renewal"}',
            status: 'timeout',
            result: 'The tool did not answer within 30 seconds.',
            resultChars: 42,
            error: 'timed out',
            durationMs: 30_000,
          },
          {
            serverName: 'jira',
            toolName: 'create_issue',
            arguments: '{}',
            status: 'refused',
            result: 'This tool is not available to this thread.',
            resultChars: 42,
            error: 'not offered to this thread',
            durationMs: null,
          },
          { toolName: 'read_page', arguments: '{"id":"7"}', result: cut, resultChars: 90_000, durationMs: 1250 },
          {
            toolName: 'delete_page',
            arguments: '{"id":"7"}',
            status: 'awaiting_approval',
            result: null,
            resultChars: null,
            approvalId: approval.tool_use_id,
            finishedAt: null,
            durationMs: null,
          },
        ],
      },
    ],
    'I can delete it once you allow it.',
    [approval],
  )
  const answerId = (await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })).body.data[1]
    .id as string
  return { threadId, questionId, answerId, calls }
}

/** The API's ToolCall of a recorded call, written out as the documentation describes it. */
function shown(call: ToolCallRecord, more: Partial<ThreadsModel.toolCall> = {}): ThreadsModel.toolCall {
  return {
    id: call.id,
    server: call.serverName,
    tool: call.toolName,
    arguments: call.arguments,
    outcome: call.status,
    result: call.result,
    result_truncated: false,
    error: call.error,
    duration_ms: call.durationMs,
    round: call.round,
    started_at: iso(call.startedAt),
    decided_by: null,
    ...more,
  } as ThreadsModel.toolCall
}

test('details and the export show each call: arguments, outcome, result, timing, and who denied it', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const { user } = await signedIn(h)
  const { threadId, questionId, answerId, calls } = await answeredWithTools(h, runner, user)
  const [search, fetchPage, slow, refused, read, remove] = calls as ToolCallRecord[]
  // The owner says no: the engine's continuation records the decision on the call (connectors/executor.ts).
  const deny = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
    token: user.token,
    body: { text: 'Deny' },
  })
  expect(await h.store.toolCalls.decide(remove?.id as string, 'denied', deny.body.message_id, h.clock.now())).toBe(true)
  const job = await runner.started(deny.body.message_id)
  job.token('Left as it is.')
  job.done()
  await h.app.decorator.engine.idle()

  const expected: ThreadsModel.toolCall[] = [
    shown(search as ToolCallRecord, { arguments: { q: '<script>alert(1)</script>' } }),
    shown(fetchPage as ToolCallRecord, { arguments: 'page 7, please' }),
    shown(slow as ToolCallRecord, { arguments: { q: 'lease renewal' } }),
    shown(refused as ToolCallRecord, { arguments: {} }),
    shown(read as ToolCallRecord, { arguments: { id: '7' }, result_truncated: true }),
    shown(remove as ToolCallRecord, { arguments: { id: '7' }, outcome: 'denied', decided_by: deny.body.message_id }),
  ]
  const details = await h.call('GET', `/api/v1/threads/${threadId}/messages/${answerId}/details`, {
    token: user.token,
  })
  expect(details).toMatchObject({ status: 200 })
  expect(details.body).toEqual({
    id: answerId,
    parent_id: questionId,
    role: 'assistant',
    model: 'echo',
    version: 1,
    versions: 1,
    active: true,
    usage: expect.objectContaining({ estimated: true }),
    tool_calls: [
      {
        id: search?.id,
        server: 'docs',
        tool: 'search_docs',
        arguments: { q: '<script>alert(1)</script>' },
        outcome: 'ok',
        result: 'Leases: page 7',
        result_truncated: false,
        error: null,
        duration_ms: 320,
        round: 1,
        started_at: iso(seedTime),
        decided_by: null,
      },
      ...expected.slice(1),
    ],
  })
  // A user message has no tool calls; an answer that called none has an empty list.
  const question = await h.call('GET', `/api/v1/threads/${threadId}/messages/${questionId}/details`, {
    token: user.token,
  })
  expect(question.body).not.toHaveProperty('tool_calls')
  const messages = (await h.call('GET', `/api/v1/threads/${threadId}/messages`, { token: user.token })).body.data
  const later = await h.call('GET', `/api/v1/threads/${threadId}/messages/${messages[3].id}/details`, {
    token: user.token,
  })
  expect(later.body.tool_calls).toEqual([])
  // The Message objects themselves keep the specification's fields.
  expect(Object.keys(messages[1]).sort()).toEqual(['app_url', 'contents', 'created_at', 'id', 'role', 'thread_id'])

  const json = await h.call('GET', `/api/v1/threads/${threadId}/export`, { token: user.token })
  expect(json.body.messages.map((message: ThreadsModel.exportedMessage) => message.tool_calls)).toEqual([
    undefined,
    expected,
    undefined,
    [],
  ])
  const markdown = (await h.call('GET', `/api/v1/threads/${threadId}/export?format=markdown`, { token: user.token }))
    .body as string
  expect(markdown).toContain(
    [
      '- Used search_docs on docs · 320 ms',
      '- fetch_page on docs failed: The page server said no',
      '- search_docs on docs failed: timed out after 30 s',
      '- Did not use create_issue on jira: not offered to this thread',
      '- Used read_page on docs · 1.3 s',
      '- Denied delete_page on docs',
      '',
      'Let me look. Found it. I can delete it once you allow it.',
    ].join('\n'),
  )
})

function tool(name: string, readOnly: boolean): DiscoveredTool {
  return {
    name,
    title: null,
    description: `${name.replace('_', 's the ')}. Takes a moment.`,
    inputSchema: { type: 'object' },
    outputSchema: null,
    annotations: readOnly ? { readOnlyHint: true } : null,
    problem: null,
  }
}

async function docsServer(h: Harness, user: TestUser) {
  const organizationId = (await h.store.users.findByEmail(user.email))?.organizationId as number
  const server = await h.store.mcpServers.add(
    {
      id: Bun.randomUUIDv7(),
      organizationId,
      name: 'docs',
      url: 'https://docs.example.com/mcp',
      auth: 'none',
      headersSealed: null,
      headerNames: [],
      trusted: false,
      createdBy: user.id,
      now: h.clock.now(),
    },
    () => testEvent('mcp_server.added'),
  )
  if (!server) throw new Error('not added')
  await h.store.mcpServers.replaceTools(server.id, [tool('search_docs', true), tool('delete_page', false)], true, 1)
  return server
}

test('the thread page: a disclosure per call under its answer, arguments and results escaped', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const { browser, user } = await signedIn(h)
  const { threadId, answerId, calls } = await answeredWithTools(h, runner, user)
  const [search, fetchPage, , , , remove] = calls as ToolCallRecord[]
  const page = async (viewer = browser) => {
    const response = await viewer.get(`/threads/${threadId}`)
    expect(response.status).toBe(200)
    return response.text()
  }
  const html = await page()
  const lines = [...html.matchAll(/<span class="tool-call-line">([^<]*)<\/span>/g)].map((match) => match[1])
  expect(lines).toEqual([
    'Used search_docs on docs · 320 ms',
    'fetch_page on docs failed: The page server said no',
    'search_docs on docs failed: timed out after 30 s',
    'Did not use create_issue on jira: not offered to this thread',
    'Used read_page on docs · 1.3 s',
    'Waiting for your choice: delete_page on docs',
  ])
  // Under the answer, before its text, which was written after the calls answered.
  const answer = html.slice(html.indexOf(`id="message-${answerId}"`))
  expect(answer.indexOf(`id="tool-call-${search?.id}"`)).toBeLessThan(answer.indexOf('Let me look.'))
  expect(html).toContain(`<details class="tool-call" id="tool-call-${search?.id}">`)
  expect(html).toContain(`<details class="tool-call troubled" id="tool-call-${fetchPage?.id}">`)
  expect(html).toContain(`<details class="tool-call" id="tool-call-${remove?.id}">`)
  // The arguments indented as JSON, the hostile one as text; a result as the model read it.
  expect(html).not.toContain('<script>alert(1)')
  expect(html).toContain(
    '<pre class="tool-call-text">{\n  &quot;q&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;\n}</pre>',
  )
  expect(html).toContain('<pre class="tool-call-text">page 7, please</pre>')
  expect(html).toContain('<pre class="tool-call-text">Leases: page 7</pre>')
  expect(html).toContain('Result (cut for the model)')
  // A member who reads the thread sees whose choice it waits for.
  const colleague = await signedIn(h)
  expect(await page(colleague.browser)).toContain('Waiting for the owner’s choice: delete_page on docs')

  // Denied by the owner's reply, linked.
  const deny = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
    token: user.token,
    body: { text: 'Deny' },
  })
  await h.store.toolCalls.decide(remove?.id as string, 'denied', deny.body.message_id, h.clock.now())
  const job = await runner.started(deny.body.message_id)
  job.token('Left as it is.')
  job.done()
  await h.app.decorator.engine.idle()
  const after = await page()
  expect(after).toContain('<span class="tool-call-line">Denied delete_page on docs</span>')
  expect(after).toContain(`Denied by <a href="#message-${deny.body.message_id}">your reply</a>.`)
})

test('the Tools menu: only with tools on, showing the thread’s choice, and saving all, none or some', async () => {
  const runner = new ScriptedRunner()
  await using h = await harness({ runner })
  const { browser, user } = await signedIn(h)
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { text: 'Hello' } })
  const threadId = created.body.thread_id as string
  const job = await runner.started(created.body.message_id)
  job.token('Hi.')
  job.done()
  await h.app.decorator.engine.idle()
  const page = async () => (await browser.get(`/threads/${threadId}`)).text()
  const settings = async () =>
    (await h.call('GET', `/api/v1/threads/${threadId}/settings`, { token: user.token })).body.tools
  // The organization has no tools: no menu.
  expect(await page()).not.toContain('tools-menu')

  await docsServer(h, user)
  const state = (html: string) => ({
    summary: /<span class="tools-summary">([^<]*)<\/span>/.exec(html)?.[1],
    choice: /id="tools-(all|none|some)" name="tools_choice" value="\w+" form="composer-tools" checked/.exec(html)?.[1],
    checked: [...html.matchAll(/name="tools" value="([^"]+)" form="composer-tools" checked/g)].map((m) => m[1]),
  })
  const first = await page()
  expect(first).toContain(`<form id="composer-tools" method="post" action="/threads/${threadId}/settings">`)
  expect(first).toContain('All tools the organization has on')
  expect(first).toContain('<span class="tool-name">delete_page</span><span class="badge subtle">asks first</span>')
  expect(state(first)).toEqual({ summary: 'All', choice: 'all', checked: [] })

  const save = (fields: Record<string, string | string[]>) => submit(browser, `/threads/${threadId}/settings`, fields)
  expect((await save({ tools_choice: 'some', tools: ['docs/search_docs'] })).status).toBe(303)
  expect(await settings()).toEqual(['docs/search_docs'])
  expect(state(await page())).toEqual({ summary: '1 of 2', choice: 'some', checked: ['docs/search_docs'] })
  expect((await save({ tools_choice: 'none', tools: ['docs/search_docs'] })).status).toBe(303)
  expect(await settings()).toEqual([])
  expect(state(await page())).toEqual({ summary: 'None', choice: 'none', checked: [] })
  expect((await save({ tools_choice: 'all' })).status).toBe(303)
  expect(await settings()).toBeNull()
  // A tool the organization does not have on is refused with the API's words, and nothing changes.
  const refused = await save({ tools_choice: 'some', tools: ['docs/search_docs', 'crm/find'] })
  expect(refused.status).toBe(400)
  expect(await refused.text()).toContain('The tool &quot;crm/find&quot; is not on in your organization')
  expect(await settings()).toBeNull()
  // The settings' bound holds for the form as for the API.
  const many = Array.from({ length: 201 }, (_, index) => `docs/tool_${index}`)
  const tooMany = await save({ tools_choice: 'some', tools: many })
  expect(tooMany.status).toBe(400)
  expect(await tooMany.text()).toContain('Choose at most 200 tools.')
  expect(await settings()).toBeNull()
  // A member who reads the thread has no composer, and so no menu.
  const colleague = await signedIn(h)
  expect(await (await colleague.browser.get(`/threads/${threadId}`)).text()).not.toContain('tools-menu')
})
