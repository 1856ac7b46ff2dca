// The operator CLI and start-up configuration, run as real processes against a real database: a SQLite file, or
// on PostgreSQL runs a database of the run's cluster (created empty, so that `migrate` is what makes it). Backup and
// restore copy the SQLite file, so their tests are SQLite's alone.
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { resolvePersonalAccessToken } from '../src/auth/personal-access-tokens'
import { signIn, validateSession } from '../src/auth/sessions'
import { runCli } from '../src/cli'
import { loadConfig } from '../src/config'
import { sealedFor } from '../src/connectors/repository'
import { backup, restore } from '../src/operations/backup'
import { secretBox } from '../src/shared/secret-box'
import { hashSecret } from '../src/shared/security'
import { LocalBlobStore } from '../src/storage/blobs'
import { signInOrigin } from './support/audit'
import { databaseOf, onPostgres, unmigratedEnv } from './support/backend'
import { firstRunToken, harness, runToEnd, startServer, until } from './support/helpers'

// Every test here starts bun processes, some a whole server (startServer alone allows 20 s to listen), and most of
// them at once.

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-cli-'))
const databasePath = join(dir, 'db.sqlite')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const run = runToEnd

/**
 * The database the commands share, made by `migrate` below, and one that is not there: DATABASE_PATH, or on
 * PostgreSQL runs DATABASE_URL.
 */
let shared: Record<string, string> = {}
let missing: Record<string, string> = {}
beforeAll(async () => {
  ;({ env: shared, missing } = await unmigratedEnv(databasePath))
})

/** The CLI exactly as operators run it, through package.json's script (bunfig.toml keeps `bun run` quiet). */
function cli(...args: string[]) {
  return run(['bun', 'run', 'cli', ...args], shared)
}

/** The command names `help` lists, in its order. */
const commandNames = [
  'migrate',
  'user:create',
  'user:list',
  'user:reset-password',
  'token:create',
  'registration-token:create',
  'webhook:create',
  'mcp-server:add',
  'mcp-server:list',
  'mcp-server:remove',
  'models:list',
  'models:set',
  'quota:set',
  'quota:show',
  'audit:verify',
  'audit:retention',
  'backup',
  'restore',
  'db:copy',
  'help',
]

/** What runCli prints for these arguments, in this process. */
async function printed(...args: string[]): Promise<string> {
  const lines: string[] = []
  await runCli(args, (line) => lines.push(line))
  return lines.join('\n')
}

test('help lists every command and describes each one, reading neither the configuration nor a database', async () => {
  const nowhere = join(dir, 'no-such-folder', 'db.sqlite')
  // A bad variable too: help must not even read the configuration.
  const env = { DATABASE_PATH: nowhere, PORT: 'eighty' }
  const [help, dashed] = await Promise.all([
    run(['bun', 'run', 'cli', 'help'], env),
    run(['bun', 'run', 'cli', '--help'], env),
  ])
  expect(help).toMatchObject({ code: 0, stderr: '' })
  expect(dashed).toEqual(help)
  const listed = help.stdout.split('\n').flatMap((line) => line.match(/^ {2}([a-z:-]+)/)?.[1] ?? [])
  expect(listed).toEqual(commandNames)

  const one = await run(['bun', 'run', 'cli', 'restore', '--help'], env)
  expect(one).toMatchObject({ code: 0, stderr: '' })
  expect(one.stdout).toStartWith('Usage: bun run cli restore --from DIR\n')
  expect(existsSync(join(dir, 'no-such-folder'))).toBe(false)

  for (const name of commandNames.filter((command) => command !== 'help')) {
    const text = await printed(name, '--help')
    expect(text).toStartWith(`Usage: bun run cli ${name}`)
    expect(text).toContain('--help')
    expect(await printed('help', name)).toBe(text)
    expect(await printed(name, '--email', 'x@example.com', '-h')).toBe(text)
  }
  expect(await printed('help', 'help')).toBe(help.stdout.trimEnd())
  expect(await printed('user:create', '--help')).toContain('--role ROLE')
  await expect(printed('help', 'launch-rockets')).rejects.toThrow('Unknown command "launch-rockets"')
})

