// Provider configuration: read from the environment, each bad value stopped with one clear line that
// names the variable and never repeats a secret.
import { expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'
import { describeProvider, providerSettings } from '../src/generation/settings'
import { blobLocation, openBlobStore } from '../src/storage/blobs'

const secret = 'sk-live-do-not-print-me'

function failure(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.message
    throw error
  }
  throw new Error('expected a configuration error')
}

test('echo stays the default and needs nothing else', () => {
  expect(providerSettings(loadConfig({}))).toEqual({ provider: 'echo', echoTokenDelayMs: 15 })
})

test('a real provider is configured entirely from LLM_* variables', () => {
  const config = loadConfig({
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: 'http://ollama:11434/v1',
    LLM_MODEL: 'llama3.2',
    LLM_SYSTEM_PROMPT: 'Answer in French.',
    LLM_MAX_OUTPUT_TOKENS: '1024',
    LLM_CONTEXT_TOKENS: '8192',
    LLM_TIMEOUT_MS: '300000',
    LLM_MAX_ATTEMPTS: '5',
    LLM_EXTRA_HEADERS: '{"HTTP-Referer":"https://threads.example.com","X-Title":"Threadhouse"}',
  })
  expect(providerSettings(config)).toEqual({
    provider: 'openai',
    model: 'llama3.2',
    baseUrl: 'http://ollama:11434/v1',
    apiKey: undefined,
    extraHeaders: { 'HTTP-Referer': 'https://threads.example.com', 'X-Title': 'Threadhouse' },
    systemPrompt: 'Answer in French.',
    maxOutputTokens: 1024,
    contextTokens: 8192,
    timeoutMs: 300_000,
    maxAttempts: 5,
    retryBaseDelayMs: 500,
  })
})

test('each bad value is named in one line', () => {
  // Every choice among fixed words names the words it allows, not TypeBox's "Expected union value".
  expect(failure({ LLM_PROVIDER: 'gpt' })).toBe('LLM_PROVIDER is invalid ("gpt"): must be echo, openai or anthropic')
  expect(failure({ LOG_LEVEL: 'verbose' })).toBe('LOG_LEVEL is invalid ("verbose"): must be debug, info, warn or error')
  expect(failure({ LLM_PROVIDER: 'openai', LLM_API_KEY: secret })).toBe(
    'LLM_MODEL is required when LLM_PROVIDER is openai',
  )
  expect(failure({ LLM_PROVIDER: 'anthropic', LLM_MODEL: 'claude-sonnet-4-5' })).toBe(
    'LLM_API_KEY is required when LLM_PROVIDER is anthropic and LLM_BASE_URL is not set',
  )
  expect(failure({ LLM_BASE_URL: 'localhost:11434' })).toStartWith('LLM_BASE_URL is invalid ("localhost:11434")')
  expect(failure({ LLM_TIMEOUT_MS: '2s' })).toBe('LLM_TIMEOUT_MS must be a whole number, got "2s"')
  // An origin: discovery lives at the host root, where a path would hide it from every client.
  expect(failure({ PUBLIC_URL: 'https://example.com/threads' })).toBe(
    'PUBLIC_URL is invalid ("https://example.com/threads"): must be an origin such as https://threads.example.com (no path, no trailing slash)',
  )
  expect(failure({ LLM_MAX_ATTEMPTS: '0' })).toStartWith('LLM_MAX_ATTEMPTS is invalid ("0")')
  expect(failure({ LLM_PROVIDER: 'openai', LLM_MODEL: 'm', LLM_API_KEY: secret, LLM_CONTEXT_TOKENS: '4096' })).toBe(
    'LLM_CONTEXT_TOKENS (4096) must be larger than LLM_MAX_OUTPUT_TOKENS (4096)',
  )
})

