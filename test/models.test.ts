// Several models: the list read at start-up (each bad entry named by its ID, the LLM_* variables as a list of one),
// GET /api/v1/models per organization, a thread's settings, the administration page, and a fake OpenAI-compatible
// upstream recording which model each answer was asked of, through the real worker.
import { expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { ConfigError, loadConfig } from '../src/config'
import { createWorkerRunner } from '../src/generation/runner'
import { type Catalogue, describeCatalogue, loadCatalogue, workerModels } from '../src/models/catalogue'
import { silentLogger } from '../src/shared/log'
import { testEvent, testOrigin } from './support/audit'
import { ask, FakeLlm, openaiText, sse } from './support/fake-llm'
import { type Harness, harness, until } from './support/helpers'
import { signedIn } from './support/oauth-helpers'
import { submit } from './support/web-helpers'

const secret = 'sk-live-do-not-print-me'

const threeModels = [
  { id: 'echo-a', name: 'Echo A', provider: 'echo' },
  { id: 'echo-b', name: 'Echo B', provider: 'echo', default: true },
  { id: 'echo-c', name: 'Echo C', provider: 'echo', context_tokens: 2048 },
]

function catalogueFor(list: unknown, env: Record<string, string> = {}): Catalogue {
  return loadCatalogue(loadConfig({ LLM_MODELS: JSON.stringify(list) }), env)
}

function failure(list: unknown, env: Record<string, string> = {}): string {
  try {
    catalogueFor(list, env)
  } catch (error) {
    if (error instanceof ConfigError) return error.message
    throw error
  }
  throw new Error('expected a configuration error')
}

const openaiEntry = {
  id: 'gpt',
  name: 'GPT',
  provider: 'openai',
  model: 'gpt-4.1-mini',
  api_key_env: 'OPENAI_KEY',
  context_tokens: 128000,
  max_output_tokens: 4096,
}

test('a good list: every model with its settings, the key read from the variable it names, the marked default', () => {
  const catalogue = catalogueFor(
    [
      openaiEntry,
      {
        id: 'claude',
        name: 'Claude',
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        api_key_env: 'ANTHROPIC_KEY',
        context_tokens: 200000,
        max_output_tokens: 8192,
        default: true,
      },
      {
        id: 'local',
        name: 'Local',
        provider: 'openai',
        model: 'llama3.2',
        base_url: 'http://ollama:11434/v1',
        context_tokens: 8192,
        max_output_tokens: 2048,
        extra_headers: { 'X-Title': 'T' },
      },
      { id: 'echo', name: 'Echo', provider: 'echo' },
    ],
    { OPENAI_KEY: secret, ANTHROPIC_KEY: 'sk-ant-other' },
  )
  expect(catalogue.models.map((model) => model.id)).toEqual(['gpt', 'claude', 'local', 'echo'])
  expect(catalogue.defaultId).toBe('claude')
  expect(catalogue.byId.get('gpt')?.settings).toMatchObject({
    provider: 'openai',
    model: 'gpt-4.1-mini',
    apiKey: secret,
  })
  expect(catalogue.byId.get('local')?.settings).toMatchObject({
    baseUrl: 'http://ollama:11434/v1',
    apiKey: undefined,
    extraHeaders: { 'X-Title': 'T' },
    contextTokens: 8192,
    maxOutputTokens: 2048,
    systemPrompt: 'You are a helpful assistant.',
  })
  expect(catalogue.byId.get('echo')).toMatchObject({ provider: 'echo', contextTokens: 100_000 })
  // What is logged never holds a key or a header's value.
  const logged = JSON.stringify(describeCatalogue(catalogue))
  expect(logged).not.toContain(secret)
  expect(logged).not.toContain('sk-ant-other')
  expect(logged).toContain('"X-Title"')
  // Without a marked default, the first is.
  expect(catalogueFor(threeModels.map(({ default: _, ...entry }) => entry)).defaultId).toBe('echo-a')
})

test('MODELS_FILE holds the same list; setting both, or an unreadable file, is one line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-models-'))
  const path = join(dir, 'models.json')
  writeFileSync(path, JSON.stringify(threeModels))
  const catalogue = loadCatalogue(loadConfig({ MODELS_FILE: path }), {})
  expect({ source: catalogue.source, ids: [...catalogue.byId.keys()], default: catalogue.defaultId }).toEqual({
    source: 'MODELS_FILE',
    ids: ['echo-a', 'echo-b', 'echo-c'],
    default: 'echo-b',
  })
  expect(() => loadCatalogue(loadConfig({ MODELS_FILE: path, LLM_MODELS: '[]' }), {})).toThrow(
    'MODELS_FILE and LLM_MODELS are both set: use one',
  )
  expect(() => loadCatalogue(loadConfig({ MODELS_FILE: join(dir, 'missing.json') }), {})).toThrow(
    /^MODELS_FILE cannot be read \(".*missing\.json"\): ENOENT$/,
  )
  writeFileSync(path, '[{"id": "x",')
  expect(() => loadCatalogue(loadConfig({ MODELS_FILE: path }), {})).toThrow(
    'MODELS_FILE must be a JSON array of models (the value is not shown)',
  )
})