test.skipIf(onPostgres)('commands refuse a missing database and create nothing; migrate creates it', async () => {
  for (const args of [['user:list'], ['token:create', '--email', 'a@example.com', '--scopes', 'threads:read']]) {
    const refused = await cli(...args)
    expect(refused).toMatchObject({ code: 1, stdout: '' })
    expect(refused.stderr.trim().split('\n')).toEqual([
      `error: There is no database at ${databasePath}; start the server once (bun run start) or create it with bun run cli migrate`,
    ])
  }
  expect(readdirSync(dir)).toEqual([])

  const created = await cli('migrate')
  expect(created).toMatchObject({ code: 0, stderr: '' })
  expect(created.stdout).toStartWith(`Created ${databasePath} and applied `)
  expect(created.stdout).toMatch(/ applied \d+ migrations \(up to 0\d+_\w+\)\n$/)
  const again = await cli('migrate')
  expect(again).toMatchObject({ code: 0, stderr: '' })
  expect(again.stdout).toStartWith(`${databasePath} is up to date (latest migration `)
})

test.skipIf(!onPostgres)(
  'with DATABASE_URL, commands refuse a database that is not there in one line; migrate migrates an empty one',
  async () => {
    const url = new URL(missing.DATABASE_URL ?? '')
    const name = url.pathname.slice(1)
    for (const args of [['user:list'], ['token:create', '--email', 'a@example.com', '--scopes', 'threads:read']]) {
      const refused = await run(['bun', 'run', 'cli', ...args], missing)
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' })
      expect(refused.stderr.trim().split('\n')).toEqual([
        `error: Cannot use the PostgreSQL database ${name} at ${url.host} (DATABASE_URL): database "${name}" does not exist`,
      ])
    }
    const migrated = await cli('migrate')
    expect(migrated).toEqual({
      code: 0,
      stderr: '',
      stdout: 'The PostgreSQL database DATABASE_URL names is up to date\n',
    })
    // The empty database now has every table, and a second run finds nothing to do.
    expect(await cli('user:list')).toEqual({
      code: 0,
      stderr: '',
      stdout: 'email\tname\torganization\trole\tcreated\tstatus\n',
    })
    expect(await cli('migrate')).toEqual(migrated)
  },
)

test('user:create and token:create; the secret is the last line of stdout', async () => {
  const created = await cli(
    'user:create',
    '--email',
    'Ops@Example.com',
    '--password',
    'hunter2hunter2',
    '--org',
    'ops',
    '--role',
    'admin',
    '--name',
    'Ops',
  )
  expect(created).toMatchObject({ code: 0, stderr: '' })
  expect(created.stdout).toContain('ops@example.com')

  const token = await cli(
    'token:create',
    '--email',
    'ops@example.com',
    '--scopes',
    'threads:read threads:write',
    '--name',
    'ci',
  )
  expect(token.code).toBe(0)
  const secret = token.stdout.trimEnd().split('\n').at(-1) ?? ''
  expect(secret).toMatch(/^thp_[a-z2-7]{39}$/)

  await using db = await databaseOf(shared)
  const caller = (await resolvePersonalAccessToken(db.store.accessTokens, hashSecret(secret), Date.now()))?.caller
  expect(caller).toMatchObject({ email: 'ops@example.com', role: 'admin', organizationSlug: 'ops' })
  expect([...(caller?.scopes ?? [])].sort()).toEqual(['threads:read', 'threads:write'])
})

