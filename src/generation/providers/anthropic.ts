// Anthropic's Messages API, streamed, through the official `@anthropic-ai/sdk`.
import Anthropic from '@anthropic-ai/sdk'
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages'
import type { ModelSettings, OfferedTool, TokenUsage } from '../types'
import {
  choiceToolDescription,
  choiceToolName,
  choiceToolSchema,
  firstChoice,
  otherCalls,
  type PendingCall,
  toolUseId,
} from './choice-tool'
import type { Part, Turn } from './conversation'
import { IdleDeadline } from './deadline'
import { type FailureContext, failure, ProviderFailure, replyFailure } from './failures'
import type { ChatModel, ModelRequest, ReplyEvent } from './model'

const anthropicUrl = 'https://api.anthropic.com'

const choiceTool: Tool = {
  name: choiceToolName,
  description: choiceToolDescription,
  input_schema: choiceToolSchema as unknown as Tool.InputSchema,
}

type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'

function partBlock(part: Part): ContentBlockParam {
  if (part.type === 'text') return { type: 'text', text: part.text }
  return { type: 'image', source: { type: 'base64', media_type: part.mediaType as ImageMediaType, data: part.data } }
}

/** A call's arguments as the object Anthropic wants; text that is not a JSON object is passed under `input`. */
function inputOf(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text)
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {}
  return { input: text }
}

function turnMessage(turn: Turn): MessageParam {
  if (turn.role === 'assistant') {
    const content: ContentBlockParam[] = turn.text === '' ? [] : [{ type: 'text', text: turn.text }]
    for (const call of turn.calls ?? []) {
      content.push({ type: 'tool_use', id: toolUseId(call.id), name: call.name, input: inputOf(call.arguments) })
    }
    if (turn.choice) {
      const { tool_use_id, question, choices } = turn.choice
      content.push({ type: 'tool_use', id: toolUseId(tool_use_id), name: choiceToolName, input: { question, choices } })
    }
    return { role: 'assistant', content }
  }
  // Tool results have to come first in the user turn that follows the tool calls.
  const results: ContentBlockParam[] = (turn.results ?? []).map((result) => ({
    type: 'tool_result',
    tool_use_id: toolUseId(result.id),
    content: result.content,
    ...(result.isError ? { is_error: true } : {}),
  }))
  if (turn.answers) {
    results.push({ type: 'tool_result', tool_use_id: toolUseId(turn.answers.toolUseId), content: turn.answers.text })
  }
  return { role: 'user', content: [...results, ...turn.parts.map(partBlock)] }
}

function offeredTool(tool: OfferedTool): Tool {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema as Tool.InputSchema }
}

/** The choice tool first, then the answer's tools; `none` keeps them defined (earlier tool_use blocks need them). */
function toolParams(request: ModelRequest): Partial<MessageCreateParamsStreaming> {
  if (request.choiceTool === 'withhold') return {}
  const tools = [choiceTool, ...request.tools.map(offeredTool)]
  return request.toolChoice === 'none' ? { tools, tool_choice: { type: 'none' } } : { tools }
}

export function anthropicMessages(turns: Turn[]): MessageParam[] {
  return turns.map(turnMessage)
}

function anthropicFailure(error: unknown, context: FailureContext, phase: 'connecting' | 'streaming'): unknown {
  if (error instanceof Anthropic.APIConnectionTimeoutError) return failure('timeout', context)
  if (error instanceof Anthropic.APIConnectionError) return failure('unreachable', context)
  if (error instanceof Anthropic.APIError) {
    return replyFailure(
      {
        status: error.status,
        type: error.type ?? undefined,
        message: error.apiMessage ?? undefined,
        headers: error.headers,
      },
      context,
    )
  }
  if (error instanceof SyntaxError) return failure('bad_response', context)
  return failure(phase === 'streaming' ? 'stream_broken' : 'unreachable', context)
}

