// A thread's history in a vendor-neutral form that each provider maps to its own message format.
// Two steps: `loadHistory` reads what the stored blocks point to (attachment files, from the blob store) into parts, one
// loaded message per stored message, so that sizes can be estimated and IDs kept for compaction;
// `toTurns` then pairs `user_get_choice` questions with their answers and merges what must be merged.

import { storedPdfText } from '../../attachments/pdf-text'
import type { BlobStore } from '../../storage/blobs'
import type { HistoryMessage, HistoryToolCall, ToolCallRequest, ToolCallResult, ToolRound } from '../types'
import type { ChoiceBlock } from './choice-tool'

export type Part =
  | { type: 'text'; text: string }
  /** `data` is base64; `mediaType` one of the image types uploads accept. */
  | { type: 'image'; mediaType: string; data: string }

export interface LoadedMessage {
  id: string
  role: 'user' | 'assistant' | 'summary'
  parts: Part[]
  /** The question an assistant message asked with the choice tool. */
  choice?: ChoiceBlock
  /** A user message that only said Allow or Deny to an approval: its tool result says it, so no turn is sent. */
  decision?: true
}

/** `inline` sends images as image input; `describe` sends a textual stand-in, for models without vision. */
export type ImageInput = 'inline' | 'describe'

/** `offer` gives the model the choice tool; `withhold` writes earlier choices into the text instead. */
export type ChoiceTool = 'offer' | 'withhold'

export type Turn =
  | {
      role: 'user'
      parts: Part[]
      /** This message answers the choice the previous turn asked: its text is the tool's result. */
      answers?: { toolUseId: string; text: string }
      /** What the tools the previous turn called answered, in the order of its calls. */
      results?: ToolCallResult[]
    }
  | { role: 'assistant'; text: string; choice?: ChoiceBlock; calls?: ToolCallRequest[] }

const textPart = (text: string): Part => ({ type: 'text', text })

type AttachmentRef = { type: 'image' | 'document'; attachment_id: string }

/** A missing file and one that cannot be read (a bucket that does not answer) read alike: as nothing. */
async function readText(blobs: BlobStore, key: string): Promise<string | null> {
  try {
    return (await (await blobs.get(key))?.text()) ?? null
  } catch {
    return null
  }
}

async function readBase64(blobs: BlobStore, key: string): Promise<string | null> {
  try {
    const blob = await blobs.get(key)
    return blob ? Buffer.from(await blob.bytes()).toString('base64') : null
  } catch {
    return null
  }
}

/** Each attachment is labelled with its filename, so the model can tell them apart and name them. */
async function attachmentParts(
  block: AttachmentRef,
  message: HistoryMessage,
  images: ImageInput,
  blobs: BlobStore,
): Promise<Part[]> {
  const file = message.attachments?.[block.attachment_id]
  if (!file) return [textPart('[An attachment that is no longer available]')]
  const name = JSON.stringify(file.filename)
  if (file.mediaType.startsWith('image/')) {
    if (images === 'describe') return [textPart(`[Image ${name} attached; this model cannot see images]`)]
    const data = await readBase64(blobs, file.key)
    if (data === null) return [textPart(`[Image ${name} attached but could not be read]`)]
    return [textPart(`Image ${name}:`), { type: 'image', mediaType: file.mediaType, data }]
  }
  if (file.mediaType === 'application/pdf') {
    // Read in extract processes before the job reached this worker (runner.ts); never here, beside other answers.
    const known = await storedPdfText(blobs, file.key)
    if (!known) return [textPart(`[PDF ${name} attached; its text could not be read in time for this answer]`)]
    if ('unreadable' in known)
      return [textPart(`[PDF ${name} attached; its text could not be read: ${known.unreadable}]`)]
    return [textPart(`<file name=${name}>\n${known.text}\n</file>`)]
  }
  if (file.mediaType.startsWith('text/')) {
    const text = await readText(blobs, file.key)
    if (text === null) return [textPart(`[File ${name} attached but could not be read]`)]
    return [textPart(`<file name=${name}>\n${text}\n</file>`)]
  }
  return [textPart(`[File ${name} (${file.mediaType}) attached; it cannot be shown to the model]`)]
}

/** How much of a call's arguments and result an older answer's note keeps: the gist, not the whole payload. */
export const noteChars = 2000

function cut(text: string): string {
  return text.length > noteChars ? `${text.slice(0, noteChars)}…` : text
}

