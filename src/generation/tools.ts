// The engine's port to the tools an answer may call: connectors/executor.ts implements it and app.ts hands it to the
// engine, so generation never imports the feature that connects MCP servers. Types, the error that says a lease was
// lost, and the one rule both sides and the answer's history read alike: which words of the thread's owner decide an
// approval.
import type { ThreadsModel } from '../threads/model'
import type { ChoiceBlock } from './providers/choice-tool'
import type { HistoryMessage, JobTools, TokenUsage, ToolCallRequest, ToolRound, ToolRoundReply } from './types'

/** The answer a tool round belongs to, under the claim that runs it. */
export interface ToolAnswer {
  threadId: string
  /** The user message being answered. */
  messageId: string
  /** The claim's lease ID: tool writes are fenced by it. */
  lease: string
  /** The configured model asked. */
  model: string
}

/** What an answer starts from: its tools, and where its chain of calls stands. */
export interface ToolPlan extends JobTools {
  /** History IDs the chain stands for (its earlier answers, the exact Allow/Deny messages): left out of the prompt. */
  hide: string[]
  /** Rounds of this run recorded before a takeover: their text is pushed to the hub again, their usage metered. */
  resumed: ToolRound[]
  resumedUsage: TokenUsage[]
  /** Nothing to ask the model: the chain's next call waits for a person, who is asked with this block. */
  ask?: ChoiceBlock
}

export interface AnswerTools {
  /**
   * Null: the answer has no tools. Decided calls the chain still owes are made here, before the model is asked;
   * `signal` aborts them when the answer is stopped.
   */
  prepare(answer: ToolAnswer, history: HistoryMessage[], now: number, signal?: AbortSignal): Promise<ToolPlan | null>
  round(
    answer: ToolAnswer,
    input: { round: number; text: string; calls: ToolCallRequest[]; usage?: TokenUsage },
    signal: AbortSignal,
  ): Promise<{ reply: ToolRoundReply; ask?: ChoiceBlock }>
}

/**
 * Thrown by `prepare` when the answer's lease is lost (another instance took it over, or it ended): nothing more may
 * be written for it, and the engine hears it as the lease's loss rather than a failure.
 */
export class LostLease extends Error {
  constructor() {
    super('the answer is no longer held')
  }
}

/** The choices an approval offers, in the order shown. */
export const approvalChoices = ['Allow', 'Deny'] as const

/**
 * How a user message answers an approval: `allow` for "Allow" and `deny` for "Deny" (one text block, trimmed, in any
 * case), `other` for anything else, which denies the call and is kept as the person's own words.
 */
export function approvalAnswer(contents: ThreadsModel.contentBlock[]): 'allow' | 'deny' | 'other' {
  const [only] = contents
  if (contents.length !== 1 || only?.type !== 'text') return 'other'
  const word = only.text.trim().toLowerCase()
  return word === 'allow' ? 'allow' : word === 'deny' ? 'deny' : 'other'
}
