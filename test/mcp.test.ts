// The MCP server at /mcp over real HTTP, driven by the MCP SDK's own client with personal access tokens: the
// tools, their schemas and scopes, the API's visibility and thread rules, progress while an answer is written,
// and the transport's answers to what a client should not send.
import { expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { and, eq } from 'drizzle-orm'
import sharp from 'sharp'
import { attachments } from '../src/attachments/attachments.table'
import { personalAccessTokens } from '../src/auth/auth.table'
import { loadConfig } from '../src/config'
import { maxMcpBodyBytes } from '../src/mcp/model'
import { loadCatalogue } from '../src/models/catalogue'
import { feedback } from '../src/threads/threads.table'
import { parseEvents, stalledClient, until } from './support/helpers'
import { connect, postMcp, startServer } from './support/mcp-helpers'

// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
type Json = any

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult
}

/** The structured result of a call that must succeed; a tool error fails the test with its text. */
async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<Json> {
  const result = await call(client, name, args)
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`)
  // The text block is the same object as JSON, as the MCP specification suggests for older clients.
  expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent)
  return result.structuredContent
}

/** The text of a call that must be refused as a tool error. */
async function refused(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(client, name, args)
  expect(result.isError).toBe(true)
  expect(result.structuredContent).toBeUndefined()
  return (result.content[0] as { text: string }).text
}

test('tools/list: the eleven tools with input and output schemas, annotations, and the scopes each needs', async () => {
  await using server = await startServer()
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const { tools } = await client.listTools()
  const summary = Object.fromEntries(
    tools.map((tool) => [
      tool.name,
      {
        scopes: tool._meta?.['threadhouse/scopes'],
        readOnly: tool.annotations?.readOnlyHint,
        destructive: tool.annotations?.destructiveHint,
        idempotent: tool.annotations?.idempotentHint,
        openWorld: tool.annotations?.openWorldHint,
      },
    ]),
  )
  // No tool destroys anything, so none makes a host ask before it runs; none reaches beyond Threadhouse.
  const reader = { scopes: ['threads:read'], readOnly: true, destructive: false, idempotent: true, openWorld: false }
  const writer = { scopes: ['threads:write'], readOnly: false, destructive: false, idempotent: false, openWorld: false }
  expect(summary).toEqual({
    search_threads: reader,
    list_threads: reader,
    list_models: { ...reader, scopes: [] },
    regenerate_response: writer,
    get_thread: reader,
    get_response: reader,
    create_thread: writer,
    send_message: writer,
    // A question is answered once; a rating is replaced by the same rating.
    answer_choice: { ...writer, scopes: ['threads:write', 'threads:read'], idempotent: true },
    upload_attachment: writer,
    rate_message: { ...writer, idempotent: true },
  })
  for (const tool of tools) {
    expect(tool.outputSchema?.type).toBe('object')
    const scopes = (tool._meta?.['threadhouse/scopes'] ?? []) as string[]
    for (const scope of scopes) expect(tool.description).toContain(scope)
  }
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  expect(byName.get('send_message')?.inputSchema).toMatchObject({
    properties: {
      thread_id: { format: 'uuid' },
      text: { minLength: 1, maxLength: 1024 * 1024 },
      attachment_ids: { maxItems: 25 },
    },
    required: ['thread_id', 'text'],
  })
  expect(Object.keys(byName.get('rate_message')?.inputSchema.properties ?? {})).toEqual([
    'thread_id',
    'message_id',
    'positive',
    'feedback_text',
  ])
  expect(Object.keys(byName.get('list_threads')?.inputSchema.properties ?? {})).toEqual([
    'limit',
    'after',
    'owned',
    'archived',
  ])
})

test('create_thread, send_message with progress as the answer arrives, get_thread and get_response', async () => {
  await using server = await startServer()
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const created = await ok(client, 'create_thread', { name: 'Lyon', is_private: true })
  expect(created).toMatchObject({
    message_id: null,
    thread: {
      name: 'Lyon',
      state: 'ready',
      is_private: true,
      app_url: `${server.origin}/threads/${created.thread_id}`,
    },
  })

  const progress: { progress: number; message?: string }[] = []
  let heard: () => void = () => {}
  const sending = client.callTool(
    { name: 'send_message', arguments: { thread_id: created.thread_id, text: 'Plan a weekend' } },
    undefined,
    {
      onprogress: (update) => {
        progress.push({ progress: update.progress, message: update.message })
        heard()
      },
    },
  )
  const nextProgress = () => new Promise<void>((resolve) => (heard = resolve))
  const job = await server.runner.next()
  expect(job.history.at(-1)?.contents).toEqual([{ type: 'text', text: 'Plan a weekend' }])
  // Each token is written once the previous one was heard, so none of them can be missed or merged.
  let heardFirst = nextProgress()
  job.handlers.token('Two days ')
  await heardFirst
  heardFirst = nextProgress()
  job.handlers.token('by the Saône.')
  await heardFirst
  job.handlers.done()
  const answer = (await sending).structuredContent as Json
  expect(progress).toEqual([
    { progress: 9, message: 'Two days ' },
    { progress: 22, message: 'by the Saône.' },
  ])
  expect(answer).toMatchObject({
    thread_id: created.thread_id,
    message_id: job.messageId,
    status: 'complete',
    app_url: `${server.origin}/threads/${created.thread_id}`,
    messages: [{ role: 'assistant', contents: [{ type: 'text', text: 'Two days by the Saône.' }] }],
  })
  expect(answer.messages[0].app_url).toBe(
    `${server.origin}/threads/${created.thread_id}#message-${answer.messages[0].id}`,
  )

  const read = await ok(client, 'get_thread', { thread_id: created.thread_id, limit: 1 })
  expect(read.thread).toMatchObject({ id: created.thread_id, state: 'ready' })
  expect(read.messages).toMatchObject({ limit: 1, has_more: true, data: [{ id: job.messageId, role: 'user' }] })
  const rest = await ok(client, 'get_thread', { thread_id: created.thread_id, after: read.messages.last_id })
  expect(rest.messages.data.map((message: Json) => message.id)).toEqual([answer.messages[0].id])
  expect(await ok(client, 'get_response', { thread_id: created.thread_id, message_id: job.messageId })).toEqual(answer)

  // create_thread with text waits for its answer the same way.
  const started = client.callTool({ name: 'create_thread', arguments: { text: 'Hello' } })
  const second = await server.runner.next()
  second.handlers.token('Hi')
  second.handlers.done()
  const withAnswer = (await started).structuredContent as Json
  expect(withAnswer).toMatchObject({
    message_id: second.messageId,
    // Named after its first message, as every thread started without a name is.
    thread: { state: 'ready', name: 'Hello' },
    answer: { status: 'complete', messages: [{ contents: [{ type: 'text', text: 'Hi' }] }] },
  })
})

