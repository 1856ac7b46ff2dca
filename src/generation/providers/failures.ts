// What can go wrong when talking to a model, told apart once for both providers: which failures are
// worth retrying, and the sentence the user reads in the stream's `error` event. The sentences name
// the configuration variable to check, and never carry a key, a header value or a stack trace.

export type FailureKind =
  | 'auth'
  | 'permission'
  | 'quota'
  | 'model_not_found'
  | 'endpoint_not_found'
  | 'rate_limited'
  | 'overloaded'
  | 'server_error'
  | 'unreachable'
  | 'timeout'
  | 'stream_broken'
  | 'context_too_long'
  | 'tools_unsupported'
  | 'images_unsupported'
  | 'bad_request'
  | 'bad_response'
  | 'unexpected'

/** Failures that another attempt may not meet; the rest would fail the same way again. */
const transientKinds = new Set<FailureKind>([
  'rate_limited',
  'overloaded',
  'server_error',
  'unreachable',
  'timeout',
  'stream_broken',
])

export class ProviderFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** How long the provider asked us to wait (Retry-After), if it said. */
    readonly retryAfterMs?: number,
  ) {
    super(message)
  }

  get transient(): boolean {
    return transientKinds.has(this.kind)
  }
}

/** What the failing request was about, to make the sentence specific and to scrub secrets from it. */
export interface FailureContext {
  model: string
  apiKey?: string
}

/** The parts of an HTTP error response (or of an error event inside a stream) that matter here. */
export interface ErrorReply {
  /** Absent for an error event inside an otherwise successful stream. */
  status?: number
  /** The provider's error type or code, such as `rate_limit_error` or `model_not_found`. */
  type?: string
  message?: string
  headers?: Headers
}

const sentences: Record<FailureKind, (context: FailureContext, status?: number) => string> = {
  auth: () => 'The AI provider rejected the API key. An administrator should check the key configured for this model.',
  permission: () => 'The AI provider refused the request: the API key has no access to this model or feature.',
  quota: () => 'The AI provider account has run out of credit or quota.',
  model_not_found: ({ model }) =>
    `The AI provider does not offer the model "${model}". An administrator should check the model’s name in ` +
    'the configuration ' +
    '(with Ollama, pull the model first).',
  endpoint_not_found: () =>
    'The AI provider has no chat endpoint at the configured address. An administrator should check the ' +
    'model’s base URL (OpenAI-compatible servers usually end in /v1).',
  rate_limited: () => 'The AI provider is rate limiting requests. Please try again in a minute.',
  overloaded: () => 'The AI provider is overloaded right now. Please try again shortly.',
  server_error: (_, status) =>
    `The AI provider had an internal error${status ? ` (HTTP ${status})` : ''}. Please try again later.`,
  unreachable: () =>
    'Could not reach the AI provider. An administrator should check that it is running and that the model’s base URL is right.',
  timeout: () => 'The AI provider did not respond in time (see LLM_TIMEOUT_MS).',
  stream_broken: () => 'The connection to the AI provider broke off in the middle of the answer.',
  context_too_long: () =>
    'This conversation is too long for the model. An administrator can lower its context size so that ' +
    'older turns get summarised.',
  tools_unsupported: () => 'The model does not support tools.',
  images_unsupported: () => 'The model does not accept images.',
  bad_request: () => 'The AI provider rejected the request.',
  bad_response: () => 'The AI provider sent an answer that could not be read.',
  unexpected: () => 'Something went wrong while generating the answer.',
}

export function failure(kind: FailureKind, context: FailureContext, status?: number): ProviderFailure {
  return new ProviderFailure(kind, sentences[kind](context, status))
}

/**
 * Provider error text is shown only for plain bad requests, shortened and without anything key-like: the
 * configured key, `sk-…`-style prefixed keys, Google's `AIza…`, a value after `Bearer` or a `key=`/`token:` label,
 * and any run of 32 or more key characters: real keys are long, which also covers secrets in LLM_EXTRA_HEADERS.
 */
