// What the tools did in answers (generation/tool-calls.repository.ts) and how an answer's end and history carry it,
// on the contract itself: the engine that drives these in order comes later, so the races and fences are checked
// here, where a test can make them happen.
import { expect, test } from 'bun:test'
import { count, eq } from 'drizzle-orm'
import type { PgDb } from '../src/db/postgres'
import type { Fence, ToolCallRecord, ToolRoundRecord } from '../src/generation/tool-calls.repository'
import { approvalAnswer } from '../src/generation/tools'
import type { ThreadsModel } from '../src/threads/model'
import { onPostgres } from './support/backend'
import { harness, until } from './support/helpers'

const text = (value: string): ThreadsModel.contentBlock => ({ type: 'text', text: value })

async function thread() {
  const h = await harness()
  const owner = await h.user()
  const { thread_id: threadId } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  const { generations, messages, threads } = h.tables
  /** A user message with its answer queued, as a send stores them. */
  const ask = async (words: string, at: number) => {
    const messageId = Bun.randomUUIDv7()
    await h.orm
      .insert(messages)
      .values({ id: messageId, threadId, role: 'user', contents: [text(words)], text: words, createdAt: at })
    await h.orm.insert(generations).values({ messageId, threadId, status: 'queued', attempts: 0, createdAt: at })
    await h.orm.update(threads).set({ state: 'waiting' }).where(eq(threads.id, threadId))
    return { messageId, threadId }
  }
  return {
    h,
    owner,
    threadId,
    ask,
    calls: h.store.toolCalls,
    generations: h.store.generations,
    answerTo: async (questionId: string) =>
      (
        await h.orm
          .select({ id: messages.id, contents: messages.contents })
          .from(messages)
          .where(eq(messages.replyTo, questionId))
      )[0],
    [Symbol.asyncDispose]: () => h[Symbol.asyncDispose](),
  }
}

function round(fence: Fence & { threadId: string }, chainId: string, number: number, at: number): ToolRoundRecord {
  return {
    chainId,
    round: number,
    runId: fence.lease,
    questionId: fence.questionId,
    threadId: fence.threadId,
    text: `Round ${number}: let me look.`,
    usage: { inputTokens: 120 * number, outputTokens: 8, cachedInputTokens: 0 },
    createdAt: at,
  }
}

function call(
  fence: Fence & { threadId: string },
  chainId: string,
  at: { round: number; position: number; time: number },
  more: Partial<ToolCallRecord> = {},
): Omit<ToolCallRecord, 'answerId'> {
  return {
    id: Bun.randomUUIDv7(),
    threadId: fence.threadId,
    chainId,
    round: at.round,
    position: at.position,
    runId: fence.lease,
    toolUseId: `call_${at.round}_${at.position}`,
    modelName: 'docs__search_docs',
    serverId: 'server-1',
    serverName: 'docs',
    toolName: 'search_docs',
    arguments: '{"q":"leases"}',
    status: 'running',
    result: null,
    resultChars: null,
    error: null,
    approvalId: null,
    decidedBy: null,
    decidedAt: null,
    startedAt: at.time,
    finishedAt: null,
    durationMs: null,
    ...more,
  }
}

const ok = (result: string) => ({
  status: 'ok' as const,
  result,
  resultChars: result.length,
  error: null,
  durationMs: 40,
})