test('a busy thread refuses a message as a tool error; past the wait, get_response fetches the answer later', async () => {
  await using server = await startServer()
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const { thread_id } = await ok(client, 'create_thread', {})
  // A wait of 0 ends before the answer does, without a clock to race: the result says where to find it later.
  const pending = await ok(client, 'send_message', { thread_id, text: '```\nls -l\n```\n*First*', wait_seconds: 0 })
  expect((await ok(client, 'get_thread', { thread_id, limit: 1 })).thread.name).toBe('First')
  const job = await server.runner.next()
  job.handlers.token('Partial')
  expect(pending).toEqual({
    thread_id,
    message_id: job.messageId,
    status: 'processing',
    messages: [],
    app_url: `${server.origin}/threads/${thread_id}`,
  })
  const busy = await refused(client, 'send_message', { thread_id, text: 'Second' })
  expect(busy).toContain('The thread is active; a new message is accepted only in ready')
  expect(busy).toContain('get_response')
  expect(await ok(client, 'get_response', { thread_id, message_id: pending.message_id })).toMatchObject({
    status: 'processing',
    messages: [],
  })
  job.handlers.error('The model is unavailable')
  expect(await ok(client, 'get_response', { thread_id, message_id: pending.message_id })).toMatchObject({
    status: 'error',
    error: 'The model is unavailable',
    messages: [{ role: 'assistant', contents: [{ type: 'text', text: 'Partial' }] }],
  })
  expect(await refused(client, 'send_message', { thread_id, text: 'Again' })).toContain('The thread is error')
  expect(await refused(client, 'get_response', { thread_id, message_id: crypto.randomUUID() })).toBe(
    'Message not found',
  )
})

test('a client that goes away stops waiting for its answer; the answer goes on', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const client = await connect(server.origin, ada.token)
  const { thread_id } = await ok(client, 'create_thread', {})
  const sending = client.callTool({ name: 'send_message', arguments: { thread_id, text: 'Long one' } })
  const job = await server.runner.next()
  const { hub } = server.app.decorator.engine
  await until(() => hub.listenerCount(job.messageId) === 1)
  await client.close()
  await expect(sending).rejects.toThrow('Connection closed')
  await until(() => hub.listenerCount(job.messageId) === 0)
  job.handlers.token('Still written')
  job.handlers.done()
  await using again = await connect(server.origin, ada.token)
  expect(await ok(again, 'get_response', { thread_id, message_id: job.messageId })).toMatchObject({
    status: 'complete',
    messages: [{ contents: [{ type: 'text', text: 'Still written' }] }],
  })
})

test('the API’s visibility: private threads of others and other organizations’ threads are never reached', async () => {
  await using server = await startServer()
  const [ada, bob, eve] = [
    await server.member(),
    await server.member(),
    await server.member({ org: 'elsewhere', scopes: ['threads:read', 'threads:write'] }),
  ]
  await using adaClient = await connect(server.origin, ada.token)
  await using bobClient = await connect(server.origin, bob.token)
  await using eveClient = await connect(server.origin, eve.token)
  const open = await ok(adaClient, 'create_thread', { name: 'Lyon trip' })
  const hidden = await ok(adaClient, 'create_thread', { name: 'Lyon surprise', is_private: true })
  await ok(bobClient, 'create_thread', { name: 'Bob notes' })

  const ids = (page: Json) => page.data.map((thread: Json) => thread.id)
  expect(ids(await ok(bobClient, 'search_threads', { q: 'lyon' }))).toEqual([open.thread_id])
  expect(ids(await ok(adaClient, 'search_threads', { q: 'lyon' }))).toEqual([hidden.thread_id, open.thread_id])
  expect(ids(await ok(eveClient, 'search_threads', { q: 'lyon' }))).toEqual([])
  expect(ids(await ok(eveClient, 'list_threads', {}))).toEqual([])
  const bobsView = await ok(bobClient, 'list_threads', { owned: false, limit: 1 })
  expect(bobsView).toMatchObject({ limit: 1, has_more: false, data: [{ id: open.thread_id, name: 'Lyon trip' }] })
  expect(await refused(bobClient, 'get_thread', { thread_id: hidden.thread_id })).toBe('Thread not found')
  expect(await refused(eveClient, 'get_thread', { thread_id: open.thread_id })).toBe('Thread not found')
  // Seeing a thread is not owning it.
  expect(await refused(bobClient, 'send_message', { thread_id: open.thread_id, text: 'Hi' })).toBe(
    'Only the owner of a thread can send messages to it',
  )
})

