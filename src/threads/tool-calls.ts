// The tool calls of answers as the API shows them (a message's details, the export) and the thread page reads them:
// what generation/ recorded of each call (tool-calls.repository.ts), in the API's words.
import type { ToolCallRecord, ToolCallRepository } from '../generation/tool-calls.repository'
import { toIso } from '../shared/time'
import type { ThreadsModel } from './model'

/** The arguments as the model wrote them: an object when they are one in JSON, else the text itself. */
function argumentsOf(text: string): ThreadsModel.toolCall['arguments'] {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>
    }
  } catch {}
  return text
}

export function toToolCall(call: ToolCallRecord): ThreadsModel.toolCall {
  return {
    id: call.id,
    server: call.serverName,
    tool: call.toolName,
    arguments: argumentsOf(call.arguments),
    outcome: call.status,
    result: call.result,
    // The stored result is cut to TOOLS_RESULT_MAX_CHARS with its note counted in, so a cut one is always shorter.
    result_truncated: call.result !== null && call.resultChars !== null && call.resultChars > call.result.length,
    error: call.error,
    duration_ms: call.durationMs,
    round: call.round,
    started_at: toIso(call.startedAt),
    decided_by: call.decidedBy,
  }
}

/** The calls of these assistant messages, by message, in one read; a message without calls is absent. */
export async function toolCallsOf(
  toolCalls: ToolCallRepository,
  answerIds: string[],
): Promise<Map<string, ThreadsModel.toolCall[]>> {
  if (answerIds.length === 0) return new Map()
  const byAnswer = await toolCalls.forAnswers(answerIds)
  return new Map([...byAnswer].map(([answerId, calls]) => [answerId, calls.map(toToolCall)]))
}

/** A call's time as people read it: milliseconds under a second, else seconds to a tenth. */
export function callDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s`
}

/**
 * One line saying what became of a call, for the Markdown export and the thread page's summaries: "Used search_docs
 * on docs · 320 ms", "Denied delete_page on docs". `chooser` is whose choice a waiting call needs, as the reader is
 * told it.
 */
export function toolCallLine(call: ThreadsModel.toolCall, chooser = 'the owner’s'): string {
  const what = `${call.tool} on ${call.server}`
  const took = call.duration_ms === null ? '' : ` · ${callDuration(call.duration_ms)}`
  switch (call.outcome) {
    case 'ok':
      return `Used ${what}${took}`
    case 'error':
      return `${what} failed: ${call.error ?? 'the tool reported an error'}`
    case 'timeout':
      return `${what} failed: timed out${call.duration_ms === null ? '' : ` after ${callDuration(call.duration_ms)}`}`
    case 'denied':
      return `Denied ${what}`
    case 'refused':
      return `Did not use ${what}: ${call.error ?? 'not offered to this thread'}`
    case 'awaiting_approval':
      return `Waiting for ${chooser} choice: ${what}`
    case 'allowed':
      return `Allowed ${what}, about to run`
    case 'running':
      return `Running ${what}…`
    case 'unknown':
      return `Unknown whether ${what} took effect`
  }
}