test('each bad entry stops the start with one line naming it by its ID, never repeating a value', () => {
  const env = { OPENAI_KEY: secret }
  const cases: [unknown, string][] = [
    [
      { ...openaiEntry, name: '' },
      'LLM_MODELS: model "gpt" is invalid at /name: Expected string length greater or equal to 1',
    ],
    [
      { ...openaiEntry, provider: 'gemini' },
      'LLM_MODELS: model "gpt" is invalid at /provider: must be echo, openai or anthropic',
    ],
    [
      { ...openaiEntry, context_tokens: 'lots' },
      'LLM_MODELS: model "gpt" is invalid at /context_tokens: Expected integer',
    ],
    [{ ...openaiEntry, api_key: secret }, 'LLM_MODELS: model "gpt" is invalid at /api_key: is not a field of a model'],
    [
      { ...openaiEntry, base_url: `ftp://${secret}@host` },
      'LLM_MODELS: model "gpt" is invalid at /base_url: must be an http(s) URL',
    ],
    [
      { ...openaiEntry, extra_headers: { 'X-Key': `${secret}\r\nX: y` } },
      'LLM_MODELS: model "gpt" is invalid at /extra_headers/X-Key',
    ],
    [{ ...openaiEntry, model: undefined }, 'LLM_MODELS: model "gpt" needs "model" (the provider\'s model name)'],
    [
      { ...openaiEntry, max_output_tokens: undefined },
      'LLM_MODELS: model "gpt" needs "context_tokens" and "max_output_tokens"',
    ],
    [
      { ...openaiEntry, max_output_tokens: 128000 },
      'LLM_MODELS: model "gpt" must have context_tokens larger than max_output_tokens',
    ],
    [
      { ...openaiEntry, api_key_env: 'UNSET_KEY' },
      'LLM_MODELS: model "gpt" names api_key_env UNSET_KEY, which is not set',
    ],
    [
      { ...openaiEntry, api_key_env: undefined },
      'LLM_MODELS: model "gpt" needs "api_key_env" unless "base_url" is set',
    ],
    [{ ...openaiEntry, id: 'has space' }, 'LLM_MODELS: model "has space" is invalid at /id: must be 1-100 letters'],
    [{ name: 'No ID', provider: 'echo' }, 'LLM_MODELS: entry 2 (no valid id) is invalid at /id'],
  ]
  for (const [bad, message] of cases) {
    const line = failure([{ id: 'first', name: 'First', provider: 'echo' }, bad], env)
    expect(line).toStartWith(message)
    expect(line).not.toContain(secret)
    expect(line.split('\n')).toHaveLength(1)
  }
  expect(failure([openaiEntry, openaiEntry], env)).toBe('LLM_MODELS: model "gpt" is listed twice')
  expect(failure(threeModels.map((entry) => ({ ...entry, default: true })))).toBe(
    'LLM_MODELS: model "echo-b" is marked default, but so is "echo-a"',
  )
  expect(failure([])).toBe('LLM_MODELS must list at least one model')
  expect(failure({ models: threeModels })).toBe('LLM_MODELS must be a JSON array of models')
  // LLM_MODELS itself is never repeated when it is not JSON.
  expect(() => loadConfig({ LLM_MODELS: '' })).not.toThrow()
})