test('search_threads gives each thread with the passage it matched, its message and the words marked', async () => {
  await using server = await startServer()
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const named = await ok(client, 'create_thread', { name: 'Lyon notes' })
  const asked = client.callTool({ name: 'create_thread', arguments: { name: 'Dinner', text: 'Where to eat in Lyon?' } })
  const job = await server.runner.next()
  job.handlers.token('Try a bouchon in the old town.')
  job.handlers.done()
  const dinner = (await asked).structuredContent as Json

  const found = await ok(client, 'search_threads', { q: 'lyon' })
  // What it returned before stays: the page and each thread as the API shows it; `match` is added.
  expect(found).toMatchObject({ has_more: false, limit: 20, first_id: dinner.thread.id, last_id: named.thread_id })
  expect(found.data.map(({ match, ...thread }: Json) => thread)).toEqual([
    (await ok(client, 'get_thread', { thread_id: dinner.thread.id })).thread,
    (await ok(client, 'get_thread', { thread_id: named.thread_id })).thread,
  ])
  const question = 'Where to eat in Lyon?'
  const at = question.indexOf('Lyon')
  expect(found.data.map((thread: Json) => thread.match)).toEqual([
    // The answer does not hold the word: the question it answers does.
    { snippet: question, message_id: dinner.message_id, attachment_id: null, highlights: [[at, at + 4]] },
    { snippet: 'Lyon notes', message_id: null, attachment_id: null, highlights: [[0, 4]] },
  ])
  expect((await ok(client, 'search_threads', { q: '?!' })).data).toEqual([])
})

test('answer_choice answers the open user_get_choice question, as the web page’s buttons do', async () => {
  await using server = await startServer()
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const { thread_id } = await ok(client, 'create_thread', {})
  const asking = client.callTool({ name: 'send_message', arguments: { thread_id, text: 'Where to?' } })
  const job = await server.runner.next()
  const question = { type: 'user_get_choice', tool_use_id: 'c1', question: 'Which city?', choices: ['Lyon', 'Nice'] }
  job.handlers.token('Let me ask.')
  job.handlers.block(question as never)
  job.handlers.done()
  const asked = (await asking).structuredContent as Json
  const questionId = asked.messages[0].id
  expect(asked.messages[0].contents).toEqual([{ type: 'text', text: 'Let me ask.' }, question])

  expect(await refused(client, 'answer_choice', { thread_id, message_id: questionId, choice: 'Paris' })).toBe(
    'choice must be one of "Lyon", "Nice"; to answer in other words, use send_message',
  )
  expect(await refused(client, 'answer_choice', { thread_id, message_id: asked.message_id, choice: 'Lyon' })).toBe(
    'This question is no longer open: the thread has moved on since it was asked (see get_thread). The thread is busy or has moved on: read it with get_thread, wait for any answer on its way with get_response, then try again.',
  )
  const answering = client.callTool({
    name: 'answer_choice',
    arguments: { thread_id, message_id: questionId, choice: ' nice ' },
  })
  const next = await server.runner.next()
  expect(next.history.at(-1)?.contents).toEqual([{ type: 'text', text: 'Nice' }])
  next.handlers.token('Nice it is.')
  next.handlers.done()
  expect((await answering).structuredContent).toMatchObject({ status: 'complete', messages: [{ role: 'assistant' }] })
  // Answered: the question is no longer the thread's latest message.
  expect(await refused(client, 'answer_choice', { thread_id, message_id: questionId, choice: 'Lyon' })).toStartWith(
    'This question is no longer open',
  )
})