export function anthropicModel(settings: ModelSettings): ChatModel {
  const client = new Anthropic({
    // A key is always passed, so the SDK never looks for credentials in the environment or on disk.
    apiKey: settings.apiKey ?? 'unused',
    baseURL: settings.baseUrl ?? anthropicUrl,
    defaultHeaders: settings.extraHeaders,
    timeout: settings.timeoutMs,
    // Retries are ours (retry.ts): they also cover `overloaded_error` events inside the stream.
    maxRetries: 0,
    logLevel: 'off',
  })
  const context: FailureContext = { model: settings.model, apiKey: settings.apiKey }

  return {
    async *reply(request: ModelRequest, signal: AbortSignal): AsyncIterable<ReplyEvent> {
      using deadline = new IdleDeadline(settings.timeoutMs, signal)
      const params: MessageCreateParamsStreaming = {
        model: settings.model,
        max_tokens: request.maxOutputTokens,
        messages: anthropicMessages(request.turns),
        stream: true,
        ...(request.system === '' ? {} : { system: request.system }),
        ...toolParams(request),
      }
      const toolUses = new Map<number, PendingCall>()
      const usage: TokenUsage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 }
      let reported = false
      let finished = false
      let phase: 'connecting' | 'streaming' = 'connecting'
      try {
        const stream = await client.messages.create(params, { signal: deadline.signal })
        phase = 'streaming'
        for await (const event of stream as AsyncIterable<RawMessageStreamEvent>) {
          deadline.touch()
          const text = readEvent(event, toolUses)
          if (text) yield { type: 'text', text }
          if (readUsage(event, usage)) reported = true
          if (event.type === 'message_stop') finished = true
        }
      } catch (error) {
        signal.throwIfAborted()
        if (deadline.timedOut) throw failure('timeout', context)
        if (error instanceof ProviderFailure) throw error
        throw anthropicFailure(error, context, phase)
      }
      // The SDK ends quietly when its request is aborted, so an early end is checked for here.
      signal.throwIfAborted()
      if (deadline.timedOut) throw failure('timeout', context)
      if (!finished) throw failure('stream_broken', context)
      const others = otherCalls(toolUses)
      if (others) yield others
      const choice = firstChoice(toolUses)
      if (choice) yield choice
      if (reported) yield { type: 'usage', usage }
    },
  }
}

/**
 * Anthropic counts the prompt in three parts (`input_tokens` excludes what was read from or written to the cache):
 * `message_start` has them, `message_delta` the output so far (cumulative). Input here is their sum, of which the
 * cache reads are `cachedInputTokens`. True when the event reported usage.
 */
function readUsage(event: RawMessageStreamEvent, usage: TokenUsage): boolean {
  if (event.type === 'message_start') {
    const reported = event.message.usage
    if (!reported) return false
    const cached = reported.cache_read_input_tokens ?? 0
    usage.inputTokens = (reported.input_tokens ?? 0) + cached + (reported.cache_creation_input_tokens ?? 0)
    usage.cachedInputTokens = cached
    usage.outputTokens = reported.output_tokens ?? 0
    return true
  }
  if (event.type === 'message_delta' && event.usage) {
    usage.outputTokens = event.usage.output_tokens ?? usage.outputTokens
    return true
  }
  return false
}

/** Returns the text an event adds; tool input JSON is gathered per content block. Thinking is dropped. */
function readEvent(event: RawMessageStreamEvent, toolUses: Map<number, PendingCall>): string {
  if (event.type === 'content_block_start') {
    const block = event.content_block
    if (block.type === 'text') return block.text
    if (block.type === 'tool_use') toolUses.set(event.index, { id: block.id, name: block.name, input: '' })
    return ''
  }
  if (event.type === 'content_block_delta') {
    const delta = event.delta
    if (delta.type === 'text_delta') return delta.text
    if (delta.type === 'input_json_delta') {
      const use = toolUses.get(event.index)
      if (use) use.input += delta.partial_json
    }
  }
  return ''
}

/** Only the first question is kept: the user can answer one at a time. */
