// What the tools did, on either database (tool-calls.repository.ts): the reads, the person's decision, and the fenced
// single-statement writes, each given its dialect's fence (`held`). Only recording a round, a unit of two inserts
// behind the fence, is written per dialect (tool-calls.repository.sqlite.ts / .pg.ts).
import { and, asc, eq, inArray, isNotNull, isNull, type SQL, sql } from 'drizzle-orm'
import type { AnyDb } from '../db/dialect'
import type { PgDb } from '../db/postgres'
import { prepared } from '../db/prepared'
import type { generations } from './generations.table.pg'
import type { CallEnd, Fence, ToolCallRecord, ToolCallRepository, ToolRoundRecord } from './tool-calls.repository'
import type { toolCalls, toolRounds } from './tool-calls.table.pg'

/** The tables the tool record reads and writes: either dialect's (db/dialect.ts). */
export interface ToolCallTables {
  toolRounds: typeof toolRounds
  toolCalls: typeof toolCalls
  generations: typeof generations
}

/** The clause that holds while the answer is still the fence's: each dialect's own (see the twins). */
export type Held = (fence: Fence) => SQL

/** IDs bound per statement: far below either database's bound on parameters, however many messages a thread has. */
const idsPerStatement = 500

function chunked<T>(items: T[]): T[][] {
  const out: T[][] = []
  for (let start = 0; start < items.length; start += idsPerStatement)
    out.push(items.slice(start, start + idsPerStatement))
  return out
}

type RoundRow = (typeof toolRounds)['$inferSelect']

export function roundOf(row: RoundRow): ToolRoundRecord {
  const { inputTokens, outputTokens, cachedInputTokens, ...rest } = row
  const usage =
    inputTokens === null || outputTokens === null
      ? null
      : { inputTokens, outputTokens, cachedInputTokens: cachedInputTokens ?? 0 }
  return { ...rest, usage }
}

export function roundValues({ usage, ...round }: ToolRoundRecord): RoundRow {
  return {
    ...round,
    inputTokens: usage?.inputTokens ?? null,
    outputTokens: usage?.outputTokens ?? null,
    cachedInputTokens: usage?.cachedInputTokens ?? null,
  }
}

/** What a call's row holds when it is recorded: not yet part of a stored answer. */
export function callValues(call: Omit<ToolCallRecord, 'answerId'>): ToolCallRecord {
  return { ...call, answerId: null }
}

/** An answer's tool calls and its rounds' texts, as its history shows them (history.ts withToolCalls). */
export interface ToolHistory {
  calls: Map<string, ToolCallRecord[]>
  roundTexts: Map<string, string[]>
}

/** The calls of these assistant messages, by message, each in order (round, then position). */
async function callsOf(db: AnyDb, { toolCalls }: ToolCallTables, answerIds: string[]) {
  const byAnswer = new Map<string, ToolCallRecord[]>()
  for (const chunk of chunked([...new Set(answerIds)])) {
    const rows = await db
      .select()
      .from(toolCalls)
      .where(inArray(toolCalls.answerId, chunk))
      .orderBy(asc(toolCalls.round), asc(toolCalls.position))
    for (const row of rows) {
      const answerId = row.answerId as string
      const calls = byAnswer.get(answerId)
      if (calls) calls.push(row)
      else byAnswer.set(answerId, [row])
    }
  }
  return byAnswer
}

/**
 * The tool calls of these assistant messages of a thread and the texts their rounds wrote before them. It runs with
 * every answer's history, so it reads by the thread (one indexed lookup, prepared once per database, that finds
 * nothing in a thread whose answers never called a tool) rather than by a list of IDs. An answer's calls are all of
 * one run (the run's end attaches them) and each of its rounds has a call: its rounds are that run's.
 */