test('without a list, the LLM_* variables are a list of one, so no installation breaks', () => {
  const echo = loadCatalogue(loadConfig({}), {})
  expect({ source: echo.source, default: echo.defaultId }).toEqual({ source: 'LLM_*', default: 'echo' })
  expect(echo.models).toEqual([
    {
      id: 'echo',
      name: 'Echo',
      provider: 'echo',
      contextTokens: 100_000,
      maxOutputTokens: 4096,
      settings: { provider: 'echo', echoTokenDelayMs: 15 },
    },
  ])
  const real = loadCatalogue(
    loadConfig({ LLM_PROVIDER: 'openai', LLM_MODEL: 'llama3.2', LLM_BASE_URL: 'http://ollama:11434/v1' }),
    {},
  )
  expect(real.models.map((model) => [model.id, model.name, model.provider])).toEqual([
    ['llama3.2', 'llama3.2', 'openai'],
  ])
  expect(real.byId.get('llama3.2')?.settings).toMatchObject({ model: 'llama3.2', baseUrl: 'http://ollama:11434/v1' })
})

/** A harness offering the three echo models. */
function echoModels(): Promise<Harness> {
  return harness({ config: { LLM_MODELS: JSON.stringify(threeModels) } })
}

async function organizationId(h: Harness, slug: string): Promise<number> {
  return (await h.store.users.organizationIdBySlug(slug)) as number
}

test('GET /api/v1/models: what each organization may use, exactly one default, for any valid token', async () => {
  await using h = await echoModels()
  const plain = await h.user({ scopes: ['threads:read:own'] })
  const acme = await h.user({ org: 'acme' })
  expect((await h.call('GET', '/api/v1/models')).status).toBe(401)
  const all = await h.call('GET', '/api/v1/models', { token: plain.token })
  expect(all).toMatchObject({ status: 200 })
  expect(all.body).toEqual({
    data: [
      { id: 'echo-a', name: 'Echo A', provider: 'echo', context_tokens: 100_000, default: false },
      { id: 'echo-b', name: 'Echo B', provider: 'echo', context_tokens: 100_000, default: true },
      { id: 'echo-c', name: 'Echo C', provider: 'echo', context_tokens: 2048, default: false },
    ],
  })
  await h.store.models.setChoice(
    await organizationId(h, 'acme'),
    {
      allowed: ['echo-a', 'echo-c'],
      defaultModel: 'echo-c',
    },
    testEvent('settings.models_changed'),
  )
  const chosen = (await h.call('GET', '/api/v1/models', { token: acme.token })).body.data
  expect(chosen.map((model: { id: string; default: boolean }) => [model.id, model.default])).toEqual([
    ['echo-a', false],
    ['echo-c', true],
  ])
  // Allowed without its own default: the configuration's is not allowed, so the first it may use is.
  await h.store.models.setChoice(
    await organizationId(h, 'acme'),
    {
      allowed: ['echo-c', 'echo-a', 'gone'],
      defaultModel: null,
    },
    testEvent('settings.models_changed'),
  )
  const fallback = (await h.call('GET', '/api/v1/models', { token: acme.token })).body.data
  expect(fallback.map((model: { id: string; default: boolean }) => [model.id, model.default])).toEqual([
    ['echo-a', true],
    ['echo-c', false],
  ])
  // The default organization's choice is its own.
  expect((await h.call('GET', '/api/v1/models', { token: plain.token })).body).toEqual(all.body)
})