function scrub(text: string, context: FailureContext): string {
  // Cut first: a provider echoing a long request must not make the patterns below run over all of it.
  let clean = text.slice(0, 2000).replace(/\s+/g, ' ').trim()
  if (context.apiKey) clean = clean.split(context.apiKey).join('[key]')
  clean = clean
    .replace(
      /\b(bearer|api[-_]?key|access[-_]?token|token|secret|key|password)(\s*[=:]\s*|\s+)(?=\S*\d)\S{6,}/gi,
      '$1$2[key]',
    )
    .replace(/\b(sk|key|token|bearer)[-_][A-Za-z0-9_\-*.]{6,}/gi, '[key]')
    .replace(/\bAIza[0-9A-Za-z_-]{20,}/g, '[key]')
    .replace(/[A-Za-z0-9_-]{32,}/g, '[key]')
  return clean.length > 200 ? `${clean.slice(0, 199)}…` : clean
}

/** Retry-After in either of its forms (seconds or an HTTP date), and OpenAI's `retry-after-ms`. */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const millis = Number.parseFloat(headers?.get('retry-after-ms') ?? '')
  if (Number.isFinite(millis) && millis >= 0) return millis
  const raw = headers?.get('retry-after')
  if (!raw) return undefined
  const seconds = Number.parseFloat(raw)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(raw)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * How servers say that the model cannot use tools at all (Ollama, llama.cpp without --jinja, vLLM
 * without a tool parser), and those that refuse `tool_choice` (model.ts then writes the rounds out, for that request
 * only). Narrow on purpose: the fallback drops the tool for the rest of the process.
 */
const toolsRefused =
  /does not support tools|tools? (is |are )?not supported|not support (tools|function calling)|requires --jinja|tool.?choice requires|tool.?choice[^.]{0,40}not supported/i

/** How servers say that the model takes no image input (text-only models behind vision-capable APIs). */
const imagesRefused =
  /does not support (image|vision|multimodal)|(image|vision|multimodal)[^.]{0,40}not supported|image input is not|cannot (read|process|accept) images|no vision/i

function kindOfStatus(status: number, reply: ErrorReply): FailureKind {
  const text = `${reply.type ?? ''} ${reply.message ?? ''}`
  // Checked first: some servers refuse tools with a 5xx, which would otherwise be retried in vain.
  if (toolsRefused.test(text)) return 'tools_unsupported'
  if (imagesRefused.test(text)) return 'images_unsupported'
  if (status === 401) return 'auth'
  if (status === 402) return 'quota'
  if (status === 403) return 'permission'
  if (status === 404) return /model/i.test(text) ? 'model_not_found' : 'endpoint_not_found'
  if (status === 413) return 'context_too_long'
  if (status === 429) return /quota|billing|credit/i.test(text) ? 'quota' : 'rate_limited'
  if (status === 503 || status === 529) return 'overloaded'
  if (status === 408 || status === 409 || status >= 500) return 'server_error'
  if (/context|too long|too many tokens|maximum.*tokens/i.test(text)) return 'context_too_long'
  if (/model/i.test(text) && /not (found|exist)|does not exist|unknown/i.test(text)) return 'model_not_found'
  return 'bad_request'
}

/** An error event inside a stream has no status; its type says what it is. */
function kindOfStreamError(reply: ErrorReply): FailureKind {
  const text = `${reply.type ?? ''} ${reply.message ?? ''}`
  if (/rate.?limit/i.test(text)) return 'rate_limited'
  if (/overload/i.test(text)) return 'overloaded'
  if (/authentication|invalid.?api.?key/i.test(text)) return 'auth'
  if (/permission/i.test(text)) return 'permission'
  if (/invalid.?request/i.test(text)) return kindOfStatus(400, reply)
  return 'server_error'
}

export function replyFailure(reply: ErrorReply, context: FailureContext): ProviderFailure {
  const kind = reply.status === undefined ? kindOfStreamError(reply) : kindOfStatus(reply.status, reply)
  const status = reply.status
  if (kind === 'bad_request' || kind === 'tools_unsupported' || kind === 'images_unsupported') {
    const detail = reply.message ? `: ${scrub(reply.message, context)}` : ''
    return new ProviderFailure(
      kind,
      `The AI provider rejected the request${status ? ` (HTTP ${status})` : ''}${detail}`,
    )
  }
  return new ProviderFailure(kind, sentences[kind](context, status), retryAfterMs(reply.headers))
}

/**
 * A bug or an unforeseen failure, as text for the server log, with the API key taken out; null for an
 * ordinary provider failure, whose sentence already says everything.
 */
export function describeForLog(error: unknown, apiKey: string | undefined): string | null {
  const original = error instanceof ProviderFailure ? error.cause : error
  if (original === undefined) return null
  const text = original instanceof Error ? (original.stack ?? original.message) : String(original)
  return apiKey ? text.split(apiKey).join('[key]') : text
}