/** An earlier answer's tool call written as text: what was called, with what, and what came back. */
export function describeCall(call: HistoryToolCall): string {
  const result = cut(call.result ?? '')
  const status = call.status.replace('_', ' ')
  const outcome = result === '' ? status : call.status === 'ok' ? result : `${status}: ${result}`
  return `[Called ${call.toolName} on ${call.serverName} with ${cut(call.arguments)} → ${outcome}]`
}

/**
 * An answer that called tools, as text: each round's text followed by notes of its calls, then what the answer wrote
 * after its last round. Older answers are never sent as native tool calls, so a changed tool set or a model that
 * refuses tools reads them alike. The stored text is the rounds' texts run together and then the rest; when it is
 * not (an answer whose rounds were not all its own), the notes come first and the text is kept whole.
 */
function textWithCalls(text: string, calls: HistoryToolCall[], roundTexts: string[]): string[] {
  const rounds = [...new Set(calls.map((call) => call.round))].sort((a, b) => a - b)
  const notes = rounds.map((round) =>
    calls
      .filter((call) => call.round === round)
      .sort((a, b) => a.position - b.position)
      .map(describeCall)
      .join('\n'),
  )
  const before = roundTexts.join('')
  if (roundTexts.length !== rounds.length || !text.startsWith(before)) return [...notes, text]
  return [...rounds.flatMap((_, index) => [roundTexts[index] ?? '', notes[index] ?? '']), text.slice(before.length)]
}

async function loadMessage(message: HistoryMessage, images: ImageInput, blobs: BlobStore): Promise<LoadedMessage> {
  const parts: Part[] = []
  let choice: ChoiceBlock | undefined
  const calls = message.toolCalls ?? []
  // An approval asked the thread's owner, not the model: the call's note says how it went.
  const approvals = new Set(calls.flatMap((call) => (call.approvalId ? [call.approvalId] : [])))
  for (const block of message.contents) {
    if (block.type === 'text') {
      if (block.text !== '') parts.push(textPart(block.text))
    } else if (block.type === 'user_get_choice') {
      if (!approvals.has(block.tool_use_id)) choice ??= block
    } else {
      parts.push(...(await attachmentParts(block, message, images, blobs)))
    }
  }
  if (calls.length > 0) {
    const text = textOf(parts.filter((part) => part.type === 'text'))
    const others = parts.filter((part) => part.type !== 'text')
    const written = textWithCalls(text, calls, message.roundTexts ?? [])
      .map((piece) => piece.trim())
      .filter((piece) => piece !== '')
    parts.splice(0, parts.length, ...written.map(textPart), ...others)
  }
  return { id: message.id, role: message.role, parts, choice, ...(message.decision ? { decision: true } : {}) }
}

/** The same messages with every image replaced by a stand-in, for a model that turned out to be text-only. */
export function withoutImages(messages: LoadedMessage[]): LoadedMessage[] {
  return messages.map((message) => ({
    ...message,
    parts: message.parts.map((part) =>
      part.type === 'image' ? textPart('[An image is attached here; this model cannot see images]') : part,
    ),
  }))
}

export function loadHistory(history: HistoryMessage[], images: ImageInput, blobs: BlobStore): Promise<LoadedMessage[]> {
  return Promise.all(history.map((message) => loadMessage(message, images, blobs)))
}

export function textOf(parts: Part[]): string {
  return parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n\n')
}

/** A choice written out, for a model that is not offered the tool or for a question nobody answered. */
export function describeChoice(choice: ChoiceBlock): string {
  return `[I asked the user: ${choice.question} Options: ${choice.choices.join(' | ')}]`
}

export const summaryHeading = 'Summary of the earlier part of this conversation, condensed to save space:'

function userTurn(message: LoadedMessage, previous: Turn | undefined): Turn {
  if (previous?.role !== 'assistant' || !previous.choice) return { role: 'user', parts: message.parts }
  // The message's own text comes first (uploads follow it): that text is the user's pick.
  const [first, ...rest] = message.parts
  const answer = first?.type === 'text' ? first.text : '(no answer)'
  const parts = first?.type === 'text' ? rest : message.parts
  return { role: 'user', parts, answers: { toolUseId: previous.choice.tool_use_id, text: answer } }
}