test('thread settings: GET for who sees the thread, PATCH for its owner, 400 for a model not allowed or long instructions', async () => {
  await using h = await echoModels()
  const owner = await h.user({ scopes: ['threads:read', 'threads:write'] })
  const colleague = await h.user({ scopes: ['threads:read', 'threads:write'] })
  const reader = await h.user({ scopes: ['threads:read'] })
  const outsider = await h.user({ org: 'elsewhere', scopes: ['threads:read', 'threads:write'] })
  const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
  const path = `/api/v1/threads/${created.body.thread_id}/settings`
  expect(await h.call('GET', path, { token: colleague.token })).toMatchObject({
    status: 200,
    body: { model: null, instructions: null, tools: null },
  })
  const patched = await h.call('PATCH', path, {
    token: owner.token,
    body: { model: 'echo-c', instructions: 'Answer in French.' },
  })
  expect(patched).toMatchObject({ status: 200, body: { model: 'echo-c', instructions: 'Answer in French.' } })
  // A field left out keeps its value; null clears it.
  expect((await h.call('PATCH', path, { token: owner.token, body: { model: null } })).body).toEqual({
    model: null,
    instructions: 'Answer in French.',
    tools: null,
  })
  expect((await h.call('PATCH', path, { token: owner.token, body: { instructions: '' } })).body).toEqual({
    model: null,
    instructions: null,
    tools: null,
  })
  const longest = 'x'.repeat(8000)
  expect((await h.call('PATCH', path, { token: owner.token, body: { instructions: longest } })).body.instructions).toBe(
    longest,
  )
  const refusals: [unknown, number, string][] = [
    [{ instructions: `${longest}x` }, 400, 'instructions'],
    [{ model: 'no-such-model' }, 400, 'The model "no-such-model" is not available to your organization'],
    [{}, 400, ''],
    [{ model: 'echo-a', colour: 'blue' }, 400, 'colour'],
  ]
  for (const [body, status, message] of refusals) {
    const reply = await h.call('PATCH', path, { token: owner.token, body })
    expect({ status: reply.status, message: reply.body.message }).toEqual({
      status,
      message: expect.stringContaining(message),
    })
  }
  // Allowed on the server, not in this organization.
  await h.store.models.setChoice(
    await organizationId(h, 'default'),
    {
      allowed: ['echo-a', 'echo-b'],
      defaultModel: null,
    },
    testEvent('settings.models_changed'),
  )
  expect((await h.call('PATCH', path, { token: owner.token, body: { model: 'echo-c' } })).status).toBe(400)
  expect((await h.call('PATCH', path, { token: owner.token, body: { model: 'echo-a' } })).status).toBe(200)
  // Others: 403 for a member who sees it, 403 for a token without threads:write, 404 across organizations.
  expect(await h.call('PATCH', path, { token: colleague.token, body: { model: 'echo-b' } })).toMatchObject({
    status: 403,
    body: { error: 'forbidden' },
  })
  expect((await h.call('PATCH', path, { token: reader.token, body: { model: 'echo-b' } })).status).toBe(403)
  expect((await h.call('GET', path, { token: outsider.token })).status).toBe(404)
  expect((await h.call('PATCH', path, { token: outsider.token, body: { model: 'echo-b' } })).status).toBe(404)
  // A private thread is its owner's alone.
  await h.call('PATCH', `/api/v1/threads/${created.body.thread_id}`, { token: owner.token, body: { is_private: true } })
  expect((await h.call('GET', path, { token: colleague.token })).status).toBe(404)
  expect((await h.call('GET', path, { token: owner.token })).body).toEqual({
    model: 'echo-a',
    instructions: longest,
    tools: null,
  })
  const unknown = `/api/v1/threads/${Bun.randomUUIDv7()}/settings`
  expect((await h.call('GET', unknown, { token: owner.token })).status).toBe(404)
  expect((await h.call('PATCH', unknown, { token: owner.token, body: { model: 'echo-a' } })).status).toBe(404)
})

test('a thread’s tools are stored beside its model: null for every tool on, [] for none, each field kept until written', async () => {
  await using h = await echoModels()
  const owner = await h.user()
  const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
  const threadId = created.body.thread_id as string
  expect(await h.store.models.threadSettings(threadId)).toEqual({ model: null, instructions: null, tools: null })
  expect(
    await h.store.models.saveThreadSettings(threadId, { tools: ['docs/search_docs', 'jira/create_issue'] }),
  ).toEqual({
    model: null,
    instructions: null,
    tools: ['docs/search_docs', 'jira/create_issue'],
  })
  expect(await h.store.models.saveThreadSettings(threadId, { model: 'echo-a' })).toEqual({
    model: 'echo-a',
    instructions: null,
    tools: ['docs/search_docs', 'jira/create_issue'],
  })
  expect(await h.store.models.saveThreadSettings(threadId, { tools: [] })).toMatchObject({ model: 'echo-a', tools: [] })
  expect(await h.store.models.threadSettings(threadId)).toEqual({ model: 'echo-a', instructions: null, tools: [] })
  expect(await h.store.models.saveThreadSettings(threadId, { tools: null })).toMatchObject({ tools: null })
  expect(await h.store.models.saveThreadSettings(Bun.randomUUIDv7(), { tools: [] })).toBeNull()
  // The API answers the stored list (test/thread-settings-tools.test.ts checks what it lets in).
  const path = `/api/v1/threads/${threadId}/settings`
  expect((await h.call('GET', path, { token: owner.token })).body).toEqual({
    model: 'echo-a',
    instructions: null,
    tools: null,
  })
  expect((await h.call('PATCH', path, { token: owner.token, body: { instructions: 'Be brief.' } })).body).toEqual({
    model: 'echo-a',
    instructions: 'Be brief.',
    tools: null,
  })
})

