// Turns the configuration into what the generation worker is started with. The API key travels only
// to the worker; what gets logged is `describeProvider`, which leaves it out.
import type { Config } from '../config'
import type { ProviderSettings } from './types'

/** The first retry waits this long, the next twice as long, and so on (capped; see providers/retry.ts). */
const retryBaseDelayMs = 500

export function providerSettings(config: Config): ProviderSettings {
  if (config.LLM_PROVIDER === 'echo') return { provider: 'echo', echoTokenDelayMs: config.ECHO_TOKEN_DELAY_MS }
  return {
    provider: config.LLM_PROVIDER,
    // checkProvider in config.ts has made sure a real provider has a model.
    model: config.LLM_MODEL ?? '',
    baseUrl: config.LLM_BASE_URL,
    apiKey: config.LLM_API_KEY,
    extraHeaders: config.LLM_EXTRA_HEADERS,
    systemPrompt: config.LLM_SYSTEM_PROMPT,
    maxOutputTokens: config.LLM_MAX_OUTPUT_TOKENS,
    contextTokens: config.LLM_CONTEXT_TOKENS,
    timeoutMs: config.LLM_TIMEOUT_MS,
    maxAttempts: config.LLM_MAX_ATTEMPTS,
    retryBaseDelayMs,
  }
}

/** Fields safe to log: never the key or header values, and no credentials embedded in the URL. */
export function describeProvider(settings: ProviderSettings): Record<string, unknown> {
  if (settings.provider === 'echo') return { provider: 'echo' }
  const url = settings.baseUrl === undefined ? undefined : new URL(settings.baseUrl)
  return {
    provider: settings.provider,
    model: settings.model,
    baseUrl: url ? `${url.protocol}//${url.host}${url.pathname}` : 'default',
    extraHeaders: Object.keys(settings.extraHeaders),
  }
}