test('upload_attachment checks files as the API does; send_message attaches them; rate_message rates answers', async () => {
  await using server = await startServer()
  const [ada, bob] = [await server.member(), await server.member()]
  await using adaClient = await connect(server.origin, ada.token)
  await using bobClient = await connect(server.origin, bob.token)
  const { thread_id } = await ok(adaClient, 'create_thread', {})
  const notes = Buffer.from('# Packing list\n\n- umbrella\n').toString('base64')
  const uploaded = await ok(adaClient, 'upload_attachment', {
    thread_id,
    filename: 'dir/list.md',
    content_base64: notes,
  })
  expect(uploaded).toEqual({
    thread_id,
    attachment: { id: uploaded.attachment.id, filename: 'list.md' },
    app_url: `${server.origin}/threads/${thread_id}`,
  })
  const download = await fetch(`${server.origin}/api/v1/threads/${thread_id}/attachments/${uploaded.attachment.id}`, {
    headers: { authorization: `Bearer ${ada.token}` },
  })
  expect(await download.text()).toBe('# Packing list\n\n- umbrella\n')

  // A file as large as the API takes, though its base64 makes the request larger than any other JSON body.
  const photo = await sharp({
    create: {
      width: 1000,
      height: 700,
      channels: 3,
      background: '#888',
      noise: { type: 'gaussian', mean: 128, sigma: 60 },
    },
  })
    .png()
    .toBuffer()
  expect(photo.byteLength).toBeGreaterThan(1024 * 1024)
  const large = { thread_id, filename: 'noise.png', content_base64: photo.toString('base64'), media_type: 'image/png' }
  expect((await ok(adaClient, 'upload_attachment', large)).attachment.filename).toBe('noise.png')

  // The same refusals as the API: bytes that contradict the name, bad base64, another member's thread.
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64')
  // In plain words, for the person the assistant relays them to.
  expect(await refused(adaClient, 'upload_attachment', { thread_id, filename: 'a.txt', content_base64: png })).toBe(
    "a.txt isn't a text file: its contents are a PNG image.",
  )
  expect(
    await refused(adaClient, 'upload_attachment', { thread_id, filename: 'a.md', content_base64: 'not base64!' }),
  ).toBe('content_base64 is not valid base64')
  expect(await refused(bobClient, 'upload_attachment', { thread_id, filename: 'b.md', content_base64: notes })).toBe(
    'Only the owner of a thread can upload files to it',
  )
  // Ownership and the thread's quota are judged before the bytes are even decoded, as the upload route does.
  expect(await refused(bobClient, 'upload_attachment', { thread_id, filename: 'b.md', content_base64: '!' })).toBe(
    'Only the owner of a thread can upload files to it',
  )
  const full = await ok(adaClient, 'create_thread', {})
  server.db
    .insert(attachments)
    .values(
      Array.from({ length: 25 }, (_, i) => ({
        id: crypto.randomUUID(),
        threadId: full.thread_id,
        kind: 'text' as const,
        mediaType: 'text/plain',
        filename: `f${i}.txt`,
        sizeBytes: 1,
        createdAt: Date.now(),
      })),
    )
    .run()
  const overQuota = { thread_id: full.thread_id, filename: 'c.md' }
  expect(await refused(adaClient, 'upload_attachment', { ...overQuota, content_base64: '!' })).toBe(
    'A thread holds at most 25 files; this one has 25, room for 0 more',
  )
  // A text the API's 1 MiB body could not carry is refused with its message, as the API refuses such a body.
  const tooLong = call(adaClient, 'send_message', { thread_id, text: 'x'.repeat(1024 * 1024 + 1) })
  await expect(tooLong).rejects.toThrow(
    'a message may hold at most 1048576 bytes besides the file of an upload_attachment',
  )

  const sending = adaClient.callTool({
    name: 'send_message',
    arguments: { thread_id, text: 'Read this', attachment_ids: [uploaded.attachment.id] },
  })
  const job = await server.runner.next()
  expect(job.history.at(-1)?.contents).toEqual([
    { type: 'text', text: 'Read this' },
    { type: 'document', attachment_id: uploaded.attachment.id },
  ])
  job.handlers.token('Noted.')
  job.handlers.done()
  const answer = (await sending).structuredContent as Json
  const answerId = answer.messages[0].id

  // Any member who sees the thread may rate its answers; a repeat replaces the rating.
  const rated = await ok(bobClient, 'rate_message', { thread_id, message_id: answerId, positive: false })
  expect(rated).toEqual({
    thread_id,
    message_id: answerId,
    positive: false,
    feedback_text: null,
    app_url: `${server.origin}/threads/${thread_id}#message-${answerId}`,
  })
  await ok(bobClient, 'rate_message', { thread_id, message_id: answerId, positive: true, feedback_text: 'Helpful' })
  const stored = server.db
    .select({ positive: feedback.positive, text: feedback.feedbackText })
    .from(feedback)
    .where(and(eq(feedback.messageId, answerId), eq(feedback.userId, bob.id)))
    .all()
  expect(stored).toEqual([{ positive: true, text: 'Helpful' }])
  expect(await refused(bobClient, 'rate_message', { thread_id, message_id: answer.message_id, positive: true })).toBe(
    'Feedback can be given only on assistant messages',
  )
})

