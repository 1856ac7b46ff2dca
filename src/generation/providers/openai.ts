// The Chat Completions streaming protocol through the official `openai` SDK: OpenAI itself and the
// servers that speak the same protocol (Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter).
import OpenAI from 'openai'
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions'
import type { ModelSettings, OfferedTool, TokenUsage } from '../types'
import {
  choiceToolDescription,
  choiceToolName,
  choiceToolSchema,
  firstChoice,
  otherCalls,
  type PendingCall,
} from './choice-tool'
import type { Part, Turn } from './conversation'
import { IdleDeadline } from './deadline'
import { type FailureContext, failure, ProviderFailure, replyFailure } from './failures'
import type { ChatModel, ModelRequest, ReplyEvent } from './model'

const openaiUrl = 'https://api.openai.com/v1'

const choiceTool: ChatCompletionTool = {
  type: 'function',
  function: { name: choiceToolName, description: choiceToolDescription, parameters: choiceToolSchema },
}

/** Plain strings where possible: some local servers accept nothing else for text-only messages. */
function userContent(parts: Part[]): string | ChatCompletionContentPart[] {
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => part.text).join('\n\n')
  return parts.map(
    (part): ChatCompletionContentPart =>
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : { type: 'image_url', image_url: { url: `data:${part.mediaType};base64,${part.data}` } },
  )
}

function functionTool(tool: OfferedTool): ChatCompletionTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  }
}

function turnMessages(turn: Turn): ChatCompletionMessageParam[] {
  if (turn.role === 'assistant') {
    const calls = (turn.calls ?? []).map((call) => ({
      id: call.id,
      type: 'function' as const,
      function: { name: call.name, arguments: call.arguments },
    }))
    if (turn.choice) {
      const { tool_use_id, question, choices } = turn.choice
      calls.push({
        id: tool_use_id,
        type: 'function',
        function: { name: choiceToolName, arguments: JSON.stringify({ question, choices }) },
      })
    }
    if (calls.length === 0) return [{ role: 'assistant', content: turn.text }]
    return [{ role: 'assistant', content: turn.text === '' ? null : turn.text, tool_calls: calls }]
  }
  // Each result is a message of its own, right after the assistant message that called the tools.
  const messages: ChatCompletionMessageParam[] = (turn.results ?? []).map((result) => ({
    role: 'tool',
    tool_call_id: result.id,
    content: result.isError ? `Error: ${result.content}` : result.content,
  }))
  if (turn.answers) messages.push({ role: 'tool', tool_call_id: turn.answers.toolUseId, content: turn.answers.text })
  if (turn.parts.length > 0) messages.push({ role: 'user', content: userContent(turn.parts) })
  return messages
}

/** The choice tool first, then the answer's tools; `none` keeps them defined but lets the model call none. */
function toolParams(request: ModelRequest): Partial<ChatCompletionCreateParamsStreaming> {
  if (request.choiceTool === 'withhold') return {}
  const tools = [choiceTool, ...request.tools.map(functionTool)]
  return request.toolChoice === 'none' ? { tools, tool_choice: 'none' } : { tools }
}

export function openaiMessages(request: Pick<ModelRequest, 'system' | 'turns'>): ChatCompletionMessageParam[] {
  const system: ChatCompletionMessageParam[] =
    request.system === '' ? [] : [{ role: 'system', content: request.system }]
  return [...system, ...request.turns.flatMap(turnMessages)]
}

/**
 * OpenAI's own API wants `max_completion_tokens` (its reasoning models reject `max_tokens`), while
 * compatible servers have long understood only `max_tokens`.
 */
function outputLimit(settings: ModelSettings, tokens: number): Partial<ChatCompletionCreateParamsStreaming> {
  return settings.baseUrl === undefined ? { max_completion_tokens: tokens } : { max_tokens: tokens }
}

