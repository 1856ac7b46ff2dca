// Environment parsed once at start-up. Every variable is validated by its TypeBox schema and a bad
// value stops the process with one line naming the variable: a typo never silently becomes a default.
import { type Static, Type as T } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const Port = T.Integer({ minimum: 0, maximum: 65535 })
const Millis = T.Integer({ minimum: 0, maximum: 60_000 })
const HttpUrl = T.String({ pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$' })
// Header names as HTTP defines them (RFC 9110 tokens); values are any single-line strings.
const ExtraHeaders = T.Record(
  T.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }),
  T.String({ pattern: '^[^\\r\\n]*$' }),
  { additionalProperties: false },
)

// 32 bytes as base64 (`openssl rand -base64 32`): 43 characters and one `=`.
const keyPattern = '[A-Za-z0-9+/]{43}='
const keyDescription = 'must be 32 random bytes as base64, 44 characters such as `openssl rand -base64 32` prints'
const SecretsKey = T.String({ pattern: `^${keyPattern}$`, description: keyDescription })
const SecretsKeys = T.String({
  pattern: `^${keyPattern}(,${keyPattern})*$`,
  description: `must be keys separated by commas; each ${keyDescription.replace('must be ', '')}`,
})

const variables = {
  PORT: { schema: Port, fallback: 3000 },
  HOST: { schema: T.String({ minLength: 1 }), fallback: '0.0.0.0' },
  // An origin, as the contract says: discovery documents live at the host root (RFC 8414 §3), so a path would
  // put them where no client looks.
  PUBLIC_URL: {
    schema: T.String({
      pattern: '^https?://[^/?#\\s]+$',
      description: 'must be an origin such as https://threads.example.com (no path, no trailing slash)',
    }),
    fallback: undefined,
  },
  DATABASE_PATH: { schema: T.String({ minLength: 1 }), fallback: 'db/threadhouse.sqlite' },
  /** PostgreSQL instead of the SQLite file at DATABASE_PATH. */
  DATABASE_URL: {
    schema: T.String({
      pattern: '^postgres(ql)?://[^/?#\\s]+/[^/?#\\s]+(\\?\\S*)?$',
      description: 'must be a PostgreSQL URL such as postgres://user:password@host:5432/threadhouse',
    }),
    fallback: undefined,
  },
  UPLOADS_DIR: { schema: T.String({ minLength: 1 }), fallback: 'uploads' },
  /** Attachments in this S3-compatible bucket instead of UPLOADS_DIR, which then only stages uploads being checked. */
  S3_BUCKET: {
    schema: T.String({
      pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
      description: 'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
    }),
    fallback: undefined,
  },
  /** The service's URL (MinIO, R2, Garage…); unset for AWS itself, whose endpoint follows from S3_REGION. */
  S3_ENDPOINT: { schema: HttpUrl, fallback: undefined },
  S3_REGION: {
    schema: T.String({ pattern: '^[a-z0-9-]{1,64}$', description: 'must be a region name such as eu-west-1 or auto' }),
    fallback: undefined,
  },
  S3_ACCESS_KEY_ID: { schema: T.String({ minLength: 1 }), fallback: undefined },
  S3_SECRET_ACCESS_KEY: { schema: T.String({ minLength: 1 }), fallback: undefined },
  /**
   * The models on offer, as a JSON file (src/models/catalogue.ts checks it): several models at once. Unset with
   * LLM_MODELS unset, the LLM_* variables below make a list of one.
   */
  MODELS_FILE: { schema: T.String({ minLength: 1 }), fallback: undefined },
  /** The same list as MODELS_FILE, inline. */
  LLM_MODELS: { schema: T.String({ minLength: 1 }), fallback: undefined },
  LLM_PROVIDER: { schema: T.Union([T.Literal('echo'), T.Literal('openai'), T.Literal('anthropic')]), fallback: 'echo' },
  ECHO_TOKEN_DELAY_MS: { schema: Millis, fallback: 15 },
  /** How long SIGTERM waits for running answers to finish before interrupting them. */
  SHUTDOWN_GRACE_MS: { schema: T.Integer({ minimum: 0, maximum: 600_000 }), fallback: 10_000 },
  LLM_BASE_URL: { schema: HttpUrl, fallback: undefined },
  LLM_API_KEY: { schema: T.String({ minLength: 1 }), fallback: undefined },
  LLM_MODEL: { schema: T.String({ minLength: 1 }), fallback: undefined },
  LLM_SYSTEM_PROMPT: { schema: T.String({ minLength: 1 }), fallback: 'You are a helpful assistant.' },
  LLM_MAX_OUTPUT_TOKENS: { schema: T.Integer({ minimum: 1, maximum: 1_000_000 }), fallback: 4096 },
  LLM_CONTEXT_TOKENS: { schema: T.Integer({ minimum: 512, maximum: 100_000_000 }), fallback: 100_000 },
  LLM_TIMEOUT_MS: { schema: T.Integer({ minimum: 1, maximum: 3_600_000 }), fallback: 120_000 },
  LLM_MAX_ATTEMPTS: { schema: T.Integer({ minimum: 1, maximum: 10 }), fallback: 3 },
  LLM_EXTRA_HEADERS: { schema: ExtraHeaders, fallback: {} as Record<string, string> },
  GENERATION_CONCURRENCY: { schema: T.Integer({ minimum: 1, maximum: 256 }), fallback: 8 },
  /** How long the text of one PDF may take to read for a model before the file is taken to be unreadable. */
  PDF_TEXT_TIMEOUT_MS: { schema: T.Integer({ minimum: 100, maximum: 600_000 }), fallback: 10_000 },
  /** How long an answer waits, in all, for the text of its PDFs before it goes on without the rest. */
  PDF_TEXT_MESSAGE_TIMEOUT_MS: { schema: T.Integer({ minimum: 100, maximum: 600_000 }), fallback: 30_000 },
  /** The memory (MiB) a process reading one PDF's text may use before the file is taken to be unreadable. */
  PDF_TEXT_MEMORY_MB: { schema: T.Integer({ minimum: 64, maximum: 65_536 }), fallback: 512 },
  /** PDFs whose text is read at once, each in a process of its own. */
  PDF_TEXT_PROCESSES: { schema: T.Integer({ minimum: 1, maximum: 32 }), fallback: 2 },
  /**
   * With DATABASE_URL: how long an instance's claim on a running answer lasts unless renewed. An answer whose
   * instance died is taken over by another within about 1.25 times this.
   */
  GENERATION_LEASE_MS: { schema: T.Integer({ minimum: 1000, maximum: 600_000 }), fallback: 6000 },
  ADMIN_EMAIL: { schema: T.String({ pattern: '^[^@\\s]+@[^@\\s]+$' }), fallback: undefined },
  ADMIN_PASSWORD: { schema: T.String({ minLength: 8 }), fallback: undefined },
  /** Comma-separated origins allowed to call the API from a browser; empty means CORS stays closed. */
  CORS_ORIGINS: { schema: T.String({ pattern: '^(https?://[^/,\\s]+)(,https?://[^/,\\s]+)*$' }), fallback: '' },
  /** Take the client IP from X-Forwarded-For (only behind a reverse proxy that sets it). */
  TRUST_PROXY: { schema: T.Boolean(), fallback: false },
  /** Requests per minute per token on the API; 0 turns the limit off. */
  RATE_LIMIT_API_PER_MINUTE: { schema: T.Integer({ minimum: 0 }), fallback: 600 },
  /** Requests per minute per client IP, everywhere; 0 turns the limit off. */
  RATE_LIMIT_IP_PER_MINUTE: { schema: T.Integer({ minimum: 0 }), fallback: 1200 },
  /**
   * Attempts per minute at sign-in (per client IP and per email) and at the token and revocation endpoints
   * (per client IP); 0 turns these off. Registration keeps its own stricter 30 per IP per hour.
   */
  RATE_LIMIT_AUTH_PER_MINUTE: { schema: T.Integer({ minimum: 0 }), fallback: 30 },
  /** Answer streams one person may hold open at once, whatever tokens and sessions they use; 0 = no limit. */
  STREAM_LIMIT_PER_USER: { schema: T.Integer({ minimum: 0 }), fallback: 64 },
  /** Answer streams the whole process holds open at once; 0 = no limit. */
  STREAM_LIMIT_TOTAL: { schema: T.Integer({ minimum: 0 }), fallback: 10_000 },
  /**
   * Bytes the server holds for one server-sent event stream whose client reads slower than events come (past what
   * the kernel's socket buffer holds); one more event closes the stream, and the client resumes with
   * Last-Event-ID. No off switch: without a bound, idle clients hold gigabytes.
   */
  STREAM_BACKLOG_BYTES: { schema: T.Integer({ minimum: 1024 }), fallback: 1_048_576 },
  /** RFC 7591 registration without a registration token; `false` requires one. */
  OAUTH_OPEN_REGISTRATION: { schema: T.Boolean(), fallback: true },
  /** OpenID Connect sign-in: the provider's issuer URL (its discovery document is read from it). */
  OIDC_ISSUER: { schema: HttpUrl, fallback: undefined },
  OIDC_CLIENT_ID: { schema: T.String({ minLength: 1 }), fallback: undefined },
  /** Absent for a public client, which then relies on PKCE alone. */
  OIDC_CLIENT_SECRET: { schema: T.String({ minLength: 1 }), fallback: undefined },
  /** How the sign-in button names the provider: "Sign in with …". */
  OIDC_NAME: { schema: T.String({ minLength: 1, maxLength: 60 }), fallback: 'single sign-on' },
  /**
   * Webhooks to private, loopback, link-local, unique-local, multicast and CGNAT addresses (checked when an endpoint is
   * added and against every DNS answer at delivery); off by default, against SSRF.
   */
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: { schema: T.Boolean(), fallback: false },
  /** How long one webhook delivery attempt may take, the name's lookup included. */
  WEBHOOKS_TIMEOUT_MS: { schema: T.Integer({ minimum: 1000, maximum: 60_000 }), fallback: 10_000 },
  /**
   * The key secrets stored in the database are sealed with (MCP servers' header values and OAuth tokens): 32 random
   * bytes as base64. Unset, servers that need a secret cannot be added or used.
   */
  SECRETS_KEY: { schema: SecretsKey, fallback: undefined },
  /** Keys SECRETS_KEY replaced, comma-separated: what they sealed still opens. */
  SECRETS_KEY_PREVIOUS: { schema: SecretsKeys, fallback: undefined },
  /** How long one request to an MCP server (a tool call included) or its OAuth server may take. */
  MCP_TIMEOUT_MS: { schema: T.Integer({ minimum: 1000, maximum: 600_000 }), fallback: 30_000 },
  /** The largest response body an MCP or OAuth server may send; a larger one fails as an error. */
  MCP_RESPONSE_MAX_BYTES: { schema: T.Integer({ minimum: 65_536, maximum: 268_435_456 }), fallback: 4_194_304 },
  /** Rounds of tool calls one answer may make before the model must answer without tools; 0 offers no tools. */
  TOOLS_MAX_ROUNDS: { schema: T.Integer({ minimum: 0, maximum: 64 }), fallback: 8 },
  /** How long one answer's rounds of tool calls may take in all (a person's time to decide not counted). */
  TOOLS_ANSWER_DEADLINE_MS: { schema: T.Integer({ minimum: 1000, maximum: 3_600_000 }), fallback: 300_000 },
  /** The longest tool result the model sees and the answer keeps, in characters; longer ones are cut with a note. */
  TOOLS_RESULT_MAX_CHARS: { schema: T.Integer({ minimum: 1000, maximum: 1_000_000 }), fallback: 20_000 },
  LOG_LEVEL: {
    schema: T.Union([T.Literal('debug'), T.Literal('info'), T.Literal('warn'), T.Literal('error')]),
    fallback: 'info',
  },
  /**
   * The bearer token Prometheus scrapes GET /metrics with; unset, the route does not exist (404) and nothing is
   * counted. Long enough not to be guessed.
   */
  METRICS_TOKEN: {
    schema: T.String({
      minLength: 16,
      pattern: '^[\\x21-\\x7e]+$',
      description: 'must be at least 16 printable characters without spaces (such as `openssl rand -hex 32`)',
    }),
    fallback: undefined,
  },
} as const