test('scopes gate tools as they gate the API, and a refusal names the scope', async () => {
  await using server = await startServer()
  const reader = await server.member({ scopes: ['threads:read'] })
  const writer = await server.member({ scopes: ['threads:write'] })
  const own = await server.member({ scopes: ['threads:read:own', 'threads:write'] })
  await using readerClient = await connect(server.origin, reader.token)
  await using writerClient = await connect(server.origin, writer.token)
  await using ownClient = await connect(server.origin, own.token)

  expect(await refused(readerClient, 'create_thread', { name: 'x' })).toBe(
    "This tool needs the threads:write scope, which this connection's token does not have (it has: threads:read). " +
      'Reconnect Threadhouse and allow threads:write, or use a personal access token that has it.',
  )
  expect(await refused(writerClient, 'list_threads', {})).toContain('needs the threads:read scope')
  // Writing alone sends, but does not read the answer back.
  // Nor the thread it creates: only the IDs and the link, as the API's POST answers.
  const { thread_id, ...created } = await ok(writerClient, 'create_thread', { name: 'Write only' })
  expect(created).toEqual({ message_id: null, app_url: `${server.origin}/threads/${thread_id}` })
  const withText = await ok(writerClient, 'create_thread', { text: 'Hello' })
  expect(Object.keys(withText).sort()).toEqual(['answer', 'app_url', 'message_id', 'thread_id'])
  expect(withText.answer).toMatchObject({ message_id: withText.message_id, status: 'processing', messages: [] })
  const sent = await ok(writerClient, 'send_message', { thread_id, text: 'Hi' })
  expect(sent).toMatchObject({ status: 'processing', messages: [] })
  expect(await refused(writerClient, 'get_response', { thread_id, message_id: sent.message_id })).toContain(
    'threads:read',
  )
  expect(
    await refused(writerClient, 'answer_choice', { thread_id, message_id: sent.message_id, choice: 'A' }),
  ).toContain('needs the threads:read scope')
  // threads:read:own stands in for threads:read, over the person's own threads only.
  const mine = await ok(ownClient, 'create_thread', { name: 'Mine' })
  expect((await ok(ownClient, 'list_threads', {})).data.map((thread: Json) => thread.id)).toEqual([mine.thread_id])
  expect(await refused(ownClient, 'get_thread', { thread_id })).toBe('Thread not found')
})

test('the transport: a 401 challenge, 405 for GET and DELETE, JSON-RPC errors for bad JSON-RPC, never a 500', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const auth = { authorization: `Bearer ${ada.token}` }
  const metadata = `resource_metadata="${server.origin}/.well-known/oauth-protected-resource/mcp"`
  const challenge = `Bearer realm="threadhouse", scope="threads:read threads:write", ${metadata}`
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  })

  const anonymous = await postMcp(server.origin, initialize)
  expect(anonymous.status).toBe(401)
  expect(anonymous.headers.get('www-authenticate')).toBe(challenge)
  expect(anonymous.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate')
  const forged = await postMcp(server.origin, initialize, { authorization: 'Bearer thp_forged' })
  expect(forged.status).toBe(401)
  expect(forged.headers.get('www-authenticate')).toBe(
    challenge.replace('realm="threadhouse"', 'realm="threadhouse", error="invalid_token"'),
  )

  for (const method of ['GET', 'DELETE']) {
    const response = await fetch(`${server.origin}/mcp`, {
      method,
      headers: { ...auth, accept: 'text/event-stream' },
    })
    expect({ status: response.status, allow: response.headers.get('allow') }).toEqual({ status: 405, allow: 'POST' })
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null })
  }
  const preflight = await fetch(`${server.origin}/mcp`, { method: 'OPTIONS' })
  expect(preflight.status).toBe(204)
  expect(preflight.headers.get('access-control-allow-headers')).toContain('Mcp-Protocol-Version')

  const rpcError = async (response: Response) => ({ status: response.status, body: (await response.json()) as Json })
  expect(await rpcError(await postMcp(server.origin, '{"jsonrpc":', auth))).toMatchObject({
    status: 400,
    body: { error: { code: -32700 }, id: null },
  })
  expect(await rpcError(await postMcp(server.origin, '{"hello":"world"}', auth))).toMatchObject({
    status: 400,
    body: { error: { code: -32700 } },
  })
  const tooDeep = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_threads","arguments":{"x":${'['.repeat(200_000)}${']'.repeat(200_000)}}}}`
  expect(await rpcError(await postMcp(server.origin, tooDeep, auth))).toMatchObject({
    status: 400,
    body: { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is nested too deep' }, id: null },
  })
  // No batches since protocol 2025-06-18: an array, even empty, is refused before any message in it is handled.
  const list = { jsonrpc: '2.0', method: 'tools/list' }
  for (const batch of [
    [],
    [
      { ...list, id: 6 },
      { ...list, id: 7 },
    ],
  ]) {
    expect(await rpcError(await postMcp(server.origin, JSON.stringify(batch), auth))).toEqual({
      status: 400,
      body: {
        jsonrpc: '2.0',
        error: { code: -32600, message: 'Invalid Request: batches are not supported' },
        id: null,
      },
    })
  }
  const hugeBody = `{"pad":"${'a'.repeat(5 * 1024 * 1024)}"}`
  const huge = await rpcError(await postMcp(server.origin, hugeBody, auth))
  expect(huge).toMatchObject({ status: 413, body: { jsonrpc: '2.0', error: { code: -32600 }, id: null } })
  expect(huge.body.error.message).toStartWith('Invalid Request: Request bodies are limited to')
  // What the transport refuses by its headers is refused before the body is read: 406 and 415, not 413.
  expect(await rpcError(await postMcp(server.origin, hugeBody, { ...auth, accept: 'application/json' }))).toEqual({
    status: 406,
    body: {
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message: 'Not Acceptable: Client must accept both application/json and text/event-stream',
      },
      id: null,
    },
  })
  const asText = await postMcp(server.origin, hugeBody, { ...auth, 'content-type': 'text/plain' })
  expect(asText.headers.get('access-control-allow-origin')).toBe('*')
  expect(await rpcError(asText)).toMatchObject({ status: 415, body: { error: { code: -32000 }, id: null } })

  // A well-formed request for something that does not exist is answered in JSON-RPC, on the event stream.
  const unknown = await postMcp(server.origin, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'no/such' }), auth)
  expect(unknown.status).toBe(200)
  expect(await unknown.text()).toContain('"code":-32601')
  const badArguments = await postMcp(
    server.origin,
    JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get_thread', arguments: {} } }),
    auth,
  )
  expect(await badArguments.text()).toContain('Input validation error')
  const oldVersion = await postMcp(server.origin, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }), {
    ...auth,
    'mcp-protocol-version': '1999-01-01',
  })
  expect(oldVersion.status).toBe(400)
  await oldVersion.arrayBuffer()
})