test('a paused chain, end to end: recorded, attached to its answer, decided once, continued, and shown in history', async () => {
  await using s = await thread()
  const u1 = await s.ask('Find the page about leases and delete it', 1)
  expect(await s.generations.claim(u1, 5, { id: 'run-1', holder: 't', expiresAt: 60_000 })).toBe(true)
  expect(await s.calls.runOf(u1.messageId)).toBe('run-1')
  const first = { ...u1, questionId: u1.messageId, lease: 'run-1' }

  // Round 1: a read-only call runs; a destructive one waits for the owner.
  const search = call(first, 'run-1', { round: 1, position: 0, time: 6 })
  const remove = call(
    first,
    'run-1',
    { round: 1, position: 1, time: 6 },
    { toolUseId: 'call_del', modelName: 'docs__delete_page', toolName: 'delete_page', status: 'awaiting_approval' },
  )
  expect(await s.calls.recordRound(round(first, 'run-1', 1, 6), [search, remove], first)).toBe(true)
  expect(await s.calls.endCall(search.id, ok('Leases: page 7'), first, 7)).toBe(true)
  // Ended once: a second end (a takeover that did not know) changes nothing.
  expect(await s.calls.endCall(search.id, { ...ok('other'), status: 'error' }, first, 8)).toBe(false)
  expect(await s.calls.startCall(remove.id, first, 8)).toBe(false) // not allowed yet
  expect(await s.calls.askApproval(remove.id, 'approve_1', first)).toBe(true)
  expect(await s.calls.askApproval(remove.id, 'approve_2', first)).toBe(false)

  // The answer ends with the question to the owner: its message takes the run's calls, and the run is over.
  const choice: ThreadsModel.contentBlock = {
    type: 'user_get_choice',
    tool_use_id: 'approve_1',
    question: 'Allow delete_page on docs with {"id":"7"}?',
    choices: ['Allow', 'Deny'],
  }
  const stored = { ...u1, lease: 'run-1', outcome: 'complete' as const, error: null }
  expect(await s.generations.finish({ ...stored, contents: [text('I found it.'), choice] }, 20)).toBe(true)
  const m1 = (await s.answerTo(u1.messageId))?.id as string
  expect(await s.calls.runOf(u1.messageId)).toBeNull()
  const { rounds, calls } = await s.calls.chain('run-1')
  expect(rounds).toEqual([round(first, 'run-1', 1, 6)])
  expect(calls).toEqual([
    { ...search, answerId: m1, status: 'ok', result: 'Leases: page 7', resultChars: 14, durationMs: 40, finishedAt: 7 },
    { ...remove, answerId: m1, approvalId: 'approve_1' },
  ])
  expect(await s.calls.byApproval(s.threadId, 'approve_1')).toEqual(calls[1] as ToolCallRecord)
  expect(await s.calls.byApproval('another-thread', 'approve_1')).toBeNull()

  // The owner answers "Allow"; two instances (or a regenerate) decide at once: exactly one decision stands.
  const u2 = await s.ask('Allow', 30)
  const decided = await Promise.all([
    s.calls.decide(remove.id, 'allowed', u2.messageId, 31),
    s.calls.decide(remove.id, 'denied', u2.messageId, 31),
    s.calls.decide(remove.id, 'allowed', u2.messageId, 31),
  ])
  expect(decided.filter(Boolean)).toHaveLength(1)
  const winner = decided[1] ? 'denied' : 'allowed'
  expect(await s.calls.byApproval(s.threadId, 'approve_1')).toMatchObject({
    status: winner,
    decidedBy: u2.messageId,
    decidedAt: 31,
  })
  expect(await s.calls.decide(remove.id, 'allowed', u2.messageId, 32)).toBe(false)

  // The history of the next answer: the earlier answer with its calls and the text of its round, and the owner's
  // exact "Allow" marked as a decision.
  const history = await s.generations.history(s.threadId, u2.messageId)
  expect(history.map((message) => message.id)).toEqual([u1.messageId, m1, u2.messageId])
  expect(history[0]).toEqual({
    id: u1.messageId,
    role: 'user',
    contents: [text('Find the page about leases and delete it')],
  })
  expect(history[1]).toMatchObject({
    roundTexts: ['Round 1: let me look.'],
    toolCalls: [
      {
        round: 1,
        position: 0,
        toolUseId: search.toolUseId,
        modelName: 'docs__search_docs',
        serverName: 'docs',
        toolName: 'search_docs',
        arguments: '{"q":"leases"}',
        status: 'ok',
        result: 'Leases: page 7',
        approvalId: null,
      },
      {
        round: 1,
        position: 1,
        toolUseId: 'call_del',
        modelName: 'docs__delete_page',
        toolName: 'delete_page',
        status: winner,
        result: null,
        approvalId: 'approve_1',
      },
    ],
  })
  expect(Object.keys(history[1]?.toolCalls?.[0] ?? {}).sort()).toEqual(
    [
      'approvalId',
      'arguments',
      'modelName',
      'position',
      'result',
      'round',
      'serverName',
      'status',
      'toolName',
      'toolUseId',
    ].sort(),
  )
  expect(history[2]).toEqual({ id: u2.messageId, role: 'user', contents: [text('Allow')], decision: true })

  // The continuation: a new run, which runs the allowed call and records the chain's next round under itself.
  expect(await s.generations.claim(u2, 40, { id: 'run-2', holder: 't', expiresAt: 60_000 })).toBe(true)
  const second = { ...u2, questionId: u2.messageId, lease: 'run-2' }
  if (winner === 'allowed') {
    expect(await s.calls.startCall(remove.id, second, 41)).toBe(true)
    expect(await s.calls.endCall(remove.id, ok('deleted'), second, 42)).toBe(true)
  }
  const more = call(second, 'run-1', { round: 2, position: 0, time: 43 })
  expect(await s.calls.recordRound(round(second, 'run-1', 2, 43), [more], second)).toBe(true)
  // Stopped before it wrote a word: the answer is still stored, empty, so what its tools did has a message.
  expect(
    await s.generations.finish({ ...u2, lease: 'run-2', outcome: 'interrupted', error: 'Stopped', contents: [] }, 50),
  ).toBe(true)
  const m2 = await s.answerTo(u2.messageId)
  expect(m2?.contents).toEqual([])
  const byAnswer = await s.calls.forAnswers([m1, m2?.id as string, 'no-such-answer'])
  expect([...byAnswer.keys()].sort()).toEqual([m1, m2?.id as string].sort())
  expect(byAnswer.get(m1)?.map((one) => [one.toolName, one.status])).toEqual([
    ['search_docs', 'ok'],
    ['delete_page', winner === 'allowed' ? 'ok' : 'denied'],
  ])
  expect(byAnswer.get(m2?.id as string)?.map((one) => [one.round, one.runId, one.chainId])).toEqual([
    [2, 'run-2', 'run-1'],
  ])
  const later = await s.ask('Thanks', 60)
  const full = await s.generations.history(s.threadId, later.messageId)
  expect(full.find((message) => message.id === m2?.id)?.roundTexts).toEqual(['Round 2: let me look.'])
  expect(full.find((message) => message.id === m1)?.roundTexts).toEqual(['Round 1: let me look.'])
})

