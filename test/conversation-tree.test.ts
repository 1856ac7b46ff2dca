// Conversation control, the tree (issue 36): regenerate, edit, versions, activate and details over the API, on both
// backends. Messages form a tree; GET …/messages lists the active path with the specification's objects; the
// state machine takes regenerations and edits in `ready` and `error` only, and the poll and stream of a user message
// follow its current answer.
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import {
  collect,
  type Harness,
  harness,
  listening,
  ManualClock,
  openStream,
  parseEvents,
  ScriptedRunner,
  type TestUser,
  tokensOf,
  until,
} from './support/helpers'

type Message = { id: string; role: string; contents: { type: string; text?: string }[] }

const base = (threadId: string) => `/api/v1/threads/${threadId}`

async function listed(h: Harness, token: string, threadId: string): Promise<Message[]> {
  const reply = await h.call('GET', `${base(threadId)}/messages`, { token })
  expect(reply.status).toBe(200)
  return reply.body.data
}

const ids = (messages: Message[]) => messages.map((message) => message.id)
const texts = (messages: Message[]) => messages.map((message) => message.contents[0]?.text ?? '')

/** A thread with its first question answered by the echo responder; returns its IDs. */
async function answered(h: Harness, owner: TestUser, text = 'first') {
  const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text } })
  expect(created.status).toBe(201)
  await h.app.decorator.engine.idle()
  return { threadId: created.body.thread_id as string, messageId: created.body.message_id as string }
}

async function send(h: Harness, owner: TestUser, threadId: string, text: string): Promise<string> {
  const sent = await h.call('POST', `${base(threadId)}/messages`, { token: owner.token, body: { text } })
  expect(sent.status).toBe(201)
  return sent.body.message_id
}

const regenerate = (h: Harness, token: string, threadId: string, messageId: string, body?: unknown) =>
  h.call('POST', `${base(threadId)}/messages/${messageId}/regenerate`, { token, body })
const edit = (h: Harness, token: string, threadId: string, messageId: string, text: string) =>
  h.call('POST', `${base(threadId)}/messages/${messageId}/edit`, { token, body: { text } })
const activate = (h: Harness, token: string, threadId: string, messageId: string) =>
  h.call('POST', `${base(threadId)}/messages/${messageId}/activate`, { token })
const versions = (h: Harness, token: string, threadId: string, messageId: string) =>
  h.call('GET', `${base(threadId)}/messages/${messageId}/versions`, { token })
const details = (h: Harness, token: string, threadId: string, messageId: string) =>
  h.call('GET', `${base(threadId)}/messages/${messageId}/details`, { token })
const stateOf = async (h: Harness, token: string, threadId: string) =>
  (await h.call('GET', base(threadId), { token })).body.state