test('a message’s cost is judged before the SDK reads it: its values, its bytes besides a file, its params', async () => {
  await using server = await startServer()
  const ada = await server.member()
  const auth = { authorization: `Bearer ${ada.token}` }
  const rpcError = async (response: Response) => ({ status: response.status, body: (await response.json()) as Json })
  /** The one JSON-RPC message of an event-stream answer. */
  const answerOf = async (response: Response): Promise<Json> => {
    expect(response.status).toBe(200)
    for await (const event of parseEvents(response)) return JSON.parse(event.data)
  }
  const list = (params: string) => `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{${params}}}`
  const keys = (count: number) => Array.from({ length: count }, (_, i) => `"k${i}":0`).join(',')

  // Issue 33's body: 330,000 keys in 3.85 MB, under the bound on bytes, cost seconds of the SDK's validation.
  const wide = list(keys(330_000))
  expect(wide.length).toBeLessThan(maxMcpBodyBytes)
  expect(await rpcError(await postMcp(server.origin, wide, auth))).toEqual({
    status: 400,
    body: {
      jsonrpc: '2.0',
      error: {
        code: -32700,
        message: 'Parse error: the body holds more than 2000 values (array elements and object members)',
      },
      id: null,
    },
  })
  // Every array element and object member counts, the message's own four included, however they nest.
  expect((await answerOf(await postMcp(server.origin, list(keys(1996)), auth))).result.tools).toHaveLength(11)
  expect((await rpcError(await postMcp(server.origin, list(keys(1997)), auth))).status).toBe(400)
  const nested = list(`"a":[${'[0],'.repeat(998)}[0]]`)
  expect((await rpcError(await postMcp(server.origin, nested, auth))).status).toBe(400)

  // Megabytes only for a file in base64: every other message is held to the API's 1 MiB.
  const overBound = {
    status: 413,
    body: {
      jsonrpc: '2.0',
      error: {
        code: -32600,
        message:
          'Invalid Request: a message may hold at most 1048576 bytes besides the file of an upload_attachment call',
      },
      id: null,
    },
  }
  const padded = list(`"pad":"${'a'.repeat(1024 * 1024)}"`)
  expect(await rpcError(await postMcp(server.origin, padded, auth))).toEqual(overBound)
  const upload = (args: Record<string, string>) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'upload_attachment', arguments: args },
    })
  const thread_id = crypto.randomUUID()
  const file = await answerOf(
    await postMcp(
      server.origin,
      upload({ thread_id, filename: 'a.txt', content_base64: 'QUFB'.repeat(768 * 1024) }),
      auth,
    ),
  )
  expect(file.result).toMatchObject({ isError: true, content: [{ text: 'Thread not found' }] })
  const besides = upload({ thread_id, filename: 'a.txt', content_base64: 'QUFB', media_type: 'a'.repeat(1024 * 1024) })
  expect(await rpcError(await postMcp(server.origin, besides, auth))).toEqual(overBound)

  // Params the method does not take: -32602 with the first issue, answering the request, not an internal error.
  const call = (id: number, params: unknown) =>
    postMcp(server.origin, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }), auth)
  expect(await answerOf(await call(3, { name: 'list_threads', arguments: [] }))).toEqual({
    jsonrpc: '2.0',
    id: 3,
    error: { code: -32602, message: 'Invalid params: arguments: Invalid input: expected record, received array' },
  })
  expect(await answerOf(await call(4, { name: 5 }))).toEqual({
    jsonrpc: '2.0',
    id: 4,
    error: { code: -32602, message: 'Invalid params: name: Invalid input: expected string, received number' },
  })
  const badCursor = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { cursor: [] } })
  expect((await answerOf(await postMcp(server.origin, badCursor, auth))).error.code).toBe(-32602)
})

test('MCP requests count against the token’s rate limit and mark the token used', async () => {
  await using server = await startServer({ config: { RATE_LIMIT_API_PER_MINUTE: 2 } })
  const ada = await server.member()
  const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  const auth = { authorization: `Bearer ${ada.token}` }
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    const response = await postMcp(server.origin, list, auth)
    statuses.push(response.status)
    if (response.status === 429) expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
    await response.arrayBuffer()
  }
  expect(statuses).toEqual([200, 200, 429])
  const [token] = server.db
    .select({ lastUsedAt: personalAccessTokens.lastUsedAt })
    .from(personalAccessTokens)
    .where(eq(personalAccessTokens.userId, ada.id))
    .all()
  expect(token?.lastUsedAt).toBeNumber()
})