test('the fake upstream is asked for the thread’s model, else the organization’s default, with the thread’s instructions', async () => {
  await using fake = new FakeLlm()
  const upstream = (id: string, vendor: string) => ({
    id,
    name: id,
    provider: 'openai',
    model: vendor,
    base_url: `${fake.url}/v1`,
    context_tokens: 8192,
    max_output_tokens: 256,
  })
  const list = [upstream('fast', 'vendor-fast'), upstream('smart', 'vendor-smart')]
  const config = { LLM_MODELS: JSON.stringify(list) }
  const catalogue = loadCatalogue(loadConfig(config), {})
  await using h = await harness({
    config,
    runner: (blobs) => createWorkerRunner(workerModels(catalogue), blobs, silentLogger),
  })
  const user = await h.user()
  const asked = () => fake.received.at(-1)?.body
  const storedModel = async (threadId: string) => {
    const { messages } = h.tables
    const rows = await h.orm
      .select({ model: messages.model, role: messages.role, createdAt: messages.createdAt })
      .from(messages)
      .where(eq(messages.threadId, threadId))
    return rows
      .filter((row) => row.role === 'assistant')
      .sort((a, b) => a.createdAt - b.createdAt)
      .at(-1)?.model
  }
  const answer = (text: string) => () => sse(openaiText([text]))

  // Nothing chosen anywhere: the list's default, the first.
  fake.reply(answer('one'))
  const first = await ask(h, user.token, 'Hello')
  expect(asked()).toMatchObject({
    model: 'vendor-fast',
    messages: [{ role: 'system', content: 'You are a helpful assistant.' }, { role: 'user' }],
  })
  expect(await storedModel(first.threadId)).toBe('fast')

  // The organization's default.
  const organization = await organizationId(h, 'default')
  await h.store.models.setChoice(
    organization,
    { allowed: null, defaultModel: 'smart' },
    testEvent('settings.models_changed'),
  )
  fake.reply(answer('two'))
  const second = await ask(h, user.token, 'Hello again')
  expect(asked()?.model).toBe('vendor-smart')
  expect(await storedModel(second.threadId)).toBe('smart')

  // The thread's own model and instructions, from its next answer on.
  const settings = await h.call('PATCH', `/api/v1/threads/${second.threadId}/settings`, {
    token: user.token,
    body: { model: 'fast', instructions: 'Answer in French.' },
  })
  expect(settings.status).toBe(200)
  fake.reply(answer('trois'))
  await ask(h, user.token, 'And now?', second.threadId)
  expect(asked()?.model).toBe('vendor-fast')
  expect(asked()?.messages[0]).toEqual({ role: 'system', content: 'You are a helpful assistant.\n\nAnswer in French.' })
  expect(await storedModel(second.threadId)).toBe('fast')

  // The thread's model no longer allowed: the organization's default answers, and the answer says so.
  await h.store.models.setChoice(
    organization,
    { allowed: ['smart'], defaultModel: 'smart' },
    testEvent('settings.models_changed'),
  )
  fake.reply(answer('quatre'))
  const fourth = await ask(h, user.token, 'Still there?', second.threadId)
  expect(asked()?.model).toBe('vendor-smart')
  expect(await storedModel(second.threadId)).toBe('smart')

  // A regenerate's model answers that once; the details of the new answer name it.
  await h.store.models.setChoice(
    organization,
    { allowed: null, defaultModel: 'smart' },
    testEvent('settings.models_changed'),
  )
  fake.reply(answer('cinq'))
  const regenerated = await h.call(
    'POST',
    `/api/v1/threads/${second.threadId}/messages/${fourth.messageId}/regenerate`,
    {
      token: user.token,
      body: { model: 'fast' },
    },
  )
  expect(regenerated.status).toBe(201)
  const poll = `/api/v1/threads/${second.threadId}/messages/${fourth.messageId}/response`
  const done = await until(async () => {
    const reply = await h.call('GET', poll, { token: user.token })
    return reply.body.status === 'complete' && reply.body
  })
  expect(asked()?.model).toBe('vendor-fast')
  const details = await h.call('GET', `/api/v1/threads/${second.threadId}/messages/${done.messages[0].id}/details`, {
    token: user.token,
  })
  expect(details.body).toMatchObject({ model: 'fast', version: 2, versions: 2, active: true })
  expect(fake.received.map((request) => request.body.model)).toEqual([
    'vendor-fast',
    'vendor-smart',
    'vendor-fast',
    'vendor-smart',
    'vendor-fast',
  ])
})