test('an answer without tool calls stores as before: no message for empty contents, no tool data in history', async () => {
  await using s = await thread()
  const u1 = await s.ask('Hi', 1)
  await s.generations.claim(u1, 2, { id: 'run-1', holder: 't', expiresAt: 60_000 })
  await s.generations.finish({ ...u1, lease: 'run-1', outcome: 'interrupted', error: 'Stopped', contents: [] }, 3)
  expect(await s.answerTo(u1.messageId)).toBeUndefined()
  const u2 = await s.ask('Hello again', 4)
  await s.generations.claim(u2, 5, { id: 'run-2', holder: 't', expiresAt: 60_000 })
  await s.generations.finish({ ...u2, lease: 'run-2', outcome: 'complete', error: null, contents: [text('Hi!')] }, 6)
  const u3 = await s.ask('Allow', 7)
  // "Allow" that decided nothing is an ordinary message.
  expect(await s.generations.history(s.threadId, u3.messageId)).toEqual([
    { id: u1.messageId, role: 'user', contents: [text('Hi')] },
    { id: u2.messageId, role: 'user', contents: [text('Hello again')] },
    { id: (await s.answerTo(u2.messageId))?.id as string, role: 'assistant', contents: [text('Hi!')] },
    { id: u3.messageId, role: 'user', contents: [text('Allow')] },
  ])
})

