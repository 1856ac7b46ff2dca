// Answers that called tools, recorded as the engine records them (generation/tool-calls.repository.ts): a scripted job
// runs, its rounds and calls are written under its claim, and its end attaches them to the stored answer. For the
// tests of what the API and the pages show of tool calls, without an MCP server or a model behind them.
import type { ToolCallRecord } from '../../src/generation/tool-calls.repository'
import type { ThreadsModel } from '../../src/threads/model'
import type { Harness, ScriptedRunner } from './helpers'

/** A call as the test wants it stored: what it leaves out is a read-only `docs/search_docs` that answered. */
export type SeedCall = Partial<Omit<ToolCallRecord, 'answerId' | 'round' | 'position' | 'chainId' | 'runId'>>

export interface SeedRound {
  /** What the reply wrote before its calls: streamed as the answer's text. */
  text: string
  calls: SeedCall[]
}

/** When the seeded calls started: fixed, so documents can be compared whole. */
export const seedTime = Date.UTC(2026, 0, 5, 9, 30)

/**
 * Lets the scripted answer to `messageId` (of `threadId`) record `rounds` of calls, then write `after` and end with `blocks` (an
 * approval's question); waits until the answer is stored. Returns the calls as stored, in order.
 */
export async function answerWithTools(
  h: Harness,
  runner: ScriptedRunner,
  { threadId, messageId }: { threadId: string; messageId: string },
  rounds: SeedRound[],
  after: string,
  blocks: ThreadsModel.contentBlock[] = [],
): Promise<ToolCallRecord[]> {
  const job = await runner.started(messageId)
  const runId = await h.store.toolCalls.runOf(messageId)
  if (!runId) throw new Error('the answer was claimed without a run')
  // The run is the first claim's lease (generations.runId), and nothing took it over.
  const fence = { questionId: messageId, lease: runId }
  let clock = seedTime
  for (const [index, round] of rounds.entries()) {
    const number = index + 1
    job.token(round.text)
    const calls = round.calls.map(
      (call, position): Omit<ToolCallRecord, 'answerId'> => ({
        id: Bun.randomUUIDv7(),
        threadId,
        chainId: runId,
        round: number,
        position,
        runId,
        toolUseId: `call_${number}_${position}`,
        modelName: `${call.serverName ?? 'docs'}__${call.toolName ?? 'search_docs'}`,
        serverId: null,
        serverName: 'docs',
        toolName: 'search_docs',
        arguments: '{"q":"leases"}',
        status: 'ok',
        result: 'Leases: page 7',
        resultChars: 14,
        error: null,
        approvalId: null,
        decidedBy: null,
        decidedAt: null,
        startedAt: clock,
        finishedAt: clock + (call.durationMs ?? 320),
        durationMs: 320,
        ...call,
      }),
    )
    clock += 1000
    const recorded = await h.store.toolCalls.recordRound(
      {
        chainId: runId,
        round: number,
        runId,
        questionId: messageId,
        threadId,
        text: round.text,
        usage: null,
        createdAt: clock,
      },
      calls,
      fence,
    )
    if (!recorded) throw new Error(`round ${number} was not recorded`)
  }
  job.token(after)
  for (const block of blocks) job.block(block)
  job.done()
  runner.jobs.delete(messageId)
  await h.app.decorator.engine.idle()
  return (await h.store.toolCalls.chain(runId)).calls
}