test('values that may hold secrets are never repeated in the error', () => {
  const notJson = failure({ LLM_EXTRA_HEADERS: `Authorization: Bearer ${secret}` })
  expect(notJson).toStartWith('LLM_EXTRA_HEADERS must be a JSON object')
  expect(notJson).not.toContain(secret)
  const badValue = failure({ LLM_EXTRA_HEADERS: JSON.stringify({ 'X-Key': 42, secret }) })
  expect(badValue).toStartWith('LLM_EXTRA_HEADERS is invalid')
  const badName = failure({ LLM_EXTRA_HEADERS: JSON.stringify({ 'Bad Header': secret }) })
  expect(badName).toStartWith('LLM_EXTRA_HEADERS is invalid')
  expect(badName).not.toContain(secret)
  expect(failure({ ADMIN_EMAIL: 'a@b.c', ADMIN_PASSWORD: 'short' })).not.toContain('short')
  // A metrics token too short to be safe, or with a space, is refused without being repeated.
  for (const token of ['short-token', 'a metrics token with spaces']) {
    const refused = failure({ METRICS_TOKEN: token })
    expect(refused).toBe(
      'METRICS_TOKEN is invalid: must be at least 16 printable characters without spaces (such as `openssl rand -hex 32`)',
    )
  }
  expect(loadConfig({ METRICS_TOKEN: secret }).METRICS_TOKEN).toBe(secret)
  expect(loadConfig({}).METRICS_TOKEN).toBeUndefined()
})

test('what is logged about the provider leaves out the key, header values and URL credentials', () => {
  const settings = providerSettings(
    loadConfig({
      LLM_PROVIDER: 'anthropic',
      LLM_MODEL: 'claude-sonnet-4-5',
      LLM_API_KEY: secret,
      LLM_BASE_URL: 'https://user:pass@proxy.example.com/anthropic',
      LLM_EXTRA_HEADERS: JSON.stringify({ 'X-Proxy-Key': secret }),
    }),
  )
  const logged = describeProvider(settings)
  expect(logged).toEqual({
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    baseUrl: 'https://proxy.example.com/anthropic',
    extraHeaders: ['X-Proxy-Key'],
  })
  expect(JSON.stringify(logged)).not.toContain(secret)
})

test('S3_BUCKET moves attachments to a bucket, with the S3_* settings Bun reads; unset keeps UPLOADS_DIR', () => {
  expect(blobLocation(loadConfig({ UPLOADS_DIR: '/srv/uploads' }))).toEqual({ kind: 'local', root: '/srv/uploads' })
  const keys = { S3_ACCESS_KEY_ID: 'AKIAEXAMPLE', S3_SECRET_ACCESS_KEY: secret }
  expect(blobLocation(loadConfig({ S3_BUCKET: 'on-aws', ...keys }))).toEqual({
    kind: 's3',
    bucket: 'on-aws',
    region: 'us-east-1',
    accessKeyId: 'AKIAEXAMPLE',
    secretAccessKey: secret,
  })
  const location = blobLocation(
    loadConfig({
      S3_BUCKET: 'threadhouse-files',
      S3_ENDPOINT: 'https://minio.example.com:9000',
      S3_REGION: 'eu-west-1',
      S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      S3_SECRET_ACCESS_KEY: secret,
    }),
  )
  expect(location).toEqual({
    kind: 's3',
    bucket: 'threadhouse-files',
    endpoint: 'https://minio.example.com:9000',
    region: 'eu-west-1',
    accessKeyId: 'AKIAEXAMPLE',
    secretAccessKey: secret,
  })
  // What the start-up log shows: the bucket and its endpoint, never a credential.
  if (location.kind !== 's3') throw new Error('expected an S3 location')
  const shown = openBlobStore({ ...location, endpoint: 'https://user:pass@minio.example.com:9000' }).description
  expect(shown).toEqual({ kind: 's3', bucket: 'threadhouse-files', endpoint: 'https://minio.example.com:9000' })
})