// Alone: its server holds the database the commands below also use. A test of the SQLite file's backup, on SQLite
// only: with DATABASE_URL the CLI refuses backup and restore and points at pg_dump (docs/operations.md).
test.serial.skipIf(onPostgres)(
  'backup makes a consistent copy while the server writes',
  async () => {
    const env = { DATABASE_PATH: databasePath, ECHO_TOKEN_DELAY_MS: '0' }
    await using server = await startServer(env)
    const token = (await cli('token:create', '--email', 'ops@example.com', '--scopes', 'threads:write')).stdout
      .trimEnd()
      .split('\n')
      .at(-1)
    let writes = 0
    let writing = true
    const writer = (async () => {
      while (writing) {
        const reply = await fetch(`${server.url}/api/v1/threads`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `w${writes}`, text: 'keep writing' }),
        })
        expect(reply.status).toBe(201)
        writes += 1
      }
    })()
    await until(() => writes >= 5)
    const target = join(dir, 'backup')
    const result = await cli('backup', '--to', target)
    writing = false
    await writer
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect((await cli('backup', '--to', target)).stderr).toContain('already exists')
    expect(readdirSync(target).sort()).toEqual(['backup.json', 'threadhouse.sqlite', 'uploads'])

    const copy = new Database(join(target, 'threadhouse.sqlite'), { readonly: true })
    expect(copy.query('pragma integrity_check').get()).toEqual({ integrity_check: 'ok' })
    const copied = (copy.query('select count(*) as n from threads').get() as { n: number }).n
    copy.close()
    expect(copied).toBeGreaterThanOrEqual(5)
    expect(copied).toBeLessThanOrEqual(writes)
  },
  30_000,
)

// From here on the tests share only what they read, or use folders of their own: they run concurrently.
test.concurrent.each([
  [['user:create', '--email', 'x@example.com'], '--password is required'],
  [['user:create', '--email', 'ops@example.com', '--password', 'another-password'], 'already exists'],
  [['user:create', '--email', 'y@example.com', '--password', 'password123', '--role', 'king'], '--role'],
  [['token:create', '--email', 'nobody@example.com', '--scopes', 'threads:read'], 'No user'],
  [['token:create', '--email', 'ops@example.com', '--scopes', 'threads:admin'], 'Unknown scope'],
  [['user:reset-password', '--email', 'nobody@example.com'], 'No user with email nobody@example.com'],
  [['launch-rockets'], 'Unknown command'],
  [['user:create', '--bogus'], 'bogus'],
  [['user:list', '--to', 'somewhere'], "Unknown option '--to'"],
  [['user:list', 'extra'], 'Unexpected argument'],
  // With DATABASE_URL these two point at pg_dump instead (the test after this one).
  ...(onPostgres
    ? []
    : [
        [['backup'], '--to is required'],
        [['restore', '--from', '/nonexistent/backup'], 'not a Threadhouse backup'],
      ]),
  [[], 'No command'],
] as [string[], string][])('%j fails with one error line and a non-zero exit', async (args, message) => {
  const result = await cli(...args)
  expect(result.code).not.toBe(0)
  expect(result.stdout).toBe('')
  expect(result.stderr.trim().split('\n')).toHaveLength(1)
  expect(result.stderr).toContain(message)
})

test.concurrent('user:list shows every user; user:reset-password prints a one-time password last and ends web sessions', async () => {
  const list = await cli('user:list')
  expect(list).toMatchObject({ code: 0, stderr: '' })
  const [header, ...rows] = list.stdout.trimEnd().split('\n')
  expect(header).toBe('email\tname\torganization\trole\tcreated\tstatus')
  expect(rows.map((row) => row.split('\t'))).toEqual([
    ['ops@example.com', 'Ops', 'ops', 'admin', expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/), 'active'],
  ])

  await using db = await databaseOf(shared)
  const store = db.store
  const before = await signIn(store, 'ops@example.com', 'hunter2hunter2', Date.now(), signInOrigin)
  expect(before).not.toBeNull()
  const reset = await cli('user:reset-password', '--email', 'OPS@example.com')
  expect(reset).toMatchObject({ code: 0, stderr: '' })
  const lines = reset.stdout.trimEnd().split('\n')
  expect(lines).toHaveLength(2)
  expect(lines[0]).toContain('ended 1 web session')
  const password = lines.at(-1) ?? ''
  expect(password).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/)

  expect(await validateSession(store.sessions, before?.token ?? '', Date.now())).toBeNull()
  expect(await signIn(store, 'ops@example.com', 'hunter2hunter2', Date.now(), signInOrigin)).toBeNull()
  expect(await signIn(store, 'ops@example.com', password, Date.now(), signInOrigin)).toMatchObject({
    mustChangePassword: true,
  })
  expect((await cli('user:list')).stdout).toContain('\tmust-change-password\n')
})

