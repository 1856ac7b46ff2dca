// An answer's history with what its messages name beside their contents: the files behind attachment blocks, and
// the tool calls of earlier answers. The same joins on every database.
import { attachmentIdsOf } from '../threads/messages'
import type { AnswerStoreParts } from './repository'
import type { ToolHistory } from './tool-calls.repository.common'
import { approvalAnswer } from './tools'
import type { HistoryMessage, HistoryToolCall } from './types'

/** Each message with the files behind its attachment blocks, looked up once for the whole history. */
export async function withFiles(
  rows: Omit<HistoryMessage, 'attachments'>[],
  filesForModel: AnswerStoreParts<unknown, unknown, unknown>['filesForModel'],
): Promise<HistoryMessage[]> {
  const files = await filesForModel([...new Set(rows.flatMap((row) => attachmentIdsOf(row.contents)))])
  return rows.map((row) => {
    const own = attachmentIdsOf(row.contents).flatMap((id) => {
      const file = files.get(id)
      return file ? [[id, file] as const] : []
    })
    return own.length === 0 ? row : { ...row, attachments: Object.fromEntries(own) }
  })
}

/**
 * Each assistant message with its tool calls and the text of its rounds, and each user message that decided an
 * approval with exactly "Allow" or "Deny" marked as a `decision`: looked up once for the whole history, with one read
 * when no answer of it called a tool.
 */
export async function withToolCalls(
  messages: HistoryMessage[],
  toolHistory: (answerIds: string[]) => Promise<ToolHistory>,
): Promise<HistoryMessage[]> {
  const { calls, roundTexts } = await toolHistory(
    messages.flatMap((message) => (message.role === 'assistant' ? [message.id] : [])),
  )
  if (calls.size === 0) return messages
  const deciders = new Set([...calls.values()].flat().flatMap((call) => (call.decidedBy ? [call.decidedBy] : [])))
  return messages.map((message) => {
    const own = calls.get(message.id)
    if (own) {
      const toolCalls = own.map(
        (call): HistoryToolCall => ({
          round: call.round,
          position: call.position,
          toolUseId: call.toolUseId,
          modelName: call.modelName,
          serverName: call.serverName,
          toolName: call.toolName,
          arguments: call.arguments,
          status: call.status,
          result: call.result,
          approvalId: call.approvalId,
        }),
      )
      return { ...message, toolCalls, roundTexts: roundTexts.get(message.id) ?? [] }
    }
    if (message.role === 'user' && deciders.has(message.id) && approvalAnswer(message.contents) !== 'other') {
      return { ...message, decision: true as const }
    }
    return message
  })
}
