// The `user_get_choice` tool the model is offered for asking the user to pick one of several options.
// A call of it becomes a `user_get_choice` content block; the user's next message is its result.
import type { ThreadsModel } from '../../threads/model'
import type { ReplyEvent } from './model'

export const choiceToolName = 'user_get_choice'

export const choiceToolDescription =
  'Ask the user to pick one of a few options, shown to them as buttons. Use it when you cannot go on ' +
  'without the user deciding between clear alternatives; the option they pick (or their own words) comes ' +
  'back as the result. Ask at most one such question per answer, and not for open questions.'

/** JSON Schema of the tool's input, as both vendors expect it. */
export const choiceToolSchema = {
  type: 'object',
  properties: {
    question: { type: 'string', description: 'The question, as the user will read it.' },
    choices: {
      type: 'array',
      items: { type: 'string' },
      minItems: 2,
      description: 'The options, each short, in the order to show them.',
    },
  },
  required: ['question', 'choices'],
  additionalProperties: false,
} as const

export type ChoiceBlock = Extract<ThreadsModel.contentBlock, { type: 'user_get_choice' }>

/** Both vendors accept these characters in a tool-use ID; anything else is replaced. */
export function toolUseId(raw: string | undefined): string {
  const clean = (raw ?? '').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)
  return clean === '' ? `choice_${crypto.randomUUID().replaceAll('-', '')}` : clean
}

/**
 * Reads the tool's input (a JSON string from OpenAI-style servers, an object from Anthropic). Returns
 * null when the model called the tool with something unusable, which is then dropped rather than
 * failing the whole answer.
 */
export function choiceBlock(id: string | undefined, input: unknown): ChoiceBlock | null {
  let value = input
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value === '' ? '{}' : value)
    } catch {
      return null
    }
  }
  if (typeof value !== 'object' || value === null) return null
  const { question, choices } = value as { question?: unknown; choices?: unknown }
  if (typeof question !== 'string' || question.trim() === '' || !Array.isArray(choices)) return null
  const options = choices.filter((choice): choice is string => typeof choice === 'string' && choice.trim() !== '')
  if (options.length === 0) return null
  return { type: 'user_get_choice', tool_use_id: toolUseId(id), question, choices: options }
}

/** The arguments a choice block was asked with, as the model wrote them. */
export function choiceInput(block: ChoiceBlock): { question: string; choices: string[] } {
  return { question: block.question, choices: block.choices }
}

/** A tool call as it streams in: its input arrives as pieces of JSON text. */
export interface PendingCall {
  id?: string
  name: string
  input: string
}

/** Every call of a reply but the choice tool's, in the reply's order: the tools the answer's loop runs. */
export function otherCalls(calls: Map<number, PendingCall>): ReplyEvent | null {
  const others = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .flatMap(([, call]) =>
      call.name === choiceToolName ? [] : [{ id: toolUseId(call.id), name: call.name, arguments: call.input }],
    )
  return others.length === 0 ? null : { type: 'tool_calls', calls: others }
}

/** The first usable choice among a reply's tool calls, keyed by their position in the reply. */
export function firstChoice(calls: Map<number, PendingCall>): ReplyEvent | null {
  for (const [, call] of [...calls.entries()].sort(([a], [b]) => a - b)) {
    if (call.name !== choiceToolName) continue
    const block = choiceBlock(call.id, call.input)
    if (block) return { type: 'block', block }
  }
  return null
}
