// The context budget. Tokens are estimated, not counted: about four characters of text per token
// (close for English with the common BPE tokenizers, and on the safe side for code), plus a fixed
// charge per message and per image. No tokenizer is needed, and it is the same for every vendor.
//
// Policy (README, "Context budget"): when the system prompt, the tools and the history would take more
// than the context window minus the room kept for the answer (LLM_CONTEXT_TOKENS − LLM_MAX_OUTPUT_TOKENS),
// the oldest messages are summarised by the model itself. The newest messages that fit in half of that
// room are kept word for word, starting at a user message; everything older, an earlier summary
// included, is replaced by one new summary. Half, so that compaction happens once every several turns
// rather than on every message.
import type { ModelSettings, OfferedTool, ToolRound } from '../types'
import { choiceToolDescription, choiceToolName, choiceToolSchema } from './choice-tool'
import { type LoadedMessage, transcriptEntry } from './conversation'
import type { ModelRequest } from './model'

const charsPerToken = 4
/** Role markers and separators each message costs on top of its text. */
const tokensPerMessage = 4
/** What a vendor typically charges for a resized image. */
const tokensPerImage = 1000

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / charsPerToken)
}

export function messageTokens(message: LoadedMessage): number {
  let tokens = tokensPerMessage
  for (const part of message.parts) tokens += part.type === 'text' ? estimateTokens(part.text) : tokensPerImage
  if (message.choice) tokens += estimateTokens(JSON.stringify(message.choice))
  return tokens
}

const toolTokens = estimateTokens(choiceToolName + choiceToolDescription + JSON.stringify(choiceToolSchema))

/** What the definitions of an answer's tools add to every one of its requests. */
export function offeredTokens(tools: OfferedTool[]): number {
  return tools.reduce(
    (sum, tool) => sum + estimateTokens(tool.name + tool.description + JSON.stringify(tool.inputSchema)),
    0,
  )
}

/** A request's system prompt, tools and history: all of it but the rounds of tool calls. */
export function promptTokens(messages: LoadedMessage[], system: string, extraFixedTokens = 0): number {
  const fixed = estimateTokens(system) + toolTokens + extraFixedTokens
  return messages.reduce((sum, message) => sum + messageTokens(message), fixed)
}

/** A round as sent: its text and calls in one message, its results in another. */
function roundTokens(round: ToolRound): number {
  const calls = round.calls.reduce((sum, call) => sum + estimateTokens(call.id + call.name + call.arguments), 0)
  const results = round.results.reduce((sum, result) => sum + estimateTokens(result.id + result.content), 0)
  return 2 * tokensPerMessage + estimateTokens(round.text) + calls + results
}

/**
 * The rounds of an answer fitted into `room` tokens: the oldest results are replaced by a note of their size until
 * they fit, so the latest results, which the model is working from, are the last to go. `fits` is false when even
 * every result left out is too much: the answer then has to end.
 */
export function budgetRounds(rounds: ToolRound[], room: number): { rounds: ToolRound[]; fits: boolean } {
  const fitted = rounds.map((round) => ({ ...round, results: [...round.results] }))
  let used = fitted.reduce((sum, round) => sum + roundTokens(round), 0)
  for (const round of fitted) {
    for (const [index, result] of round.results.entries()) {
      if (used <= room) return { rounds: fitted, fits: true }
      const note = `[result left out to fit the context: ${result.content.length} characters]`
      if (note.length >= result.content.length) continue
      used -= estimateTokens(result.content) - estimateTokens(note)
      round.results[index] = { ...result, content: note }
    }
  }
  return { rounds: fitted, fits: used <= room }
}

type Budgeted = Pick<ModelSettings, 'contextTokens' | 'maxOutputTokens' | 'systemPrompt'>

/** Room for the prompt: the context window less what is kept free for the answer. */
export function inputBudget(settings: Budgeted): number {
  return settings.contextTokens - settings.maxOutputTokens
}

export interface CompactionPlan {
  replaced: LoadedMessage[]
  kept: LoadedMessage[]
}

/** Returns null when the history fits, or when nothing but an earlier summary could be replaced. */
/** `extraFixedTokens`: what every request of the answer adds besides the system prompt and the choice tool. */
export function planCompaction(
  messages: LoadedMessage[],
  settings: Budgeted,
  extraFixedTokens = 0,
): CompactionPlan | null {
  const fixed = estimateTokens(settings.systemPrompt) + toolTokens + extraFixedTokens
  const sizes = messages.map(messageTokens)
  const total = fixed + sizes.reduce((sum, size) => sum + size, 0)
  const budget = inputBudget(settings)
  if (total <= budget || messages.length < 2) return null

  const room = Math.floor(budget / 2) - fixed
  let start = messages.length - 1
  let used = sizes[start] ?? 0
  while (start > 0 && used + (sizes[start - 1] ?? 0) <= room) {
    start -= 1
    used += sizes[start] ?? 0
  }
  // Kept turns start with the user speaking, as every vendor expects.
  while (start < messages.length - 1 && messages[start]?.role !== 'user') start += 1
  const replaced = messages.slice(0, start)
  if (!replaced.some((message) => message.role !== 'summary')) return null
  return { replaced, kept: messages.slice(start) }
}

export const summaryPrompt =
  'You condense conversations so that they can go on without the original messages. Summarise the ' +
  'conversation you are given: keep facts, names, numbers, decisions, the user’s goals and preferences, ' +
  'what the assistant produced or promised, and any question still open. Write in the language of the ' +
  'conversation, as compact prose or short bullet points. Reply with the summary only.'

/** The summary may use a quarter of the prompt's room, and no more than an answer may. */
function summaryTokens(settings: Budgeted): number {
  return Math.max(64, Math.min(settings.maxOutputTokens, Math.floor(inputBudget(settings) / 4)))
}

/**
 * Writes the replaced messages as one transcript. If even that is too long for one request, its
 * oldest entries are left out (an earlier summary always stays), then the rest is cut short.
 */
function fittingTranscript(replaced: LoadedMessage[], maxTokens: number): string {
  const entries = replaced.map(transcriptEntry)
  const size = (): number => estimateTokens(entries.join('\n\n'))
  const oldest = replaced[0]?.role === 'summary' ? 1 : 0
  while (size() > maxTokens && entries.length - oldest > 1) entries.splice(oldest, 1)
  const text = entries.join('\n\n')
  const maxChars = maxTokens * charsPerToken
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text
}

export function summaryRequest(replaced: LoadedMessage[], settings: Budgeted): ModelRequest {
  const maxOutputTokens = summaryTokens(settings)
  // About 0.75 English words make a token; asking for fewer keeps the summary clear of the limit.
  const instruction = `(Summarise the conversation above in at most about ${Math.round(maxOutputTokens * 0.6)} words.)`
  const room =
    settings.contextTokens - maxOutputTokens - estimateTokens(summaryPrompt + instruction) - 2 * tokensPerMessage
  const text = `${fittingTranscript(replaced, room)}\n\n${instruction}`
  return {
    system: summaryPrompt,
    turns: [{ role: 'user', parts: [{ type: 'text', text }] }],
    maxOutputTokens,
    choiceTool: 'withhold',
    tools: [],
    toolChoice: 'auto',
  }
}

/** The loaded form of a new summary, put in front of the kept messages for the answer's request. */
export function summaryMessage(text: string): LoadedMessage {
  return { id: 'summary', role: 'summary', parts: [{ type: 'text', text }] }
}