test('words other than Allow or Deny decide a call but stay the person’s own words', async () => {
  expect(
    [' Allow ', 'allow', 'DENY', 'Deny', 'Allow it', 'no', ''].map((words) => approvalAnswer([text(words)])),
  ).toEqual(['allow', 'allow', 'deny', 'deny', 'other', 'other', 'other'])
  expect(approvalAnswer([text('Allow'), text('Allow')])).toBe('other')
  expect(approvalAnswer([])).toBe('other')

  await using s = await thread()
  const u1 = await s.ask('Delete page 7', 1)
  await s.generations.claim(u1, 2, { id: 'run-1', holder: 't', expiresAt: 60_000 })
  const fence = { ...u1, questionId: u1.messageId, lease: 'run-1' }
  const remove = call(fence, 'run-1', { round: 1, position: 0, time: 3 }, { status: 'awaiting_approval' })
  await s.calls.recordRound(round(fence, 'run-1', 1, 3), [remove], fence)
  await s.calls.askApproval(remove.id, 'approve_7', fence)
  await s.generations.finish({ ...u1, lease: 'run-1', outcome: 'complete', error: null, contents: [text('Sure?')] }, 4)
  const u2 = await s.ask('No, archive it instead', 5)
  expect(await s.calls.decide(remove.id, 'denied', u2.messageId, 6)).toBe(true)
  const history = await s.generations.history(s.threadId, u2.messageId)
  expect(history.at(-1)).toEqual({ id: u2.messageId, role: 'user', contents: [text('No, archive it instead')] })
  expect(history.at(-2)?.toolCalls?.map((one) => one.status)).toEqual(['denied'])
})

test('once the answer has ended, its tool writes write nothing', async () => {
  await using s = await thread()
  const u1 = await s.ask('Search', 1)
  await s.generations.claim(u1, 2, { id: 'run-1', holder: 't', expiresAt: 60_000 })
  const fence = { ...u1, questionId: u1.messageId, lease: 'run-1' }
  const searching = call(fence, 'run-1', { round: 1, position: 0, time: 3 })
  const waiting = call(fence, 'run-1', { round: 1, position: 1, time: 3 }, { status: 'awaiting_approval' })
  await s.calls.recordRound(round(fence, 'run-1', 1, 3), [searching, waiting], fence)
  await s.generations.finish({ ...u1, lease: 'run-1', outcome: 'interrupted', error: 'Stopped', contents: [] }, 4)
  expect(await s.calls.endCall(searching.id, ok('late'), fence, 5)).toBe(false)
  expect(await s.calls.askApproval(waiting.id, 'approve_late', fence)).toBe(false)
  expect(
    await s.calls.recordRound(
      round(fence, 'run-1', 2, 6),
      [call(fence, 'run-1', { round: 2, position: 0, time: 6 })],
      fence,
    ),
  ).toBe(false)
  const { rounds, calls } = await s.calls.chain('run-1')
  expect(rounds.map((one) => one.round)).toEqual([1])
  expect(calls.map((one) => [one.status, one.finishedAt, one.approvalId])).toEqual([
    ['running', null, null],
    ['awaiting_approval', null, null],
  ])
  // Both belong to the stored (empty) answer all the same.
  const answer = (await s.answerTo(u1.messageId))?.id as string
  expect(answer).toBeString()
  expect(calls.map((one) => one.answerId)).toEqual([answer, answer])
})