test('a wait the stream limit refuses still reports the message it sent, as processing', async () => {
  await using server = await startServer({ config: { STREAM_LIMIT_PER_USER: 1 } })
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const first = await ok(client, 'create_thread', {})
  const second = await ok(client, 'create_thread', {})
  // The one stream Ada may hold is taken by this wait.
  const waiting = client.callTool({ name: 'send_message', arguments: { thread_id: first.thread_id, text: 'Long' } })
  const job = await server.runner.next()
  const { hub } = server.app.decorator.engine
  await until(() => hub.listenerCount(job.messageId) === 1)

  const sent = await ok(client, 'send_message', { thread_id: second.thread_id, text: 'Another' })
  const queued = await server.runner.next()
  expect(sent).toEqual({
    thread_id: second.thread_id,
    message_id: queued.messageId,
    status: 'processing',
    messages: [],
    app_url: `${server.origin}/threads/${second.thread_id}`,
  })
  const created = await ok(client, 'create_thread', { text: 'Third' })
  const third = await server.runner.next()
  expect(created).toMatchObject({ message_id: third.messageId, answer: { status: 'processing', messages: [] } })
  expect(hub.listenerCount(queued.messageId)).toBe(0)

  job.handlers.done()
  expect((await waiting).structuredContent).toMatchObject({ status: 'complete' })
  // A wait of 0 answers at once.
  queued.handlers.token('Done.')
  queued.handlers.done()
  expect(await ok(client, 'send_message', { thread_id: first.thread_id, text: 'Now', wait_seconds: 0 })).toMatchObject({
    status: 'processing',
  })
  const now = await server.runner.next()
  expect(hub.listenerCount(now.messageId)).toBe(0)
  now.handlers.done()
  third.handlers.done()
})

test('with CORS_ORIGINS set, a preflight to /mcp allows the MCP transport’s headers', async () => {
  await using server = await startServer({ config: { CORS_ORIGINS: 'https://app.example' } })
  const preflight = await fetch(`${server.origin}/mcp`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, mcp-protocol-version, mcp-session-id',
    },
  })
  expect(preflight.status).toBe(204)
  expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example')
  const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/)
  expect(allowed).toEqual(expect.arrayContaining(['mcp-protocol-version', 'mcp-session-id', 'last-event-id']))
  const exposed = (preflight.headers.get('access-control-expose-headers') ?? '').toLowerCase()
  expect(exposed).toContain('mcp-session-id')
})

test('/mcp/ is /mcp: the same tools, the same bound on bodies, the same rate limit', async () => {
  await using server = await startServer({ config: { RATE_LIMIT_API_PER_MINUTE: 2 } })
  const ada = await server.member()
  const auth = { authorization: `Bearer ${ada.token}` }
  const slash = `${server.origin}/mcp/`
  const headers = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const list = await fetch(slash, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  expect(list.status).toBe(200)
  expect(await list.text()).toContain('"search_threads"')
  // Larger than the API's 1 MiB only for an upload_attachment call's file, in JSON-RPC.
  const large = await fetch(slash, { method: 'POST', headers, body: `{"pad":"${'a'.repeat(2 * 1024 * 1024)}"}` })
  expect(large.status).toBe(413)
  expect(await large.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } })
  const third = await fetch(slash, { method: 'POST', headers, body: '{}' })
  expect(third.status).toBe(429)
  await third.arrayBuffer()
})

