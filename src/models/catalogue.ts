// The models this server offers: read once at start-up from MODELS_FILE or LLM_MODELS (a JSON array, the same shape
// in both), or made from the LLM_* variables as a list of one so that no installation breaks. Every entry is checked
// with TypeBox, and a bad one stops the start with one line naming it by its ID (config.ts's style). Keys never sit
// in the list: an entry names the environment variable holding its key (`api_key_env`), read here, and handed only
// to the generation worker.
import { readFileSync } from 'node:fs'
import { type Static, Type as T } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { type Config, ConfigError } from '../config'
import { describeProvider, providerSettings } from '../generation/settings'
import type { ProviderSettings } from '../generation/types'
import type { ModelPrice } from '../usage/price'

/** The first retry waits this long, as for the LLM_* model (generation/settings.ts). */
const retryBaseDelayMs = 500

const HttpUrl = T.String({ pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$', description: 'must be an http(s) URL' })
const Tokens = (minimum: number, maximum: number) => T.Integer({ minimum, maximum })
const PerMillion = T.Number({ minimum: 0, maximum: 1_000_000, description: 'must be a number from 0 to 1000000' })

/** What a model costs, per million tokens (usage/price.ts): no price, no cost (never a guessed one). */
export const ModelPriceEntry = T.Object(
  {
    input_per_million: PerMillion,
    output_per_million: PerMillion,
    /** Prompt tokens read from the provider's cache; the input price when absent. */
    cached_input_per_million: T.Optional(PerMillion),
    currency: T.String({ pattern: '^[A-Z]{3}$', description: 'must be a three-letter currency code such as USD' }),
  },
  { additionalProperties: false },
)

/** One entry of the list, as an operator writes it. */
export const ModelEntry = T.Object(
  {
    id: T.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,99}$',
      description: 'must be 1-100 letters, digits and . _ : / @ - starting with a letter or digit',
    }),
    name: T.String({ minLength: 1, maxLength: 100 }),
    provider: T.Union([T.Literal('echo'), T.Literal('openai'), T.Literal('anthropic')]),
    /** The vendor's model name, as its API wants it; required for openai and anthropic. */
    model: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
    base_url: T.Optional(HttpUrl),
    /** The environment variable holding this model's key: never the key itself. */
    api_key_env: T.Optional(
      T.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'must be an environment variable name' }),
    ),
    extra_headers: T.Optional(
      T.Record(T.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }), T.String({ pattern: '^[^\\r\\n]*$' }), {
        additionalProperties: false,
      }),
    ),
    context_tokens: T.Optional(Tokens(512, 100_000_000)),
    max_output_tokens: T.Optional(Tokens(1, 1_000_000)),
    price: T.Optional(ModelPriceEntry),
    default: T.Optional(T.Boolean()),
  },
  { additionalProperties: false },
)
export type ModelEntry = Static<typeof ModelEntry>

export type ProviderName = ModelEntry['provider']

/** A configured model, as the server uses it. */
export interface CatalogueModel {
  id: string
  name: string
  provider: ProviderName
  contextTokens: number
  maxOutputTokens: number
  /** Per million tokens; absent: its answers have no cost. */
  price?: ModelPrice
  /** What the generation worker is started with for this model (its key included: never log it). */
  settings: ProviderSettings
}

export interface Catalogue {
  /** In the list's order. */
  models: CatalogueModel[]
  byId: Map<string, CatalogueModel>
  /** The entry marked `default`, else the first. */
  defaultId: string
  /** Where the list came from, for the log and errors. */
  source: 'MODELS_FILE' | 'LLM_MODELS' | 'LLM_*'
  /** The one currency every priced model is in (checked at start-up); null when no model has a price. */
  currency: string | null
}

/** The worker's init: every model's settings by ID. */
export function workerModels(catalogue: Catalogue): { models: Record<string, ProviderSettings> } {
  return { models: Object.fromEntries(catalogue.models.map((model) => [model.id, model.settings])) }
}

/** What may be logged of the list: never a key, a header's value, or credentials in a URL (describeProvider). */
export function describeCatalogue(catalogue: Catalogue): Record<string, unknown> {
  return {
    source: catalogue.source,
    default: catalogue.defaultId,
    models: catalogue.models.map((model) => ({ id: model.id, ...describeProvider(model.settings) })),
  }
}

function catalogueOf(models: CatalogueModel[], defaultId: string, source: Catalogue['source']): Catalogue {
  const currency = models.find((model) => model.price)?.price?.currency ?? null
  return { models, byId: new Map(models.map((model) => [model.id, model])), defaultId, source, currency }
}

/** The LLM_* variables as a list of one: `echo` for the echo responder, else the model's own name. */
function fromVariables(config: Config): Catalogue {
  const settings = providerSettings(config)
  const id = settings.provider === 'echo' ? 'echo' : settings.model
  const model: CatalogueModel = {
    id,
    name: settings.provider === 'echo' ? 'Echo' : id,
    provider: settings.provider,
    contextTokens: config.LLM_CONTEXT_TOKENS,
    maxOutputTokens: config.LLM_MAX_OUTPUT_TOKENS,
    settings,
  }
  return catalogueOf([model], id, 'LLM_*')
}

/** How an entry is named in an error line: by its ID when it has a usable one, else by its place. */
function entryName(raw: unknown, index: number): string {
  const id = typeof raw === 'object' && raw !== null ? (raw as { id?: unknown }).id : undefined
  return typeof id === 'string' && id !== '' && id.length <= 100 ? `model "${id}"` : `entry ${index + 1} (no valid id)`
}