function assistantTurn(message: LoadedMessage, next: LoadedMessage | undefined, tool: ChoiceTool): Turn {
  const text = textOf(message.parts)
  if (!message.choice) return { role: 'assistant', text }
  if (tool === 'offer' && next?.role === 'user') return { role: 'assistant', text, choice: message.choice }
  return { role: 'assistant', text: [text, describeChoice(message.choice)].filter(Boolean).join('\n\n') }
}

function isEmpty(turn: Turn): boolean {
  return turn.role === 'user' ? turn.parts.length === 0 && !turn.answers : turn.text === '' && !turn.choice
}

/**
 * Builds the turns to send. Summaries become user turns (every vendor accepts those anywhere), and
 * consecutive user turns are merged, since several chat templates of local models insist that roles
 * alternate.
 */
export function toTurns(messages: LoadedMessage[], tool: ChoiceTool): Turn[] {
  const turns: Turn[] = []
  messages.forEach((message, index) => {
    if (message.decision) return
    const previous = turns.at(-1)
    const turn =
      message.role === 'summary'
        ? ({ role: 'user', parts: [textPart(summaryHeading), ...message.parts] } satisfies Turn)
        : message.role === 'assistant'
          ? assistantTurn(message, messages[index + 1], tool)
          : userTurn(message, previous)
    if (isEmpty(turn)) return
    if (turn.role === 'user' && !turn.answers && previous?.role === 'user') {
      previous.parts.push(...turn.parts)
      return
    }
    turns.push(turn.role === 'user' ? { ...turn, parts: [...turn.parts] } : turn)
  })
  return turns
}

/**
 * The rounds of tool calls an answer has made so far, after the question they answer. `native` sends them as the
 * vendor's tool calls and results; `text` writes them out, for a request that offers no tools (a vendor rejects tool
 * calls it was not offered tools for).
 */
export function roundTurns(rounds: ToolRound[], form: 'native' | 'text'): Turn[] {
  if (form === 'native') {
    return rounds.flatMap((round): Turn[] => [
      { role: 'assistant', text: round.text.trim(), calls: round.calls },
      { role: 'user', parts: [], results: round.results },
    ])
  }
  return rounds.map((round) => {
    const notes = round.calls.map((call) => {
      const result = round.results.find((each) => each.id === call.id)
      const outcome = !result ? 'no result' : result.isError ? `error: ${cut(result.content)}` : cut(result.content)
      return `[Called ${call.name} with ${cut(call.arguments)} → ${outcome}]`
    })
    return { role: 'assistant', text: [round.text.trim(), ...notes].filter(Boolean).join('\n\n') }
  })
}

/**
 * The turns of an answer with tool rounds: the rounds follow the question they answer (`after`, else the end of the
 * history). Messages after that question (the person's own words instead of Allow or Deny) follow the rounds.
 */
export function withRounds(
  messages: LoadedMessage[],
  tool: ChoiceTool,
  rounds: ToolRound[],
  form: 'native' | 'text',
  after?: string,
): Turn[] {
  if (rounds.length === 0) return toTurns(messages, tool)
  const at = after === undefined ? -1 : messages.findIndex((message) => message.id === after)
  const split = at === -1 ? messages.length : at + 1
  const later = toTurns(messages.slice(split), tool)
  const turns = [...toTurns(messages.slice(0, split), tool), ...roundTurns(rounds, form), ...later]
  return mergeUsers(turns)
}

/** Written rounds are assistant turns, and words after them user turns: merged as toTurns merges its own. */
function mergeUsers(turns: Turn[]): Turn[] {
  const merged: Turn[] = []
  for (const turn of turns) {
    const previous = merged.at(-1)
    if (turn.role === 'user' && previous?.role === 'user' && !turn.answers && !turn.results) {
      merged[merged.length - 1] = { ...previous, parts: [...previous.parts, ...turn.parts] }
    } else if (turn.role === 'assistant' && previous?.role === 'assistant' && !previous.calls && !previous.choice) {
      merged[merged.length - 1] = { ...turn, text: [previous.text, turn.text].filter(Boolean).join('\n\n') }
    } else {
      merged.push(turn)
    }
  }
  return merged
}

/** The history as plain text, for the model that writes a summary of it. */
export function transcriptEntry(message: LoadedMessage): string {
  const text = message.parts.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n')
  if (message.role === 'summary') return `Earlier summary:\n${text}`
  if (message.role === 'user') return `User: ${text}`
  const asked = message.choice ? `\n${describeChoice(message.choice)}` : ''
  return `Assistant: ${text}${asked}`
}