function openaiFailure(error: unknown, context: FailureContext, phase: 'connecting' | 'streaming'): unknown {
  if (error instanceof OpenAI.APIConnectionTimeoutError) return failure('timeout', context)
  if (error instanceof OpenAI.APIConnectionError) return failure('unreachable', context)
  if (error instanceof OpenAI.APIError) {
    const body = (error.error ?? {}) as { message?: unknown; code?: unknown; type?: unknown }
    // OpenRouter puts the upstream HTTP status in `code` of an error sent inside the stream.
    const embedded = typeof body.code === 'number' ? body.code : undefined
    return replyFailure(
      {
        status: error.status ?? embedded,
        type: [body.type, body.code].filter((value) => typeof value === 'string').join(' '),
        message: typeof body.message === 'string' ? body.message : undefined,
        headers: error.headers,
      },
      context,
    )
  }
  if (error instanceof SyntaxError) return failure('bad_response', context)
  return failure(phase === 'streaming' ? 'stream_broken' : 'unreachable', context)
}

/** Tool-call arguments arrive in pieces, keyed by the call's index. */
function collectToolCalls(calls: Map<number, PendingCall>, chunk: ChatCompletionChunk): void {
  for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
    const index = delta.index ?? 0
    const call = calls.get(index) ?? { name: '', input: '' }
    call.id ??= delta.id ?? undefined
    call.name += delta.function?.name ?? ''
    call.input += delta.function?.arguments ?? ''
    calls.set(index, call)
  }
}

/** Only the first question is kept: the user can answer one at a time. */
export function openaiModel(settings: ModelSettings): ChatModel {
  const client = new OpenAI({
    // Local servers need no key, but the SDK insists on one; they ignore what they are sent.
    apiKey: settings.apiKey ?? 'unused',
    baseURL: settings.baseUrl ?? openaiUrl,
    organization: null,
    project: null,
    adminAPIKey: null,
    defaultHeaders: settings.extraHeaders,
    timeout: settings.timeoutMs,
    // Retries are ours (retry.ts): they also cover failures inside the stream.
    maxRetries: 0,
    logLevel: 'off',
  })
  const context: FailureContext = { model: settings.model, apiKey: settings.apiKey }

  return {
    async *reply(request, signal): AsyncIterable<ReplyEvent> {
      using deadline = new IdleDeadline(settings.timeoutMs, signal)
      const params: ChatCompletionCreateParamsStreaming = {
        model: settings.model,
        messages: openaiMessages(request),
        stream: true,
        // The usage chunk (no choices) ends the stream; servers that do not know the option ignore it.
        stream_options: { include_usage: true },
        ...outputLimit(settings, request.maxOutputTokens),
        ...toolParams(request),
      }
      const calls = new Map<number, PendingCall>()
      let usage: TokenUsage | undefined
      let finished = false
      let phase: 'connecting' | 'streaming' = 'connecting'
      try {
        const stream = await client.chat.completions.create(params, { signal: deadline.signal })
        phase = 'streaming'
        for await (const chunk of stream) {
          deadline.touch()
          if (chunk.usage) usage = openaiUsage(chunk.usage)
          // Chunks with no choice carry only usage; reasoning deltas are not part of the answer.
          const choice = chunk.choices?.[0]
          if (!choice) continue
          const text = choice.delta?.content
          if (text) yield { type: 'text', text }
          collectToolCalls(calls, chunk)
          if (choice.finish_reason) finished = true
        }
      } catch (error) {
        signal.throwIfAborted()
        if (deadline.timedOut) throw failure('timeout', context)
        if (error instanceof ProviderFailure) throw error
        throw openaiFailure(error, context, phase)
      }
      // The SDK ends quietly when its request is aborted, so an early end is checked for here.
      signal.throwIfAborted()
      if (deadline.timedOut) throw failure('timeout', context)
      if (!finished) throw failure('stream_broken', context)
      const others = otherCalls(calls)
      if (others) yield others
      const choice = firstChoice(calls)
      if (choice) yield choice
      if (usage) yield { type: 'usage', usage }
    },
  }
}

/** `prompt_tokens` counts the cached part too; some compatible servers send only the totals. */
function openaiUsage(usage: NonNullable<ChatCompletionChunk['usage']>): TokenUsage {
  return {
    inputTokens: usage.prompt_tokens ?? 0,
    outputTokens: usage.completion_tokens ?? 0,
    cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
  }
}