export function toolHistoryReader(
  db: AnyDb,
  { toolRounds, toolCalls }: ToolCallTables,
): (threadId: string, answerIds: string[]) => Promise<ToolHistory> {
  const statements = {
    calls: () =>
      prepared(db as unknown as PgDb, 'tool-calls:history-calls', () =>
        db
          .select()
          .from(toolCalls)
          .where(and(eq(toolCalls.threadId, sql.placeholder('threadId')), isNotNull(toolCalls.answerId)))
          .orderBy(asc(toolCalls.round), asc(toolCalls.position))
          .prepare('tool_calls_history_calls'),
      ),
    rounds: () =>
      prepared(db as unknown as PgDb, 'tool-calls:history-rounds', () =>
        db
          .select({
            chainId: toolRounds.chainId,
            round: toolRounds.round,
            runId: toolRounds.runId,
            text: toolRounds.text,
          })
          .from(toolRounds)
          .where(eq(toolRounds.threadId, sql.placeholder('threadId')))
          .orderBy(asc(toolRounds.round))
          .prepare('tool_calls_history_rounds'),
      ),
  }
  return async (threadId, answerIds) => {
    const calls = new Map<string, ToolCallRecord[]>()
    const roundTexts = new Map<string, string[]>()
    if (answerIds.length === 0) return { calls, roundTexts }
    const wanted = new Set(answerIds)
    for (const row of await statements.calls().execute({ threadId })) {
      const answerId = row.answerId as string
      if (!wanted.has(answerId)) continue
      const own = calls.get(answerId)
      if (own) own.push(row)
      else calls.set(answerId, [row])
    }
    if (calls.size === 0) return { calls, roundTexts }
    const rounds = await statements.rounds().execute({ threadId })
    for (const [answerId, [first]] of calls) {
      const { chainId, runId } = first as ToolCallRecord
      roundTexts.set(
        answerId,
        rounds.filter((round) => round.chainId === chainId && round.runId === runId).map((round) => round.text),
      )
    }
    return { calls, roundTexts }
  }
}

export function toolCallRepository(db: AnyDb, t: ToolCallTables, held: Held): Omit<ToolCallRepository, 'recordRound'> {
  const { toolRounds, toolCalls, generations } = t
  const changed = async (rows: Promise<unknown[]>) => (await rows).length > 0

  return {
    async runOf(questionId) {
      const [row] = await db
        .select({ runId: generations.runId })
        .from(generations)
        .where(eq(generations.messageId, questionId))
      return row?.runId ?? null
    },

    async chain(chainId) {
      const [rounds, calls] = await Promise.all([
        db.select().from(toolRounds).where(eq(toolRounds.chainId, chainId)).orderBy(asc(toolRounds.round)),
        db
          .select()
          .from(toolCalls)
          .where(eq(toolCalls.chainId, chainId))
          .orderBy(asc(toolCalls.round), asc(toolCalls.position)),
      ])
      return { rounds: rounds.map(roundOf), calls }
    },

    startCall(callId, fence, now) {
      return changed(
        db
          .update(toolCalls)
          .set({ status: 'running', startedAt: now })
          .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, 'allowed'), held(fence)))
          .returning({ id: toolCalls.id }),
      )
    },

    endCall(callId, end: CallEnd, fence, now) {
      return changed(
        db
          .update(toolCalls)
          .set({ ...end, finishedAt: now })
          .where(and(eq(toolCalls.id, callId), isNull(toolCalls.finishedAt), held(fence)))
          .returning({ id: toolCalls.id }),
      )
    },

    askApproval(callId, approvalId, fence) {
      return changed(
        db
          .update(toolCalls)
          .set({ approvalId })
          .where(
            and(
              eq(toolCalls.id, callId),
              eq(toolCalls.status, 'awaiting_approval'),
              isNull(toolCalls.approvalId),
              held(fence),
            ),
          )
          .returning({ id: toolCalls.id }),
      )
    },

    // The person's answer, not the run's: unfenced. Of racing deciders (two instances continuing the same chain,
    // a regenerate), the first update wins and the others find the call no longer awaiting.
    decide(callId, decision, messageId, now) {
      return changed(
        db
          .update(toolCalls)
          .set({ status: decision, decidedBy: messageId, decidedAt: now })
          .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, 'awaiting_approval')))
          .returning({ id: toolCalls.id }),
      )
    },

    async byApproval(threadId, approvalId) {
      const [row] = await db
        .select()
        .from(toolCalls)
        .where(and(eq(toolCalls.approvalId, approvalId), eq(toolCalls.threadId, threadId)))
      return row ?? null
    },

    forAnswers(answerIds) {
      return callsOf(db, t, answerIds)
    },
  }
}