type Variables = typeof variables
export type Config = {
  [K in keyof Variables]: Variables[K]['fallback'] extends undefined
    ? Static<Variables[K]['schema']> | undefined
    : Static<Variables[K]['schema']>
} & { PUBLIC_URL: string }

export class ConfigError extends Error {}

/** Variables whose values are never repeated in an error line, since they may hold secrets. */
const secret = new Set<string>([
  'DATABASE_URL',
  'LLM_API_KEY',
  'LLM_EXTRA_HEADERS',
  // No key sits in the list, but its extra_headers may hold credentials.
  'LLM_MODELS',
  'ADMIN_PASSWORD',
  'OIDC_CLIENT_SECRET',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'METRICS_TOKEN',
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
])

function decode(name: string, raw: string, type: unknown): unknown {
  if (type === 'integer') {
    if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
    return Number(raw)
  }
  if (type === 'boolean') {
    if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`)
    return raw === 'true'
  }
  if (type === 'object') {
    try {
      return JSON.parse(raw)
    } catch {
      throw new ConfigError(`${name} must be a JSON object such as {"X-Title":"Threadhouse"} (the value is not shown)`)
    }
  }
  return raw
}

/** The values a choice among fixed words (a union of literals, such as LLM_PROVIDER) allows; null for other schemas. */
function allowedValues(schema: object): string[] | null {
  if (!('anyOf' in schema) || !Array.isArray(schema.anyOf)) return null
  const values = schema.anyOf.map((member: { const?: unknown }) => member.const)
  return values.every((value): value is string => typeof value === 'string') ? values : null
}

/** "a, b or c" */
function either(values: string[]): string {
  return values.length < 2 ? (values[0] ?? '') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`
}

function parseOne(name: string, raw: string, schema: (typeof variables)[keyof Variables]['schema']): unknown {
  const value = decode(name, raw, schema.type)
  if (!Value.Check(schema, value)) {
    const first = Value.Errors(schema, value).First()
    const shown = secret.has(name) ? '' : ` ("${raw}")`
    const where = first?.path ? ` at ${first.path}` : ''
    // A schema's description, where it has one, says what is expected better than TypeBox's message; for a choice
    // TypeBox says only "Expected union value", so the allowed words are named.
    const allowed = allowedValues(schema)
    const why = allowed ? `must be ${either(allowed)}` : (schema.description ?? first?.message ?? 'unexpected value')
    throw new ConfigError(`${name} is invalid${shown}${where}: ${why}`)
  }
  return value
}

/** Rules that span variables: a real provider needs a model, and a key unless it runs elsewhere. */
function checkProvider(config: Config): void {
  const provider = config.LLM_PROVIDER
  if (provider === 'echo') return
  if (config.LLM_MODEL === undefined) throw new ConfigError(`LLM_MODEL is required when LLM_PROVIDER is ${provider}`)
  if (config.LLM_API_KEY === undefined && config.LLM_BASE_URL === undefined) {
    throw new ConfigError(`LLM_API_KEY is required when LLM_PROVIDER is ${provider} and LLM_BASE_URL is not set`)
  }
  if (config.LLM_CONTEXT_TOKENS <= config.LLM_MAX_OUTPUT_TOKENS) {
    throw new ConfigError(
      `LLM_CONTEXT_TOKENS (${config.LLM_CONTEXT_TOKENS}) must be larger than LLM_MAX_OUTPUT_TOKENS (${config.LLM_MAX_OUTPUT_TOKENS})`,
    )
  }
}

/** OpenID Connect sign-in is on when the issuer and the client ID are both set; a lone half is a mistake. */
function checkOidc(config: Config): void {
  if ((config.OIDC_ISSUER === undefined) !== (config.OIDC_CLIENT_ID === undefined)) {
    throw new ConfigError('OIDC_ISSUER and OIDC_CLIENT_ID must be set together')
  }
  if (config.OIDC_CLIENT_SECRET !== undefined && config.OIDC_ISSUER === undefined) {
    throw new ConfigError('OIDC_CLIENT_SECRET is set but OIDC_ISSUER and OIDC_CLIENT_ID are not')
  }
}

/**
 * S3 storage is on when S3_BUCKET is set, and then needs its key pair (Bun's client would otherwise look for
 * credentials elsewhere in the environment, which this reference would not list). An S3 setting without a bucket
 * is a mistake, not a quiet fall back to the uploads folder.
 */
function checkS3(config: Config): void {
  const settings = ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const
  if (config.S3_BUCKET === undefined) {
    const stray = settings.find((name) => config[name] !== undefined)
    if (stray) throw new ConfigError(`${stray} is set but S3_BUCKET is not`)
    return
  }
  for (const name of ['S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
    if (config[name] === undefined) throw new ConfigError(`${name} is required when S3_BUCKET is set`)
  }
}

/** Keys that sealed secrets, without the key that seals them now: new secrets could not be stored. */
function checkSecrets(config: Config): void {
  if (config.SECRETS_KEY_PREVIOUS !== undefined && config.SECRETS_KEY === undefined) {
    throw new ConfigError('SECRETS_KEY_PREVIOUS is set but SECRETS_KEY is not')
  }
}

/** Whether `value` is a URL DATABASE_URL would accept: for the CLI's `db:copy --to`, which names a database too. */
export function isDatabaseUrl(value: string): boolean {
  return Value.Check(variables.DATABASE_URL.schema, value)
}

/** Reads the configuration from an environment map (process.env by default); throws ConfigError. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const config: Record<string, unknown> = {}
  for (const [name, { schema, fallback }] of Object.entries(variables)) {
    const raw = env[name]
    config[name] = raw === undefined || raw === '' ? fallback : parseOne(name, raw, schema)
  }
  config.PUBLIC_URL ??= `http://localhost:${config.PORT}`
  if ((config.ADMIN_EMAIL === undefined) !== (config.ADMIN_PASSWORD === undefined)) {
    throw new ConfigError('ADMIN_EMAIL and ADMIN_PASSWORD must be set together')
  }
  checkProvider(config as Config)
  checkOidc(config as Config)
  checkS3(config as Config)
  checkSecrets(config as Config)
  return config as Config
}