test('bad S3 settings are named in one line, and the keys are never repeated', () => {
  const keys = { S3_ACCESS_KEY_ID: 'AKIAEXAMPLE', S3_SECRET_ACCESS_KEY: secret }
  expect(failure({ S3_BUCKET: 'My_Bucket', ...keys })).toBe(
    'S3_BUCKET is invalid ("My_Bucket"): must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
  )
  expect(failure({ S3_BUCKET: 'files', S3_ENDPOINT: 'minio:9000', ...keys })).toStartWith(
    'S3_ENDPOINT is invalid ("minio:9000")',
  )
  expect(failure({ S3_BUCKET: 'files', S3_REGION: 'EU West', ...keys })).toBe(
    'S3_REGION is invalid ("EU West"): must be a region name such as eu-west-1 or auto',
  )
  expect(failure({ S3_ENDPOINT: 'http://127.0.0.1:9000' })).toBe('S3_ENDPOINT is set but S3_BUCKET is not')
  expect(failure({ S3_SECRET_ACCESS_KEY: secret })).toBe('S3_SECRET_ACCESS_KEY is set but S3_BUCKET is not')
  expect(failure({ S3_BUCKET: 'files', S3_ACCESS_KEY_ID: 'AKIAEXAMPLE' })).toBe(
    'S3_SECRET_ACCESS_KEY is required when S3_BUCKET is set',
  )
  expect(failure({ S3_BUCKET: 'files' })).toBe('S3_ACCESS_KEY_ID is required when S3_BUCKET is set')
})

test('the secrets key and the tool limits: keys checked for their form and never repeated, limits within bounds', () => {
  const key = Buffer.alloc(32, 7).toString('base64')
  const other = Buffer.alloc(32, 9).toString('base64')
  const defaults = loadConfig({})
  expect({
    key: defaults.SECRETS_KEY,
    previous: defaults.SECRETS_KEY_PREVIOUS,
    timeout: defaults.MCP_TIMEOUT_MS,
    bytes: defaults.MCP_RESPONSE_MAX_BYTES,
    rounds: defaults.TOOLS_MAX_ROUNDS,
    deadline: defaults.TOOLS_ANSWER_DEADLINE_MS,
    chars: defaults.TOOLS_RESULT_MAX_CHARS,
  }).toEqual({
    key: undefined,
    previous: undefined,
    timeout: 30_000,
    bytes: 4 * 1024 * 1024,
    rounds: 8,
    deadline: 300_000,
    chars: 20_000,
  })
  const rotated = loadConfig({ SECRETS_KEY: key, SECRETS_KEY_PREVIOUS: `${other},${key}` })
  expect([rotated.SECRETS_KEY, rotated.SECRETS_KEY_PREVIOUS]).toEqual([key, `${other},${key}`])
  // A key of 16 bytes, a hex key, a list with an empty entry: refused, and the value is not in the line.
  for (const [name, value] of [
    ['SECRETS_KEY', Buffer.alloc(16, 7).toString('base64')],
    ['SECRETS_KEY', Buffer.alloc(32, 7).toString('hex')],
    ['SECRETS_KEY_PREVIOUS', `${other},`],
  ] as const) {
    const refused = failure({ SECRETS_KEY: key, [name]: value })
    expect(refused).toStartWith(`${name} is invalid: must be`)
    expect(refused).toContain('openssl rand -base64 32')
    expect(refused).not.toContain(value)
  }
  expect(failure({ SECRETS_KEY_PREVIOUS: other })).toBe('SECRETS_KEY_PREVIOUS is set but SECRETS_KEY is not')
  expect(loadConfig({ TOOLS_MAX_ROUNDS: '0' }).TOOLS_MAX_ROUNDS).toBe(0)
  expect(failure({ TOOLS_MAX_ROUNDS: '65' })).toStartWith('TOOLS_MAX_ROUNDS is invalid ("65")')
  expect(failure({ MCP_TIMEOUT_MS: '10' })).toStartWith('MCP_TIMEOUT_MS is invalid ("10")')
})