test('answer.completed webhooks name the model that wrote the answer, private threads too', async () => {
  await using h = await harness({
    config: { LLM_MODELS: JSON.stringify(threeModels), WEBHOOKS_ALLOW_PRIVATE_NETWORKS: true },
  })
  const user = await h.user({ role: 'owner' })
  const { createEndpoint } = await import('../src/webhooks/service')
  await createEndpoint(
    h.store.webhooks,
    {
      organizationId: await organizationId(h, 'default'),
      createdBy: null,
      url: 'http://127.0.0.1:9/hook',
      events: ['answer.completed'],
    },
    { allowPrivateNetworks: true },
    h.clock.now(),
    testOrigin,
  )
  const created = await h.call('POST', '/api/v1/threads', { token: user.token, body: { is_private: true } })
  await h.call('PATCH', `/api/v1/threads/${created.body.thread_id}/settings`, {
    token: user.token,
    body: { model: 'echo-c' },
  })
  const sent = await h.call('POST', `/api/v1/threads/${created.body.thread_id}/messages`, {
    token: user.token,
    body: { text: 'hi' },
  })
  expect(sent.status).toBe(201)
  await h.app.decorator.engine.idle()
  const { webhookDeliveries } = h.tables
  const rows = await h.orm.select({ payload: webhookDeliveries.payload }).from(webhookDeliveries)
  expect(rows.map((row) => JSON.parse(row.payload).data)).toEqual([
    expect.objectContaining({ message_id: sent.body.message_id, model: 'echo-c' }),
  ])
})

test('Administration → Models: owners and admins choose the allowed models and a default among them; members cannot', async () => {
  await using h = await echoModels()
  const admin = await signedIn(h, { role: 'admin' })
  const organization = await organizationId(h, 'default')
  const page = await admin.browser.get('/admin/models')
  expect(page.status).toBe(200)
  const html = await page.text()
  expect(html).toContain('New threads use Echo B')
  expect(html).toContain('value="echo-c"')
  // A default that is not allowed is refused next to the form, as entered.
  const refused = await submit(admin.browser, '/admin/models', {
    scope: 'some',
    allowed: ['echo-a'],
    default: 'echo-b',
  })
  expect(refused.status).toBe(400)
  expect(await refused.text()).toContain('The default model &quot;echo-b&quot; must be among the allowed models')
  const none = await submit(admin.browser, '/admin/models', { scope: 'some', default: '' })
  expect(none.status).toBe(400)
  expect(await none.text()).toContain('Allow at least one model')
  expect(await h.store.models.choice(organization)).toEqual({ allowed: null, defaultModel: null })
  const saved = await submit(admin.browser, '/admin/models', {
    scope: 'some',
    allowed: ['echo-a', 'echo-c'],
    default: 'echo-c',
  })
  expect({ status: saved.status, location: saved.headers.get('location') }).toEqual({
    status: 303,
    location: '/admin/models?notice=models-saved',
  })
  expect(await h.store.models.choice(organization)).toEqual({ allowed: ['echo-a', 'echo-c'], defaultModel: 'echo-c' })
  expect(await (await admin.browser.get('/admin/models?notice=models-saved')).text()).toContain(
    'New threads use Echo C',
  )
  // Back to every model, and the server's default.
  expect((await submit(admin.browser, '/admin/models', { scope: 'all', default: '' })).status).toBe(303)
  expect(await h.store.models.choice(organization)).toEqual({ allowed: null, defaultModel: null })
  const member = await signedIn(h)
  expect((await member.browser.get('/admin/models')).status).toBe(403)
  expect((await submit(member.browser, '/admin/models', { scope: 'all' })).status).toBe(403)
  expect(await h.store.models.choice(organization)).toEqual({ allowed: null, defaultModel: null })
})