describe.concurrent('the tree', () => {
  test('regenerate: a new answer is active, the earlier one a version; versions and details say so', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner)
    const [, first] = await listed(h, owner.token, threadId)
    const again = await regenerate(h, owner.token, threadId, messageId)
    expect(again).toMatchObject({ status: 201, body: { message_id: messageId } })
    await h.app.decorator.engine.idle()
    const now = await listed(h, owner.token, threadId)
    expect(now).toHaveLength(2)
    expect(now[0]?.id).toBe(messageId)
    const second = now[1] as Message
    expect(second.id).not.toBe(first?.id)
    // The API's Message object keeps exactly its fields.
    expect(Object.keys(second).sort()).toEqual(['app_url', 'contents', 'created_at', 'id', 'role', 'thread_id'])

    const listedVersions = await versions(h, owner.token, threadId, second.id)
    expect(listedVersions.status).toBe(200)
    expect(listedVersions.body).toEqual({
      data: [first, second],
      first_id: first?.id,
      last_id: second.id,
      has_more: false,
      active_id: second.id,
    })
    expect((await details(h, owner.token, threadId, first?.id as string)).body).toEqual({
      id: first?.id,
      parent_id: messageId,
      role: 'assistant',
      // The model that wrote it: the echo responder, the test server's one model.
      model: 'echo',
      version: 1,
      versions: 2,
      active: false,
      // What it used (issue 37): the echo responder's counts are estimated; no price, no cost.
      usage: expect.objectContaining({ estimated: true, cost: null, currency: null }),
      // The tools it called (issue 38): none.
      tool_calls: [],
    })
    expect((await details(h, owner.token, threadId, messageId)).body).toEqual({
      id: messageId,
      parent_id: null,
      role: 'user',
      model: null,
      version: 1,
      versions: 1,
      active: true,
    })
    // The poll gives the current answer only.
    const poll = await h.call('GET', `${base(threadId)}/messages/${messageId}/response`, { token: owner.token })
    expect(poll.body).toEqual({ status: 'complete', messages: [second] })
    // Readers may look; only the owner may write.
    const member = await h.user()
    expect((await versions(h, member.token, threadId, messageId)).status).toBe(200)
    expect((await regenerate(h, member.token, threadId, messageId)).status).toBe(403)
    expect((await activate(h, member.token, threadId, first?.id as string)).status).toBe(403)
    const stranger = await h.user({ org: 'elsewhere' })
    expect((await versions(h, stranger.token, threadId, messageId)).status).toBe(404)
    expect((await details(h, owner.token, threadId, crypto.randomUUID())).status).toBe(404)
  })

  test('activate switches branches; edit after a regenerate; deep branches keep their descendants', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId: u1 } = await answered(h, owner, 'one')
    const u2 = await send(h, owner, threadId, 'two')
    await h.app.decorator.engine.idle()
    const original = await listed(h, owner.token, threadId)
    const [, a1, , a2] = ids(original) as [string, string, string, string]

    // Regenerating the first answer leaves the second turn off the path.
    expect((await regenerate(h, owner.token, threadId, u1)).status).toBe(201)
    await h.app.decorator.engine.idle()
    const regenerated = await listed(h, owner.token, threadId)
    expect(regenerated).toHaveLength(2)
    const a1b = regenerated[1]?.id as string

    // Back to the first answer: its branch comes back whole.
    expect((await activate(h, owner.token, threadId, a1 as string)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual(ids(original))
    // Activating what is shown changes nothing.
    expect((await activate(h, owner.token, threadId, a1 as string)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual(ids(original))

    // Edit the second question on that branch: a version beside it, answered.
    const edited = await edit(h, owner.token, threadId, u2, 'two, edited')
    expect(edited.status).toBe(201)
    const u2b = edited.body.message_id as string
    expect(u2b).not.toBe(u2)
    await h.app.decorator.engine.idle()
    const afterEdit = await listed(h, owner.token, threadId)
    expect(texts(afterEdit)).toEqual(['one', expect.any(String), 'two, edited', expect.stringContaining('two, edited')])
    expect(afterEdit[1]?.id).toBe(a1 as string)
    const questionVersions = await versions(h, owner.token, threadId, u2b)
    expect(ids(questionVersions.body.data)).toEqual([u2, u2b])
    expect(questionVersions.body.active_id).toBe(u2b)
    expect((await details(h, owner.token, threadId, u2b)).body).toMatchObject({
      parent_id: a1,
      version: 2,
      versions: 2,
      active: true,
    })
    // The edited message's poll follows its own answer; the first version's still has its old one.
    const editedPoll = await h.call('GET', `${base(threadId)}/messages/${u2b}/response`, { token: owner.token })
    expect(editedPoll.body.messages[0].id).toBe(afterEdit[3]?.id)

    // The first version of the question again: its answer follows it.
    expect((await activate(h, owner.token, threadId, u2)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual(ids(original))
    // The regenerated first answer again: a path of two.
    expect((await activate(h, owner.token, threadId, a1b)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual([u1, a1b])
    // The first question's edit at the root (no parent): a second root version.
    const root = await edit(h, owner.token, threadId, u1, 'one, again')
    await h.app.decorator.engine.idle()
    expect((await versions(h, owner.token, threadId, u1)).body.active_id).toBe(root.body.message_id)
    // The original root leads to its newest answer (the regenerated one), which has no follow-up.
    expect((await activate(h, owner.token, threadId, u1)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual([u1, a1b])
    // And from there, the deepest branch once more: the first answer, then each time the newest that follows it
    // (the edited question and its answer).
    expect((await activate(h, owner.token, threadId, a1 as string)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual(ids(afterEdit))
    expect((await activate(h, owner.token, threadId, u2)).status).toBe(204)
    expect(ids(await listed(h, owner.token, threadId))).toEqual([u1, a1, u2, a2])
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')

    // Only active messages may be regenerated or edited; assistants and summaries never.
    const inactive = await regenerate(h, owner.token, threadId, u2b)
    expect(inactive).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
    expect((await edit(h, owner.token, threadId, u2b, 'x')).status).toBe(400)
    expect((await regenerate(h, owner.token, threadId, a2 as string)).status).toBe(400)
    expect((await edit(h, owner.token, threadId, a2 as string, 'x')).status).toBe(400)
    expect((await regenerate(h, owner.token, threadId, crypto.randomUUID())).status).toBe(404)
    expect((await activate(h, owner.token, threadId, crypto.randomUUID())).status).toBe(404)
  })

  test('a deleted thread’s versions go with it', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner)
    await regenerate(h, owner.token, threadId, messageId)
    await h.app.decorator.engine.idle()
    const [, answer] = await listed(h, owner.token, threadId)
    expect((await h.call('DELETE', base(threadId), { token: owner.token })).status).toBe(204)
    expect((await versions(h, owner.token, threadId, answer?.id as string)).status).toBe(404)
    expect((await details(h, owner.token, threadId, messageId)).status).toBe(404)
    const { messages } = h.tables
    expect(await h.orm.select().from(messages).where(eq(messages.threadId, threadId))).toEqual([])
  })

  test('the JSON export holds every version with parent and model; Markdown the active path', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner, 'export me')
    const [, first] = await listed(h, owner.token, threadId)
    await regenerate(h, owner.token, threadId, messageId)
    await h.app.decorator.engine.idle()
    const active = await listed(h, owner.token, threadId)
    const json = await h.call('GET', `${base(threadId)}/export`, { token: owner.token })
    expect(json.status).toBe(200)
    expect(json.body.messages).toEqual([
      { ...active[0], parent_id: null, model: null },
      {
        ...active[1],
        parent_id: messageId,
        model: 'echo',
        usage: expect.objectContaining({ estimated: true }),
        tool_calls: [],
      },
    ])
    expect(json.body.other_messages).toEqual([
      {
        ...first,
        parent_id: messageId,
        model: 'echo',
        usage: expect.objectContaining({ estimated: true }),
        tool_calls: [],
      },
    ])
    const markdown = await h.call('GET', `${base(threadId)}/export?format=markdown`, { token: owner.token })
    expect((markdown.body as string).match(/## Assistant/g)).toHaveLength(1)
  })

  test('compaction: turns a summary replaced can be neither regenerated, edited nor activated', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'old' } })
    const threadId = created.body.thread_id as string
    const u1 = created.body.message_id as string
    ;(await runner.started(u1)).token('old answer')
    ;(await runner.started(u1)).done()
    await h.app.decorator.engine.idle()
    const [, a1] = ids(await listed(h, owner.token, threadId))
    const u2 = await send(h, owner, threadId, 'new')
    const job = await runner.started(u2)
    job.summary('They spoke of old things.', [u1, a1 as string])
    job.token('new answer')
    job.done()
    await h.app.decorator.engine.idle()
    const now = await listed(h, owner.token, threadId)
    expect(now.map((message) => message.role)).toEqual(['summary', 'user', 'assistant'])
    expect((await regenerate(h, owner.token, threadId, u1)).status).toBe(400)
    expect((await edit(h, owner.token, threadId, u1, 'x')).status).toBe(400)
    expect((await activate(h, owner.token, threadId, a1 as string)).status).toBe(400)
    expect((await activate(h, owner.token, threadId, now[0]?.id as string)).status).toBe(400)
    expect((await versions(h, owner.token, threadId, now[0]?.id as string)).body.data).toHaveLength(1)
    // The kept turn still regenerates, after the summary.
    runner.jobs.delete(u2)
    expect((await regenerate(h, owner.token, threadId, u2)).status).toBe(201)
    const again = await runner.started(u2)
    expect(again.token).toBeDefined()
    expect(runner.jobs.get(u2)?.history.map((message) => message.role)).toEqual(['summary', 'user'])
    again.token('newer answer')
    again.done()
    await h.app.decorator.engine.idle()
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['They spoke of old things.', 'new', 'newer answer'])
  })
})

describe.concurrent('the state machine', () => {
  test('regenerate is how a thread in error goes on; sending to it stays 409', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'boom' } })
    const { thread_id: threadId, message_id: messageId } = created.body
    const failing = await runner.started(messageId)
    failing.token('half')
    failing.error('The model is unavailable')
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('error')
    expect((await send409(h, owner, threadId)).status).toBe(409)

    runner.jobs.delete(messageId)
    expect((await regenerate(h, owner.token, threadId, messageId)).status).toBe(201)
    expect(['waiting', 'active']).toContain(await stateOf(h, owner.token, threadId))
    const retry = await runner.started(messageId)
    expect(await stateOf(h, owner.token, threadId)).toBe('active')
    // While it runs: every write to the tree is 409.
    expect((await regenerate(h, owner.token, threadId, messageId)).status).toBe(409)
    expect((await edit(h, owner.token, threadId, messageId, 'x')).status).toBe(409)
    const failed = (await versions(h, owner.token, threadId, messageId)).body
    expect(failed.data).toHaveLength(1)
    retry.token('whole answer')
    retry.done()
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
    const path = await listed(h, owner.token, threadId)
    expect(texts(path)).toEqual(['boom', 'whole answer'])
    const answerVersions = (await versions(h, owner.token, threadId, path[1]?.id as string)).body
    expect(texts(answerVersions.data)).toEqual(['half', 'whole answer'])

    // The partial answer stays a version; the run that wrote it is over, so showing it leaves the thread ready.
    expect((await activate(h, owner.token, threadId, answerVersions.first_id)).status).toBe(204)
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
  })

  test('switching away from a failed answer and back: ready on the other branch, error on the failed one', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'q1' } })
    const { thread_id: threadId, message_id: u1 } = created.body
    const firstJob = await runner.started(u1)
    firstJob.token('a1')
    firstJob.done()
    await h.app.decorator.engine.idle()
    const u2 = await send(h, owner, threadId, 'q2')
    const failing = await runner.started(u2)
    failing.token('half')
    failing.error('The model is unavailable')
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('error')
    // An edit of the first question is another way on from error.
    const edited = await edit(h, owner.token, threadId, u1, 'q1 again')
    expect(edited.status).toBe(201)
    ;(await runner.started(edited.body.message_id)).done()
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
    // Back to the branch whose last answer failed: error again, and sending there is refused.
    expect((await activate(h, owner.token, threadId, u1)).status).toBe(204)
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['q1', 'a1', 'q2', 'half'])
    expect(await stateOf(h, owner.token, threadId)).toBe('error')
    expect((await send409(h, owner, threadId)).status).toBe(409)
    expect((await activate(h, owner.token, threadId, edited.body.message_id)).status).toBe(204)
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
  })

  test('a regenerate that fails writes nothing or half: the earlier answer can be brought back, complete', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'q' } })
    const { thread_id: threadId, message_id: question } = created.body
    const first = await runner.started(question)
    first.token('a1')
    first.done()
    await h.app.decorator.engine.idle()
    const [, a1] = await listed(h, owner.token, threadId)
    const poll = `${base(threadId)}/messages/${question}/response`

    // The provider is down: the new answer writes nothing, and the path ends at the question.
    runner.jobs.delete(question)
    expect((await regenerate(h, owner.token, threadId, question)).status).toBe(201)
    ;(await runner.started(question)).error('The model is unavailable')
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('error')
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['q'])
    // The good answer comes back, and the poll and the stream say it is complete.
    expect((await activate(h, owner.token, threadId, a1?.id as string)).status).toBe(204)
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['q', 'a1'])
    expect((await h.call('GET', poll, { token: owner.token })).body).toMatchObject({
      status: 'complete',
      messages: [{ id: a1?.id }],
    })

    // It fails again, having written half an answer: that half is a version, and a1 comes back complete again.
    runner.jobs.delete(question)
    expect((await regenerate(h, owner.token, threadId, question)).status).toBe(201)
    const half = await runner.started(question)
    half.token('half')
    half.error('The model is unavailable')
    await h.app.decorator.engine.idle()
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['q', 'half'])
    expect((await activate(h, owner.token, threadId, a1?.id as string)).status).toBe(204)
    expect((await h.call('GET', poll, { token: owner.token })).body).toMatchObject({
      status: 'complete',
      messages: [{ id: a1?.id }],
    })
    const events = await collect((await openStream(h, `${poll}/stream`, owner.token)).events)
    expect(tokensOf(events)).toBe('a1')
    expect(events.at(-1)?.event).toBe('done')
  })

  test('a regenerate while the earlier answer is still being stored: streams hear the new one, and a stop stops it', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    // Holds the reactions to an answer's end (webhooks) open: the answer is committed, its listeners not yet told.
    let release: () => void = () => {}
    let holding = false
    h.app.decorator.events.on('answer.stored', () =>
      holding ? new Promise<void>((resolve) => (release = resolve)) : undefined,
    )
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'q' } })
    const { thread_id: threadId, message_id: question } = created.body
    const path = `${base(threadId)}/messages/${question}/response`
    const first = await runner.started(question)
    first.token('old answer')
    holding = true
    first.done()
    await until(async () => (await stateOf(h, owner.token, threadId)) === 'ready')

    runner.jobs.delete(question)
    expect((await regenerate(h, owner.token, threadId, question)).status).toBe(201)
    // A stream opened now follows the new answer, not the one still being told.
    const stream = await openStream(h, `${path}/stream`, owner.token)
    holding = false
    release()
    const second = await runner.started(question)
    second.token('new answer')
    second.done()
    const events = await collect(stream.events)
    expect(tokensOf(events)).toBe('new answer')
    expect(events.at(-1)?.event).toBe('done')
    await h.app.decorator.engine.idle()

    // Again, and this time a stop comes while the earlier answer is still being told: 202, and the new one never runs.
    runner.jobs.delete(question)
    expect((await regenerate(h, owner.token, threadId, question)).status).toBe(201)
    const third = await runner.started(question)
    third.token('third answer')
    holding = true
    third.done()
    await until(async () => (await stateOf(h, owner.token, threadId)) === 'ready')
    runner.jobs.delete(question)
    expect((await regenerate(h, owner.token, threadId, question)).status).toBe(201)
    const stopped = h.call('POST', `${base(threadId)}/stop`, { token: owner.token })
    holding = false
    release()
    expect((await stopped).status).toBe(202)
    await h.app.decorator.engine.idle()
    expect(runner.jobs.has(question)).toBe(false)
    expect((await h.call('GET', path, { token: owner.token })).body.status).toBe('interrupted')
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
    expect(texts(await listed(h, owner.token, threadId))).toEqual(['q'])
  })

  test('409 while waiting or active for regenerate, edit and activate; from ready the answer runs again', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner, config: { GENERATION_CONCURRENCY: 1 } })
    const owner = await h.user()
    // A thread whose answer holds the only place, and one that waits behind it.
    const busy = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'busy' } })).body
    const blocking = await runner.started(busy.message_id)
    const first = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'w' } })).body
    expect(await stateOf(h, owner.token, first.thread_id)).toBe('waiting')
    for (const thread of [busy, first]) {
      expect((await regenerate(h, owner.token, thread.thread_id, thread.message_id)).status).toBe(409)
      expect((await edit(h, owner.token, thread.thread_id, thread.message_id, 'x')).status).toBe(409)
      const refused = await activate(h, owner.token, thread.thread_id, thread.message_id)
      expect(refused).toMatchObject({ status: 409, body: { error: 'conflict' } })
    }
    blocking.done()
    ;(await runner.started(first.message_id)).done()
    await h.app.decorator.engine.idle()
    runner.jobs.delete(busy.message_id)
    expect((await regenerate(h, owner.token, busy.thread_id, busy.message_id)).status).toBe(201)
    ;(await runner.started(busy.message_id)).done()
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, busy.thread_id)).toBe('ready')
  })

  test('a regenerate, an edit and sends racing on a ready thread: exactly one wins', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id: threadId, message_id: messageId } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'race' } })
    ).body
    ;(await runner.started(messageId)).done()
    await h.app.decorator.engine.idle()
    runner.jobs.delete(messageId)
    const replies = await Promise.all([
      regenerate(h, owner.token, threadId, messageId),
      h.call('POST', `${base(threadId)}/messages`, { token: owner.token, body: { text: 'a' } }),
      edit(h, owner.token, threadId, messageId, 'b'),
      h.call('POST', `${base(threadId)}/messages`, { token: owner.token, body: { text: 'c' } }),
      regenerate(h, owner.token, threadId, messageId),
    ])
    expect(replies.map((reply) => reply.status).sort()).toEqual([201, 409, 409, 409, 409])
    const winner = replies.find((reply) => reply.status === 201)
    ;(await runner.started(winner?.body.message_id)).done()
    await h.app.decorator.engine.idle()
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
  })

  test('a regenerate’s model must be one the organization may use', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner)
    const refused = await regenerate(h, owner.token, threadId, messageId, { model: 'gpt-none' })
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
    expect((await regenerate(h, owner.token, threadId, messageId, { other: 1 })).status).toBe(400)
    expect((await regenerate(h, owner.token, threadId, messageId, { model: 'echo' })).status).toBe(201)
    await h.app.decorator.engine.idle()
    const [row] = await h.orm
      .select({ model: h.tables.generations.model })
      .from(h.tables.generations)
      .where(eq(h.tables.generations.messageId, messageId))
    expect(row?.model).toBe('echo')
  })
})