test.skipIf(!onPostgres)(
  'an instance that lost its lease records nothing of the answer it no longer holds',
  async () => {
    await using s = await thread()
    const u1 = await s.ask('Search', 1)
    const policy = { maxAttempts: 3, stoppedError: 'stopped', failedError: 'failed', limit: 10, graceMs: 0 }
    expect(await s.generations.claim(u1, 5, { id: 'lease-old', holder: 'a', expiresAt: 100 })).toBe(true)
    const old = { ...u1, questionId: u1.messageId, lease: 'lease-old' }
    const kept = call(old, 'lease-old', { round: 1, position: 0, time: 6 })
    expect(await s.calls.recordRound(round(old, 'lease-old', 1, 6), [kept], old)).toBe(true)
    // Its instance stops renewing; another takes the answer over, and the run goes on under the new claim.
    expect((await s.generations.recover(policy, 200)).abandoned).toBe(1)
    expect(await s.generations.claim(u1, 201, { id: 'lease-new', holder: 'b', expiresAt: 10_000 })).toBe(true)
    expect(await s.calls.runOf(u1.messageId)).toBe('lease-old')
    const late = call(old, 'lease-old', { round: 2, position: 0, time: 210 })
    expect(await s.calls.recordRound(round(old, 'lease-old', 2, 210), [late], old)).toBe(false)
    expect(await s.calls.endCall(kept.id, ok('late'), old, 211)).toBe(false)
    const now = { ...old, lease: 'lease-new' }
    expect(await s.calls.endCall(kept.id, { ...ok(''), status: 'unknown' }, now, 212)).toBe(true)
    const { rounds, calls } = await s.calls.chain('lease-old')
    expect(rounds.map((one) => one.round)).toEqual([1])
    expect(calls.map((one) => [one.id, one.status])).toEqual([[kept.id, 'unknown']])
  },
)

test('deleting a thread deletes its rounds and calls', async () => {
  await using s = await thread()
  const u1 = await s.ask('Search', 1)
  await s.generations.claim(u1, 2, { id: 'run-1', holder: 't', expiresAt: 60_000 })
  const fence = { ...u1, questionId: u1.messageId, lease: 'run-1' }
  await s.calls.recordRound(
    round(fence, 'run-1', 1, 3),
    [call(fence, 'run-1', { round: 1, position: 0, time: 3 })],
    fence,
  )
  await s.generations.finish({ ...u1, lease: 'run-1', outcome: 'complete', error: null, contents: [text('Done')] }, 4)
  const { toolRounds, toolCalls } = s.h.tables
  const rows = async () => [
    (await s.h.orm.select({ n: count() }).from(toolRounds))[0]?.n,
    (await s.h.orm.select({ n: count() }).from(toolCalls))[0]?.n,
  ]
  expect(await rows()).toEqual([1, 1])
  expect((await s.h.call('DELETE', `/api/v1/threads/${s.threadId}`, { token: s.owner.token })).status).toBe(204)
  expect(await rows()).toEqual([0, 0])
})

test.skipIf(!onPostgres)(
  'a tool write that meets the answer’s end under way waits for it, then writes nothing',
  async () => {
    await using s = await thread()
    const u1 = await s.ask('Search', 1)
    await s.generations.claim(u1, 2, { id: 'run-1', holder: 't', expiresAt: 60_000 })
    const fence = { ...u1, questionId: u1.messageId, lease: 'run-1' }
    const searching = call(fence, 'run-1', { round: 1, position: 0, time: 3 })
    await s.calls.recordRound(round(fence, 'run-1', 1, 3), [searching], fence)
    // The end of the answer, as another connection's unit holds it: the generation's row updated, not yet committed.
    // A fence that only read the row would see it still running and write; this one waits for the end, then sees it.
    const client = (s.h.orm as unknown as PgDb).$client
    const waiting = async () => {
      const [row] = await client`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`
      return row.n > 0
    }
    let ended: Promise<boolean> | undefined
    let recorded: Promise<boolean> | undefined
    await client.begin(async (tx) => {
      await tx`update generations set status = 'complete', lease_id = null where message_id = ${u1.messageId}`
      ended = s.calls.endCall(searching.id, ok('late'), fence, 5)
      await until(waiting)
      recorded = s.calls.recordRound(round(fence, 'run-1', 2, 6), [], fence)
      await until(async () => {
        const [row] = await client`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`
        return row.n > 1
      })
    })
    expect(await ended).toBe(false)
    expect(await recorded).toBe(false)
    const { rounds, calls } = await s.calls.chain('run-1')
    expect([rounds.length, calls.map((one) => one.status)]).toEqual([1, ['running']])
  },
)