test.concurrent('mcp-server:add prints the id last and seals --header values; mcp-server:list and mcp-server:remove', async () => {
  const key = 'q1VHqkR1Y9Gx2o8CSzX8Vn1mVzQy0V0mZ9Ykz6b7r0A='
  const env = { ...shared, SECRETS_KEY: key }
  const mcp = (...args: string[]) => run(['bun', 'run', 'cli', ...args], env)
  const secret = 'sk-cli-7d1e0c9b8a'
  // The organization user:create made above.
  const added = await mcp(
    'mcp-server:add',
    '--org',
    'ops',
    '--name',
    'docs',
    '--url',
    'https://mcp.example.com/mcp',
    '--header',
    `Authorization: Bearer ${secret}`,
    '--header',
    'X-Team: blue',
    '--trusted',
  )
  expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: '' })
  const lines = added.stdout.trimEnd().split('\n')
  expect(lines).toEqual([
    'MCP server docs added to ops at https://mcp.example.com/mcp (headers Authorization, X-Team, trusted); ' +
      'its tool list is not fetched yet (press Refresh on its administration page)',
    expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  ])
  const id = lines.at(-1) ?? ''
  expect(added.stdout).not.toContain(secret)
  {
    await using db = await databaseOf(shared)
    const organizationId = (await db.store.users.organizationIdBySlug('ops')) ?? -1
    const server = await db.store.mcpServers.get(organizationId, id)
    expect(server).toMatchObject({ name: 'docs', auth: 'headers', trusted: true, status: 'pending' })
    expect(server?.headersSealed).toStartWith('v1.')
    expect(server?.headersSealed).not.toContain(secret)
    expect(JSON.parse(secretBox({ current: key }).open(server?.headersSealed ?? '', sealedFor.headers(id)))).toEqual({
      Authorization: `Bearer ${secret}`,
      'X-Team': 'blue',
    })
  }
  // Headers piped in, so that no value is in the process list.
  const piped = Bun.spawn(
    [
      'bun',
      'run',
      'cli',
      'mcp-server:add',
      '--org',
      'ops',
      '--name',
      'piped',
      '--url',
      'https://p.example.com/mcp',
      '--headers-stdin',
    ],
    {
      cwd: `${import.meta.dir}/..`,
      env: { ...process.env, ...env },
      stdin: new Blob([`Authorization: Bearer ${secret}\n\nX-Team: red\n`]),
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const pipedOut = await new Response(piped.stdout).text()
  expect(await piped.exited).toBe(0)
  expect(pipedOut).toContain('(headers Authorization, X-Team)')
  expect((await mcp('mcp-server:remove', '--org', 'ops', '--name', 'piped')).code).toBe(0)
  const plain = await mcp('mcp-server:add', '--org', 'ops', '--name', 'wiki', '--url', 'https://wiki.example.com/mcp')
  expect(plain.code).toBe(0)
  const wikiId = plain.stdout.trimEnd().split('\n').at(-1) ?? ''
  expect(plain.stdout).toContain('(no authentication)')

  // Refused, each in one line, nothing stored: no key for headers, a private address, a taken name, a user's token.
  for (const [args, extra, message] of [
    [['--name', 'x', '--url', 'https://x.example.com/', '--header', 'A: b'], { SECRETS_KEY: '' }, 'SECRETS_KEY'],
    [['--name', 'x', '--url', 'http://127.0.0.1:9/mcp'], {}, 'WEBHOOKS_ALLOW_PRIVATE_NETWORKS'],
    [['--name', 'docs', '--url', 'https://x.example.com/'], {}, 'already has a server named docs'],
    [['--name', 'x', '--url', 'https://x.example.com/', '--header', 'Authorization: thp_x'], {}, 'Threadhouse token'],
    [['--name', 'X Y', '--url', 'https://x.example.com/'], {}, 'lower-case letters'],
    [['--name', 'x', '--url', 'https://x.example.com/', '--org', 'nowhere'], {}, 'No organization with slug nowhere'],
  ] as [string[], Record<string, string>, string][]) {
    const withOrg = args.includes('--org') ? args : ['--org', 'ops', ...args]
    const refused = await run(['bun', 'run', 'cli', 'mcp-server:add', ...withOrg], { ...env, ...extra })
    expect({ args, code: refused.code, stdout: refused.stdout, says: refused.stderr.includes(message) }).toEqual({
      args,
      code: 1,
      stdout: '',
      says: true,
    })
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1)
  }
  // With the switch, a private address is the operator's choice.
  const local = await run(
    ['bun', 'run', 'cli', 'mcp-server:add', '--org', 'ops', '--name', 'local', '--url', 'http://127.0.0.1:9/mcp'],
    { ...env, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' },
  )
  expect(local.code).toBe(0)
  const localId = local.stdout.trimEnd().split('\n').at(-1) ?? ''

  const listed = await mcp('mcp-server:list', '--org', 'ops')
  expect({ code: listed.code, lines: listed.stdout.trimEnd().split('\n') }).toEqual({
    code: 0,
    lines: [
      'id\tname\turl\tauth\ttrusted\ttools\tstatus',
      `${id}\tdocs\thttps://mcp.example.com/mcp\theaders\tyes\t0/0\tpending`,
      `${localId}\tlocal\thttp://127.0.0.1:9/mcp\tnone\tno\t0/0\tpending`,
      `${wikiId}\twiki\thttps://wiki.example.com/mcp\tnone\tno\t0/0\tpending`,
    ],
  })
  expect(listed.stdout).not.toContain(secret)
  for (const name of ['docs', 'local']) {
    const removed = await mcp('mcp-server:remove', '--org', 'ops', '--name', name)
    expect(removed).toMatchObject({ code: 0, stderr: '' })
    expect(removed.stdout).toStartWith(`Removed MCP server ${name} (`)
  }
  expect((await mcp('mcp-server:remove', '--org', 'ops', '--name', 'docs')).stderr).toBe(
    'error: No MCP server named docs in ops\n',
  )
  expect((await mcp('mcp-server:list', '--org', 'ops')).stdout.trimEnd().split('\n').slice(1)).toEqual([
    `${wikiId}\twiki\thttps://wiki.example.com/mcp\tnone\tno\t0/0\tpending`,
  ])
  expect((await mcp('mcp-server:add', '--help')).stdout).toContain(
    'mcp-server:add --org SLUG --name NAME --url URL [--header "Name: value"]... [--headers-stdin] [--trusted]',
  )
})

