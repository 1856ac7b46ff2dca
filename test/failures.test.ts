// Provider failures told apart: what is retried, and what the user reads.
import { expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import {
  describeForLog,
  failure,
  ProviderFailure,
  replyFailure,
  retryAfterMs,
} from '../src/generation/providers/failures'
import { type ChatModel, modelGenerator } from '../src/generation/providers/model'
import { LocalBlobStore } from '../src/storage/blobs'
import { type FakeLlm, settingsFor } from './support/fake-llm'

/** Where generators here would read attachments: these histories have none. */
const noFiles = new LocalBlobStore(tmpdir())

const context = { model: 'gpt-test', apiKey: 'sk-proj-abcdef0123456789' }

test('a plain bad request shows the provider’s reason, without anything key-like', () => {
  const failure = replyFailure(
    { status: 400, message: `temperature must be <= 2 (key sk-proj-abcdef0123456789, org key_live_998877665544)` },
    context,
  )
  expect(failure.kind).toBe('bad_request')
  expect(failure.transient).toBe(false)
  expect(failure.message).toBe(
    'The AI provider rejected the request (HTTP 400): temperature must be <= 2 (key [key], org [key])',
  )
})

test('other secrets in a provider’s reason are hidden too, but model names and numbers stay readable', () => {
  const reason = (message: string) =>
    replyFailure({ status: 400, message }, context).message.split(': ').slice(1).join(': ')
  expect(reason('Invalid header: Bearer abcdef1234567890XYZ')).toBe('Invalid header: Bearer [key]')
  expect(reason('api_key=AIzaSyA1234567890abcdefghijklmnopqrs is invalid')).toBe('api_key=[key] is invalid')
  expect(reason('key AIzaSyA1234567890abcdefghijklmnopqrs expired')).toBe('key [key] expired')
  // A long opaque value, such as a secret from LLM_EXTRA_HEADERS echoed back.
  expect(reason('x-custom header value 0123456789abcdef0123456789abcdef01 rejected')).toBe(
    'x-custom header value [key] rejected',
  )
  expect(reason('Invalid model name gpt-4o-mini-2024-07-18; max_tokens 999999 exceeds 4096')).toBe(
    'Invalid model name gpt-4o-mini-2024-07-18; max_tokens 999999 exceeds 4096',
  )
  expect(reason('temperature must be <= 2 for mistralai/Mixtral-8x7B-Instruct-v0.1')).toBe(
    'temperature must be <= 2 for mistralai/Mixtral-8x7B-Instruct-v0.1',
  )
})

test('an exhausted quota is not retried, a rate limit is', () => {
  const quota = replyFailure(
    {
      status: 429,
      type: 'insufficient_quota',
      message: 'You exceeded your current quota, please check your plan and billing details.',
    },
    context,
  )
  expect([quota.kind, quota.transient, quota.message]).toEqual([
    'quota',
    false,
    'The AI provider account has run out of credit or quota.',
  ])
  const limited = replyFailure({ status: 429, type: 'rate_limit_exceeded', message: 'Slow down' }, context)
  expect([limited.kind, limited.transient]).toEqual(['rate_limited', true])
})

test('a context overflow and a tool refusal are recognised from the message', () => {
  const overflow = replyFailure(
    { status: 400, type: 'context_length_exceeded', message: "This model's maximum context length is 8192 tokens." },
    context,
  )
  expect(overflow.kind).toBe('context_too_long')
  const llamacpp = replyFailure({ status: 500, message: 'tools param requires --jinja flag' }, context)
  expect(llamacpp.kind).toBe('tools_unsupported')
  const ollama = replyFailure(
    { status: 400, message: 'registry.ollama.ai/library/gemma2:2b does not support tools' },
    context,
  )
  expect(ollama.kind).toBe('tools_unsupported')
})

test('Retry-After is read in seconds, as a date, or as OpenAI’s retry-after-ms', () => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  expect(retryAfterMs(new Headers({ 'retry-after': '2' }), now)).toBe(2000)
  expect(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000)
  expect(retryAfterMs(new Headers({ 'retry-after-ms': '150', 'retry-after': '9' }), now)).toBe(150)
  expect(retryAfterMs(new Headers(), now)).toBeUndefined()
})

test('an unforeseen error inside a model generator becomes a plain sentence, and its cause goes to the log', async () => {
  const key = 'sk-secret-key-0123456789'
  const broken: ChatModel = {
    // biome-ignore lint/correctness/useYield: the model fails before its first event
    async *reply() {
      throw new TypeError(`cannot read choices of undefined (while using ${key})`)
    },
  }
  const settings = settingsFor('openai', { url: 'http://127.0.0.1:1' } as FakeLlm, { apiKey: key })
  const generator = modelGenerator(broken, settings, noFiles)
  let caught: unknown
  try {
    for await (const _ of generator.generate({
      history: [{ id: 'm', role: 'user', contents: [{ type: 'text', text: 'hi' }] }],
      signal: new AbortController().signal,
    })) {
    }
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(ProviderFailure)
  expect((caught as ProviderFailure).message).toBe('Something went wrong while generating the answer.')
  const logged = describeForLog(caught, key)
  expect(logged).toContain('TypeError: cannot read choices of undefined')
  expect(logged).not.toContain(key)
  expect(describeForLog(replyFailure({ status: 429 }, { model: 'm' }), key)).toBeNull()
})

test('a failure after part of the answer has streamed is not retried without the tool, which would repeat that part', async () => {
  let calls = 0
  const halfway: ChatModel = {
    async *reply() {
      calls++
      yield { type: 'text', text: 'Half an answer' }
      throw failure('tools_unsupported', { model: 'm' })
    },
  }
  const settings = settingsFor('openai', { url: 'http://127.0.0.1:1' } as FakeLlm)
  const streamed: string[] = []
  let caught: unknown
  try {
    for await (const event of modelGenerator(halfway, settings, noFiles).generate({
      history: [{ id: 'm', role: 'user', contents: [{ type: 'text', text: 'hi' }] }],
      signal: new AbortController().signal,
    })) {
      if (event.type === 'text') streamed.push(event.text)
    }
  } catch (error) {
    caught = error
  }
  expect({ calls, streamed, kind: (caught as ProviderFailure).kind }).toEqual({
    calls: 1,
    streamed: ['Half an answer'],
    kind: 'tools_unsupported',
  })
})