/** A send to the thread, for 409 checks. */
const send409 = (h: Harness, owner: TestUser, threadId: string) =>
  h.call('POST', `${base(threadId)}/messages`, { token: owner.token, body: { text: 'x' } })

describe.concurrent('following the new answer', () => {
  test('the poll and the stream of the user message follow the regenerated answer', async () => {
    const runner = new ScriptedRunner()
    await using h = await harness({ runner })
    const owner = await h.user()
    const { thread_id: threadId, message_id: messageId } = (
      await h.call('POST', '/api/v1/threads', { token: owner.token, body: { text: 'tell me' } })
    ).body
    const first = await runner.started(messageId)
    first.token('first answer')
    first.done()
    await h.app.decorator.engine.idle()
    runner.jobs.delete(messageId)
    expect((await regenerate(h, owner.token, threadId, messageId)).status).toBe(201)
    const path = `${base(threadId)}/messages/${messageId}/response`
    expect((await h.call('GET', path, { token: owner.token })).status).toBe(202)
    const stream = await openStream(h, `${path}/stream`, owner.token)
    const job = await runner.started(messageId)
    job.token('second ')
    job.token('answer')
    job.done()
    const events = await collect(stream.events)
    expect(tokensOf(events)).toBe('second answer')
    expect(events.at(-1)?.event).toBe('done')
    const poll = await h.call('GET', path, { token: owner.token })
    expect(poll.body).toMatchObject({ status: 'complete', messages: [{ contents: [{ text: 'second answer' }] }] })
    expect(poll.body.messages).toHaveLength(1)
    // Replayed after its end: the new answer's text.
    expect(tokensOf(await collect((await openStream(h, `${path}/stream`, owner.token)).events))).toBe('second answer')
  })

  test('regenerate, edit and activate move updated_at, and the change feed says thread.updated', async () => {
    const clock = new ManualClock()
    await using h = await harness({ clock, feedPollMs: null })
    await using server = listening(h)
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner)
    const [, first] = await listed(h, owner.token, threadId)
    const updatedAt = async () => (await h.call('GET', base(threadId), { token: owner.token })).body.updated_at
    const controller = new AbortController()
    const feed = parseEvents(
      await fetch(new URL('/api/v1/threads/events', server.url), {
        headers: { authorization: `Bearer ${owner.token}` },
        signal: controller.signal,
      }),
    )
    expect((await feed.next()).value?.event).toBe('ready')
    const writes = [
      () => regenerate(h, owner.token, threadId, messageId),
      () => activate(h, owner.token, threadId, first?.id as string),
      () => edit(h, owner.token, threadId, messageId, 'edited'),
    ]
    for (const write of writes) {
      const before = await updatedAt()
      clock.advance(1000)
      expect((await write()).status).toBeLessThan(300)
      await h.app.decorator.engine.idle()
      expect(Date.parse(await updatedAt())).toBeGreaterThan(Date.parse(before))
      await h.app.decorator.feed.poll()
      const event = (await feed.next()).value
      expect(event?.event).toBe('thread.updated')
      expect(JSON.parse(event?.data as string)).toMatchObject({ id: threadId, state: 'ready' })
    }
    controller.abort()
    await feed.return(undefined).catch(() => {})
  })

  test('Idempotency-Key: a repeated regenerate or edit is replayed, and makes no second answer', async () => {
    await using h = await harness()
    const owner = await h.user()
    const { threadId, messageId } = await answered(h, owner)
    const once = async (path: string, body: unknown, key: string) =>
      h.call('POST', path, { token: owner.token, body, headers: { 'idempotency-key': key } })
    const regeneratePath = `${base(threadId)}/messages/${messageId}/regenerate`
    const first = await once(regeneratePath, {}, 'regen-1')
    expect(first.status).toBe(201)
    await h.app.decorator.engine.idle()
    const repeat = await once(regeneratePath, {}, 'regen-1')
    expect(repeat).toMatchObject({ status: 201, body: first.body })
    expect(repeat.headers.get('idempotent-replayed')).toBe('true')
    expect(await stateOf(h, owner.token, threadId)).toBe('ready')
    const [, answer] = await listed(h, owner.token, threadId)
    expect((await versions(h, owner.token, threadId, answer?.id as string)).body.data).toHaveLength(2)
    expect((await once(regeneratePath, { model: 'echo' }, 'regen-1')).status).toBe(422)

    const editPath = `${base(threadId)}/messages/${messageId}/edit`
    const edited = await once(editPath, { text: 'again' }, 'edit-1')
    expect(edited.status).toBe(201)
    await h.app.decorator.engine.idle()
    const replayed = await once(editPath, { text: 'again' }, 'edit-1')
    expect(replayed).toMatchObject({ status: 201, body: edited.body })
    expect((await versions(h, owner.token, threadId, messageId)).body.data).toHaveLength(2)
    // A write refused for its state frees its key: the same request runs once the thread is ready.
    expect((await once(regeneratePath, {}, 'regen-2')).status).toBe(400)
  })
})
