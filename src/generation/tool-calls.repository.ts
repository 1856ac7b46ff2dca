// The storage contract of what the tools did in answers: rounds of calls and each call, from the moment the model asks
// for them to their outcome, and the person's decision on those that wait for one. Writes made while an answer runs
// are fenced by its claim, as the answer's own end is (repository.ts `finish`): an instance that lost its lease
// writes nothing. The neutral reads and the decision are in tool-calls.repository.common.ts; the fenced writes differ
// per dialect (tool-calls.repository.sqlite.ts / .pg.ts).
import type { HistoryToolCall, TokenUsage, ToolCallStatus } from './types'

export type { ToolCallStatus } from './types'

export interface ToolCallRecord extends HistoryToolCall {
  id: string
  threadId: string
  chainId: string
  /** The run that asked for it. */
  runId: string
  /** The assistant message it belongs to; null until its run's answer is stored. */
  answerId: string | null
  /** Null when the server is not known (a refused call), or no longer exists. */
  serverId: string | null
  /** The full result's length, in characters, before it was cut for the model. */
  resultChars: number | null
  error: string | null
  /** The user message that allowed or denied it. */
  decidedBy: string | null
  decidedAt: number | null
  startedAt: number
  finishedAt: number | null
  durationMs: number | null
}

export interface ToolRoundRecord {
  chainId: string
  round: number
  runId: string
  /** The user message whose answer recorded it. */
  questionId: string
  threadId: string
  /** What the reply wrote before its calls. */
  text: string
  /** What the request used; null: not reported. */
  usage: TokenUsage | null
  createdAt: number
}

/**
 * The claim a write is made under: on PostgreSQL the answer must still be `running` under this lease; on SQLite,
 * where one process holds the database and leases are not stored, `running`.
 */
export interface Fence {
  questionId: string
  lease: string
}

/** How a call ended. */
export interface CallEnd {
  status: Extract<ToolCallStatus, 'ok' | 'error' | 'timeout' | 'unknown' | 'denied' | 'refused'>
  result: string | null
  resultChars: number | null
  error: string | null
  durationMs: number | null
}

export interface ToolCallRepository {
  /** The run the answer to `questionId` is recorded under (null when none runs or it has ended). */
  runOf(questionId: string): Promise<string | null>

  /** Every round and call of a chain, in order (round, then position). */
  chain(chainId: string): Promise<{ rounds: ToolRoundRecord[]; calls: ToolCallRecord[] }>

  /** A round and its calls in one unit, only while `fence` holds. False: the lease is lost, nothing was written. */
  recordRound(round: ToolRoundRecord, calls: Omit<ToolCallRecord, 'answerId'>[], fence: Fence): Promise<boolean>

  /** An allowed call is about to run: `allowed` → `running`, started at `now`, while `fence` holds. */
  startCall(callId: string, fence: Fence, now: number): Promise<boolean>

  /** Records how a call ended (once: a call already ended is left as it is), while `fence` holds. */
  endCall(callId: string, end: CallEnd, fence: Fence, now: number): Promise<boolean>

  /** Names the choice block that asks about an `awaiting_approval` call (once), while `fence` holds. */
  askApproval(callId: string, approvalId: string, fence: Fence): Promise<boolean>

  /** `awaiting_approval` → `allowed` or `denied` by the user message `messageId`: exactly one caller wins. */
  decide(callId: string, decision: 'allowed' | 'denied', messageId: string, now: number): Promise<boolean>

  /** The call a choice block of the thread asks about. */
  byApproval(threadId: string, approvalId: string): Promise<ToolCallRecord | null>

  /** The calls of these assistant messages, in order, by message (the details, the export, the pages). */
  forAnswers(answerIds: string[]): Promise<Map<string, ToolCallRecord[]>>
}