test('a reply whose client stops reading is cut off once its backlog passes the bound, and its wait ends', async () => {
  await using server = await startServer({ config: { STREAM_BACKLOG_BYTES: 64 * 1024 } })
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const created = await ok(client, 'create_thread', { name: 'Long answer' })
  const call = {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'send_message',
      arguments: { thread_id: created.thread_id, text: 'Write at length' },
      _meta: { progressToken: 'p' },
    },
  }
  const headers = {
    authorization: `Bearer ${ada.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  using stalled = stalledClient(Number(new URL(server.origin).port), '/mcp', headers, JSON.stringify(call))
  const job = await server.runner.next()
  const hub = server.app.decorator.engine.hub
  await until(() => hub.listenerCount(job.messageId) === 1)
  // Each 64 kB token is a progress notification; once the kernel's buffers are full, they wait in the server.
  for (let i = 0; i < 300 && stalled.open(); i++) {
    job.handlers.token(`${i} `.padEnd(64 * 1024, 'x'))
    await new Promise((resolve) => setImmediate(resolve))
  }
  expect(stalled.open()).toBe(false)
  expect(await stalled.closed).toEqual({ reset: true })
  // The tool's wait ended with the connection: it no longer listens to the answer, which goes on.
  await until(() => hub.listenerCount(job.messageId) === 0)
  job.handlers.token('end')
  job.handlers.done()
  const answer = await ok(client, 'get_response', { thread_id: created.thread_id, message_id: job.messageId })
  expect(answer.status).toBe('complete')
})

test('list_models, a thread’s model from create_thread and send_message, and get_thread naming it', async () => {
  const models = loadCatalogue(
    loadConfig({
      LLM_MODELS: JSON.stringify([
        { id: 'echo-a', name: 'Echo A', provider: 'echo' },
        { id: 'echo-b', name: 'Echo B', provider: 'echo', default: true },
      ]),
    }),
    {},
  )
  await using server = await startServer({ models })
  const ada = await server.member({ scopes: [] })
  await using reader = await connect(server.origin, ada.token)
  // Any valid token lists them, as GET /api/v1/models.
  expect((await ok(reader, 'list_models', {})).data).toEqual([
    { id: 'echo-a', name: 'Echo A', provider: 'echo', context_tokens: 100_000, default: false },
    { id: 'echo-b', name: 'Echo B', provider: 'echo', context_tokens: 100_000, default: true },
  ])

  const bea = await server.member()
  await using client = await connect(server.origin, bea.token)
  // A model the organization does not have is refused before anything is made.
  expect(await refused(client, 'create_thread', { text: 'Hello', model: 'gpt-9' })).toContain('list_models')
  expect(await ok(client, 'list_threads', {})).toMatchObject({ data: [] })

  const creating = ok(client, 'create_thread', { text: 'Plan a weekend in Lyon', model: 'echo-a' })
  const first = await server.runner.next()
  expect(first.model).toBe('echo-a')
  first.handlers.token('Two days.')
  first.handlers.done()
  const created = await creating
  // Named after its first message, as a thread started with text is.
  expect(created.thread).toMatchObject({ name: 'Plan a weekend in Lyon', state: 'ready' })
  expect(created.answer).toMatchObject({ status: 'complete' })
  expect((await ok(client, 'get_thread', { thread_id: created.thread_id })).model).toEqual({
    id: 'echo-a',
    name: 'Echo A',
  })

  // send_message's model is the thread's from that message on.
  const sending = ok(client, 'send_message', { thread_id: created.thread_id, text: 'And Annecy?', model: 'echo-b' })
  const second = await server.runner.next()
  expect(second.model).toBe('echo-b')
  second.handlers.done()
  await sending
  expect((await ok(client, 'get_thread', { thread_id: created.thread_id })).model).toEqual({
    id: 'echo-b',
    name: 'Echo B',
  })
  expect(
    await refused(client, 'send_message', { thread_id: created.thread_id, text: 'And Dijon?', model: 'gpt-9' }),
  ).toContain('list_models')
  // A message the thread refuses (a file that is not the thread's) leaves the thread's model as it was.
  const unknownFile = '01a2b3c4-0000-7000-8000-000000000000'
  expect(
    await refused(client, 'send_message', {
      thread_id: created.thread_id,
      text: 'And Dijon?',
      attachment_ids: [unknownFile],
      model: 'echo-a',
    }),
  ).toContain('Unknown attachment')
  expect((await ok(client, 'get_thread', { thread_id: created.thread_id })).model.id).toBe('echo-b')

  // A thread without a model of its own says the organization's default.
  const plain = await ok(client, 'create_thread', { name: 'Plain' })
  expect((await ok(client, 'get_thread', { thread_id: plain.thread_id })).model).toEqual({
    id: 'echo-b',
    name: 'Echo B',
  })
})

test('regenerate_response writes a failed answer again, with another model once, and the thread goes on', async () => {
  const models = loadCatalogue(
    loadConfig({
      LLM_MODELS: JSON.stringify([
        { id: 'echo-a', name: 'Echo A', provider: 'echo', default: true },
        { id: 'echo-b', name: 'Echo B', provider: 'echo' },
      ]),
    }),
    {},
  )
  await using server = await startServer({ models })
  const ada = await server.member()
  await using client = await connect(server.origin, ada.token)
  const creating = ok(client, 'create_thread', { text: 'Plan a weekend in Lyon' })
  const failing = await server.runner.next()
  failing.handlers.error('The AI provider is unavailable')
  const created = await creating
  expect(created.answer).toMatchObject({ status: 'error' })
  expect(created.thread.state).toBe('error')
  // A thread in error refuses a message, as the API does; regenerating is how it goes on.
  expect(await refused(client, 'send_message', { thread_id: created.thread_id, text: 'Hello?' })).toContain('error')

  const regenerating = ok(client, 'regenerate_response', {
    thread_id: created.thread_id,
    message_id: created.message_id,
    model: 'echo-b',
  })
  const again = await server.runner.next()
  expect(again.messageId).toBe(created.message_id)
  expect(again.model).toBe('echo-b')
  again.handlers.token('Two days by the Saône.')
  again.handlers.done()
  expect(await regenerating).toMatchObject({
    message_id: created.message_id,
    status: 'complete',
    messages: [{ role: 'assistant', contents: [{ type: 'text', text: 'Two days by the Saône.' }] }],
  })
  const read = await ok(client, 'get_thread', { thread_id: created.thread_id })
  expect(read.thread.state).toBe('ready')
  expect(read.messages.data.map((message: Json) => message.role)).toEqual(['user', 'assistant'])
  // The model was for that answer only: the thread's next one is the organization's default again.
  expect(read.model).toEqual({ id: 'echo-a', name: 'Echo A' })

  // An answer is not a message to regenerate; a model the organization lacks is refused.
  const answerId = read.messages.data[1].id
  expect(
    await refused(client, 'regenerate_response', { thread_id: created.thread_id, message_id: answerId }),
  ).toContain('user message')
  expect(
    await refused(client, 'regenerate_response', {
      thread_id: created.thread_id,
      message_id: created.message_id,
      model: 'gpt-9',
    }),
  ).toContain('gpt-9')
})
