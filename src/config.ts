// Environment parsed once at start-up. Every variable is validated by its TypeBox schema and a bad
// value stops the process with one line naming the variable: a typo never silently becomes a default.
import { type Static, Type as T } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const Port = T.Integer({ minimum: 0, maximum: 65535 })
const Millis = T.Integer({ minimum: 0, maximum: 60_000 })

const variables = {
  PORT: { schema: Port, fallback: 3000 },
  HOST: { schema: T.String({ minLength: 1 }), fallback: '0.0.0.0' },
  PUBLIC_URL: { schema: T.String({ pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*[^/?#\\s])?$' }), fallback: undefined },
  DATABASE_PATH: { schema: T.String({ minLength: 1 }), fallback: 'db/threadhouse.sqlite' },
  UPLOADS_DIR: { schema: T.String({ minLength: 1 }), fallback: 'uploads' },
  LLM_PROVIDER: { schema: T.Union([T.Literal('echo')]), fallback: 'echo' },
  ECHO_TOKEN_DELAY_MS: { schema: Millis, fallback: 15 },
  GENERATION_CONCURRENCY: { schema: T.Integer({ minimum: 1, maximum: 256 }), fallback: 8 },
  ADMIN_EMAIL: { schema: T.String({ pattern: '^[^@\\s]+@[^@\\s]+$' }), fallback: undefined },
  ADMIN_PASSWORD: { schema: T.String({ minLength: 8 }), fallback: undefined },
  /** RFC 7591 registration without a registration token; `false` requires one. */
  OAUTH_OPEN_REGISTRATION: { schema: T.Boolean(), fallback: true },
  LOG_LEVEL: {
    schema: T.Union([T.Literal('debug'), T.Literal('info'), T.Literal('warn'), T.Literal('error')]),
    fallback: 'info',
  },
} as const

type Variables = typeof variables
export type Config = {
  [K in keyof Variables]: Variables[K]['fallback'] extends undefined
    ? Static<Variables[K]['schema']> | undefined
    : Static<Variables[K]['schema']>
} & { PUBLIC_URL: string }

export class ConfigError extends Error {}

function parseOne(name: string, raw: string, schema: (typeof variables)[keyof Variables]['schema']): unknown {
  if (schema.type === 'boolean') {
    if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`)
    return raw === 'true'
  }
  const isNumber = schema.type === 'integer'
  if (isNumber && !/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = isNumber ? Number(raw) : raw
  if (!Value.Check(schema, value)) {
    const first = Value.Errors(schema, value).First()
    throw new ConfigError(`${name} is invalid ("${raw}"): ${first?.message ?? 'unexpected value'}`)
  }
  return value
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
  return config as Config
}