test.concurrent('models:list shows the configured models; models:set chooses an organization’s, its default among them', async () => {
  const models = JSON.stringify([
    { id: 'echo-a', name: 'Echo A', provider: 'echo' },
    { id: 'echo-b', name: 'Echo B', provider: 'echo', default: true },
  ])
  const env = { ...shared, LLM_MODELS: models }
  const models$ = (...args: string[]) => run(['bun', 'run', 'cli', ...args], env)
  const listed = await models$('models:list')
  expect(listed).toMatchObject({ code: 0, stderr: '' })
  expect(listed.stdout.trimEnd().split('\n')).toEqual([
    'id\tname\tprovider\tcontext_tokens\tdefault',
    'echo-a\tEcho A\techo\t100000\tno',
    'echo-b\tEcho B\techo\t100000\tyes',
  ])
  // The organization user:create made above.
  const set = await models$('models:set', '--org', 'ops', '--allow', 'echo-a', '--default', 'echo-a')
  expect(set).toMatchObject({ code: 0, stderr: '', stdout: 'ops may use echo-a; default echo-a\n' })
  expect((await models$('models:list', '--org', 'ops')).stdout.trimEnd().split('\n')).toEqual([
    'id\tname\tprovider\tcontext_tokens\tdefault\tallowed',
    'echo-a\tEcho A\techo\t100000\tyes\tyes',
    'echo-b\tEcho B\techo\t100000\tno\tno',
  ])
  // Refused, each in one line, the choice unchanged: a default not allowed, an unknown model or organization.
  for (const [args, message] of [
    [['--org', 'ops', '--default', 'echo-b'], 'The default model "echo-b" must be among the allowed models'],
    [['--org', 'ops', '--allow', 'echo-a,gpt-9'], '"gpt-9" is not a configured model'],
    [['--org', 'nowhere', '--allow', 'all'], 'No organization with slug nowhere'],
    [['--org', 'ops'], 'Give --allow, --default or both'],
  ] as [string[], string][]) {
    const refused = await models$('models:set', ...args)
    expect({ code: refused.code, stdout: refused.stdout, stderr: refused.stderr }).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: ${message}\n`,
    })
  }
  const all = await models$('models:set', '--org', 'ops', '--allow', 'all', '--default', '')
  expect(all.stdout).toBe('ops may use every configured model; default echo-b\n')
})

test.concurrent('the server refuses to start on a bad models entry, with one line naming it', async () => {
  const list = JSON.stringify([
    { id: 'broken', name: 'Broken', provider: 'openai', model: 'x', api_key_env: 'NO_SUCH_KEY' },
  ])
  const { stderr, code } = await run(['bun', 'src/index.ts'], { ...shared, LLM_MODELS: list })
  expect(code).toBe(1)
  expect(stderr.trim().split('\n')).toEqual([
    'Configuration error: LLM_MODELS: model "broken" needs "context_tokens" and "max_output_tokens"',
  ])
})

test.concurrent('with DATABASE_URL, backup and restore refuse in one line and point at pg_dump, connecting to nothing', async () => {
  // Port 1 on loopback: nothing listens, so a command that tried to connect would fail differently.
  const env = { DATABASE_URL: 'postgres://ops:secret-password@127.0.0.1:1/threadhouse' }
  for (const args of [
    ['backup', '--to', join(dir, 'never')],
    ['restore', '--from', join(dir, 'never')],
  ]) {
    const result = await run(['bun', 'run', 'cli', ...args], env)
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 1, stdout: '' })
    expect(result.stderr.trim()).toBe(
      `error: ${args[0]} copies the SQLite file; with DATABASE_URL use pg_dump and pg_restore (see docs/operations.md)`,
    )
  }
})

test.concurrent('configuration errors name the variable; unset values take the documented defaults', () => {
  expect(loadConfig({})).toMatchObject({
    PORT: 3000,
    HOST: '0.0.0.0',
    PUBLIC_URL: 'http://localhost:3000',
    DATABASE_PATH: 'db/threadhouse.sqlite',
    UPLOADS_DIR: 'uploads',
    LLM_PROVIDER: 'echo',
    ECHO_TOKEN_DELAY_MS: 15,
    LOG_LEVEL: 'info',
  })
  expect(loadConfig({ PORT: '8080' }).PUBLIC_URL).toBe('http://localhost:8080')
  expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/^PORT/)
  expect(() => loadConfig({ PORT: '70000' })).toThrow(/^PORT/)
  expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(/^LOG_LEVEL/)
  expect(() => loadConfig({ PUBLIC_URL: 'https://example.com/' })).toThrow(/^PUBLIC_URL/)
  expect(() => loadConfig({ LLM_PROVIDER: 'skynet' })).toThrow(/^LLM_PROVIDER/)
  expect(() => loadConfig({ ADMIN_EMAIL: 'a@b.c' })).toThrow(/ADMIN_PASSWORD/)
})

test.concurrent('the server refuses to start on a bad variable, with one line naming it', async () => {
  const { stderr, code } = await run(['bun', 'src/index.ts'], { ...shared, ECHO_TOKEN_DELAY_MS: 'soon' })
  expect(code).toBe(1)
  expect(stderr.trim().split('\n')).toEqual([expect.stringContaining('ECHO_TOKEN_DELAY_MS')])
})

test.concurrent('a start that cannot listen says so in one line and keeps the first run for the start that can', async () => {
  const { env } = await unmigratedEnv(join(dir, 'fresh.sqlite'))
  const { stdout, stderr, code } = await run(['bun', 'src/index.ts'], { ...env, HOST: 'not_a_host', PORT: '0' })
  expect({ code, stdout }).toEqual({ code: 1, stdout: '' })
  expect(stderr.trim().split('\n').at(-1)).toStartWith('Cannot listen on HOST not_a_host, PORT 0: ')
  await using server = await startServer(env)
  expect(await firstRunToken(server)).toMatch(/^thp_/)
})

/** A JPEG wide enough that the upload keeps a scaled copy (`<id>.resized`) beside the original. */
async function wideJpeg(): Promise<Uint8Array> {
  const image = sharp({ create: { width: 3000, height: 1000, channels: 3, background: '#3a7' } })
  return new Uint8Array(await image.jpeg().toBuffer())
}

function uploadsOf(folder: string): string[] {
  return readdirSync(folder).sort()
}

// The SQLite file's backup and restore, on SQLite only: on PostgreSQL the CLI points at pg_dump instead.
test.concurrent.skipIf(onPostgres)(
  'backup, change or wipe everything, restore: the thread, its files and the tokens are back',
  async () => {
    const home = mkdtempSync(join(tmpdir(), 'threadhouse-restore-'))
    const database = join(home, 'data', 'db.sqlite')
    const uploads = join(home, 'uploads')
    const env = { DATABASE_PATH: database, UPLOADS_DIR: uploads, ECHO_TOKEN_DELAY_MS: '0' }
    const inHome = (...args: string[]) => run(['bun', 'run', 'cli', ...args], env)
    const notes = '# Notes\n\nKept across a restore.\n'
    const photo = await wideJpeg()
    try {
      const server = await startServer(env)
      const token = await firstRunToken(server)
      const headers = { authorization: `Bearer ${token}` }
      const api = (path: string, init: RequestInit = {}) =>
        fetch(`${server.url}/api/v1${path}`, { ...init, headers: { ...headers, ...init.headers } })
      const thread = (await (
        await api('/threads', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'kept' }),
        })
      ).json()) as { thread_id: string }
      const form = new FormData()
      form.append('attachments[0]', new File([notes], 'notes.md', { type: 'text/markdown' }))
      form.append('attachments[1]', new File([photo], 'wide.jpg', { type: 'image/jpeg' }))
      const uploaded = await api(`/threads/${thread.thread_id}/attachments`, { method: 'POST', body: form })
      expect(uploaded.status).toBe(201)
      const [text, image] = (await uploaded.json()) as [{ id: string }, { id: string }]
      const files = [text.id, image.id, `${image.id}.resized`].sort()
      expect(uploadsOf(uploads)).toEqual(expect.arrayContaining(files))

      const target = join(home, 'backups', 'first')
      const made = await inHome('backup', '--to', target)
      expect(made).toMatchObject({ code: 0, stderr: '' })
      expect(made.stdout).toContain('1 thread, 0 messages, 2 attachments; 3 files, ')
      expect(uploadsOf(join(target, 'uploads'))).toEqual(files)
      expect(JSON.parse(readFileSync(join(target, 'backup.json'), 'utf8'))).toMatchObject({
        format: 'threadhouse-backup',
        version: 1,
        counts: { organizations: 1, users: 1, threads: 1, messages: 0, attachments: 2 },
        files: 3,
      })

      // Work after the backup, which the restore must undo.
      const later = await api('/threads', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'after the backup' }),
      })
      expect(later.status).toBe(201)
      const refused = await inHome('restore', '--from', target)
      expect(refused).toMatchObject({ code: 1, stdout: '' })
      expect(refused.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(/running on it|open in another process/),
      ])
      expect((await api('/threads')).status).toBe(200)

      // Killed, the server leaves its -wal and -shm beside the database, which must not be replayed into the backup.
      await server[Symbol.asyncDispose]()
      writeFileSync(join(uploads, 'stray'), 'not from the backup')
      writeFileSync(join(uploads, '.gitkeep'), '')
      const restored = await inHome('restore', '--from', target)
      expect(restored).toMatchObject({ code: 0, stderr: '' })
      expect(restored.stdout).toContain('1 thread, 0 messages, 2 attachments; 3 files; integrity check ok')
      expect(uploadsOf(uploads)).toEqual(['.gitkeep', ...files].sort())
      // No -wal, -shm or staged copy left; the instance lock's file stays, as a server leaves it.
      expect(readdirSync(join(home, 'data')).filter((name) => name !== 'db.sqlite.lock')).toEqual(['db.sqlite'])
      const db = new Database(database, { readonly: true })
      expect(db.query('select name from threads').all()).toEqual([{ name: 'kept' }])
      db.close()

      // Everything gone, the database's folder included: the restore alone brings it all back.
      rmSync(join(home, 'data'), { recursive: true })
      rmSync(uploads, { recursive: true })
      expect((await inHome('restore', '--from', target)).code).toBe(0)
      expect(uploadsOf(uploads)).toEqual(files)

      await using again = await startServer(env)
      const fetchAgain = (path: string) => fetch(`${again.url}/api/v1${path}`, { headers })
      expect(await (await fetchAgain(`/threads/${thread.thread_id}`)).json()).toMatchObject({ name: 'kept' })
      const download = await fetchAgain(`/threads/${thread.thread_id}/attachments/${text.id}`)
      expect(await download.text()).toBe(notes)
      const picture = await fetchAgain(`/threads/${thread.thread_id}/attachments/${image.id}`)
      expect(Buffer.from(await picture.arrayBuffer()).equals(Buffer.from(photo))).toBe(true)
      expect(again.stdout()).not.toContain('Threadhouse is set up')
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  },
  60_000,
)

// The SQLite file's backup (it copies h.db), on SQLite only: on PostgreSQL the CLI points at pg_dump instead.
test.concurrent.skipIf(onPostgres)(
  'a backup leaves out attachments whose files went missing; restore refuses a damaged backup untouched',
  async () => {
    await using h = await harness()
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
    const threadId = created.body.thread_id
    const form = new FormData()
    form.append('attachments[0]', new File(['kept'], 'kept.txt', { type: 'text/plain' }))
    form.append('attachments[1]', new File(['gone'], 'gone.txt', { type: 'text/plain' }))
    const uploaded = await h.call('POST', `/api/v1/threads/${threadId}/attachments`, { token: owner.token, body: form })
    expect(uploaded.status).toBe(201)
    const [kept, gone] = uploaded.body as [{ id: string }, { id: string }]
    rmSync(join(h.uploadsDir, gone.id))

    const home = mkdtempSync(join(tmpdir(), 'threadhouse-backup-'))
    try {
      const target = join(home, 'backup')
      const result = await backup(h.db, h, target, Date.now())
      expect(result).toMatchObject({ leftOut: [gone.id], files: 1, bytes: 4 })
      expect(result.counts.attachments).toBe(1)
      expect(readdirSync(home)).toEqual(['backup'])
      await expect(backup(h.db, h, target, Date.now())).rejects.toThrow('already exists')
      await expect(backup(h.db, h, join(h.uploadsDir, 'b'), Date.now())).rejects.toThrow('inside UPLOADS_DIR')

      const liveUploads = join(home, 'live', 'uploads')
      const live = { databasePath: join(home, 'live', 'db.sqlite'), blobs: new LocalBlobStore(liveUploads) }
      mkdirSync(liveUploads, { recursive: true })
      writeFileSync(join(liveUploads, 'current'), 'current data')
      rmSync(join(target, 'uploads', kept.id))
      await expect(restore(target, live)).rejects.toThrow(`lacks the file ${kept.id}`)
      expect(readdirSync(liveUploads)).toEqual(['current'])
      expect(existsSync(live.databasePath)).toBe(false)

      writeFileSync(join(target, 'uploads', kept.id), 'kept')
      expect(await restore(target, live)).toMatchObject({ files: 1, counts: { threads: 1, attachments: 1 } })
      expect(readdirSync(liveUploads)).toEqual([kept.id])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  },
)