/** One entry checked; `where` names the variable. Values are never repeated: headers and URLs may hold secrets. */
function checkEntry(
  where: string,
  raw: unknown,
  index: number,
  config: Config,
  env: Record<string, string | undefined>,
): CatalogueModel {
  const name = entryName(raw, index)
  if (!Value.Check(ModelEntry, raw)) {
    const first = Value.Errors(ModelEntry, raw).First()
    const field = first?.path ? ` at ${first.path}` : ''
    const schema = first?.schema as { description?: string; anyOf?: unknown } | undefined
    const why =
      first?.path === '/provider'
        ? 'must be echo, openai or anthropic'
        : first?.message === 'Unexpected property'
          ? 'is not a field of a model'
          : (schema?.description ?? first?.message ?? 'unexpected value')
    throw new ConfigError(`${where}: ${name} is invalid${field}: ${why}`)
  }
  const entry = raw
  const contextTokens = entry.context_tokens ?? config.LLM_CONTEXT_TOKENS
  const maxOutputTokens = entry.max_output_tokens ?? config.LLM_MAX_OUTPUT_TOKENS
  const price: ModelPrice | undefined = entry.price && {
    inputPerMillion: entry.price.input_per_million,
    outputPerMillion: entry.price.output_per_million,
    ...(entry.price.cached_input_per_million === undefined
      ? {}
      : { cachedInputPerMillion: entry.price.cached_input_per_million }),
    currency: entry.price.currency,
  }
  const base = {
    id: entry.id,
    name: entry.name,
    provider: entry.provider,
    contextTokens,
    maxOutputTokens,
    ...(price ? { price } : {}),
  }
  if (entry.provider === 'echo') {
    return { ...base, settings: { provider: 'echo', echoTokenDelayMs: config.ECHO_TOKEN_DELAY_MS } }
  }
  if (entry.model === undefined) throw new ConfigError(`${where}: ${name} needs "model" (the provider's model name)`)
  if (entry.context_tokens === undefined || entry.max_output_tokens === undefined) {
    throw new ConfigError(`${where}: ${name} needs "context_tokens" and "max_output_tokens"`)
  }
  if (contextTokens <= maxOutputTokens) {
    throw new ConfigError(`${where}: ${name} must have context_tokens larger than max_output_tokens`)
  }
  let apiKey: string | undefined
  if (entry.api_key_env !== undefined) {
    apiKey = env[entry.api_key_env]
    if (apiKey === undefined || apiKey === '') {
      throw new ConfigError(`${where}: ${name} names api_key_env ${entry.api_key_env}, which is not set`)
    }
  } else if (entry.base_url === undefined) {
    throw new ConfigError(`${where}: ${name} needs "api_key_env" unless "base_url" is set`)
  }
  return {
    ...base,
    settings: {
      provider: entry.provider,
      model: entry.model,
      baseUrl: entry.base_url,
      apiKey,
      extraHeaders: entry.extra_headers ?? {},
      systemPrompt: config.LLM_SYSTEM_PROMPT,
      maxOutputTokens,
      contextTokens,
      timeoutMs: config.LLM_TIMEOUT_MS,
      maxAttempts: config.LLM_MAX_ATTEMPTS,
      retryBaseDelayMs,
    },
  }
}

/** The list from its JSON text, checked as a whole: unique IDs, at most one default, at least one model. */
export function parseCatalogue(
  where: 'MODELS_FILE' | 'LLM_MODELS',
  text: string,
  config: Config,
  env: Record<string, string | undefined>,
): Catalogue {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new ConfigError(`${where} must be a JSON array of models (the value is not shown)`)
  }
  if (!Array.isArray(raw)) throw new ConfigError(`${where} must be a JSON array of models`)
  if (raw.length === 0) throw new ConfigError(`${where} must list at least one model`)
  const models: CatalogueModel[] = []
  const seen = new Set<string>()
  let defaultId: string | undefined
  let priced: CatalogueModel | undefined
  raw.forEach((entry: unknown, index) => {
    const model = checkEntry(where, entry, index, config, env)
    if (seen.has(model.id)) throw new ConfigError(`${where}: model "${model.id}" is listed twice`)
    // Costs are summed across models (usage, budgets): one currency for the whole list.
    if (model.price && priced?.price && model.price.currency !== priced.price.currency) {
      throw new ConfigError(
        `${where}: model "${model.id}" is priced in ${model.price.currency}, but "${priced.id}" in ${priced.price.currency}: use one currency`,
      )
    }
    priced ??= model.price ? model : undefined
    seen.add(model.id)
    if ((entry as ModelEntry).default === true) {
      if (defaultId !== undefined) {
        throw new ConfigError(`${where}: model "${model.id}" is marked default, but so is "${defaultId}"`)
      }
      defaultId = model.id
    }
    models.push(model)
  })
  return catalogueOf(models, defaultId ?? (models[0] as CatalogueModel).id, where)
}

/**
 * The catalogue the configuration names; throws ConfigError. `env` is where `api_key_env` variables are read
 * (process.env at start-up).
 */
export function loadCatalogue(config: Config, env: Record<string, string | undefined> = process.env): Catalogue {
  if (config.MODELS_FILE !== undefined && config.LLM_MODELS !== undefined) {
    throw new ConfigError('MODELS_FILE and LLM_MODELS are both set: use one')
  }
  if (config.LLM_MODELS !== undefined) return parseCatalogue('LLM_MODELS', config.LLM_MODELS, config, env)
  if (config.MODELS_FILE !== undefined) {
    let text: string
    try {
      text = readFileSync(config.MODELS_FILE, 'utf8')
    } catch (error) {
      const code = (error as { code?: string }).code ?? 'unreadable'
      throw new ConfigError(`MODELS_FILE cannot be read ("${config.MODELS_FILE}"): ${code}`)
    }
    return parseCatalogue('MODELS_FILE', text, config, env)
  }
  return fromVariables(config)
}
