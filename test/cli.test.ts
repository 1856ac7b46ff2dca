// The operator CLI and start-up configuration, run as real processes against a real SQLite file.
import { Database } from 'bun:sqlite'
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolvePersonalAccessToken } from '../src/auth/service'
import { loadConfig } from '../src/config'
import { openDatabase } from '../src/db/client'
import { hashSecret } from '../src/shared/security'
import { firstRunToken, startServer, until } from './helpers'

// Every test here starts bun processes, some a whole server (startServer alone allows 20 s to listen).
setDefaultTimeout(30_000)

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-cli-'))
const databasePath = join(dir, 'db.sqlite')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs a command from the repository root to its end: what it printed on each stream, and its exit code. */
async function run(command: string[], env: Record<string, string>) {
  const child = Bun.spawn(command, {
    cwd: `${import.meta.dir}/..`,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { stdout, stderr, code }
}

/** The CLI exactly as operators run it, through package.json's script (bunfig.toml keeps `bun run` quiet). */
function cli(...args: string[]) {
  return run(['bun', 'run', 'cli', ...args], { DATABASE_PATH: databasePath })
}

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

  const db = openDatabase(databasePath)
  const caller = resolvePersonalAccessToken(db, hashSecret(secret), Date.now())?.caller
  db.$client.close()
  expect(caller).toMatchObject({ email: 'ops@example.com', role: 'admin', organizationSlug: 'ops' })
  expect([...(caller?.scopes ?? [])].sort()).toEqual(['threads:read', 'threads:write'])
})

test.each([
  [['user:create', '--email', 'x@example.com'], '--password is required'],
  [['user:create', '--email', 'ops@example.com', '--password', 'another-password'], 'already exists'],
  [['user:create', '--email', 'y@example.com', '--password', 'password123', '--role', 'king'], '--role'],
  [['token:create', '--email', 'nobody@example.com', '--scopes', 'threads:read'], 'No user'],
  [['token:create', '--email', 'ops@example.com', '--scopes', 'threads:admin'], 'Unknown scope'],
  [['launch-rockets'], 'Unknown command'],
  [['user:create', '--bogus'], 'bogus'],
])('%j fails with one error line and a non-zero exit', async (args, message) => {
  const result = await cli(...args)
  expect(result.code).not.toBe(0)
  expect(result.stdout).toBe('')
  expect(result.stderr.trim().split('\n')).toHaveLength(1)
  expect(result.stderr).toContain(message)
})

test('configuration errors name the variable; unset values take the documented defaults', () => {
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

test('the server refuses to start on a bad variable, with one line naming it', async () => {
  const { stderr, code } = await run(['bun', 'src/index.ts'], {
    DATABASE_PATH: databasePath,
    ECHO_TOKEN_DELAY_MS: 'soon',
  })
  expect(code).toBe(1)
  expect(stderr.trim().split('\n')).toEqual([expect.stringContaining('ECHO_TOKEN_DELAY_MS')])
})

test('a start that cannot listen says so in one line and keeps the first run for the start that can', async () => {
  const fresh = join(dir, 'fresh.sqlite')
  const { stdout, stderr, code } = await run(['bun', 'src/index.ts'], {
    DATABASE_PATH: fresh,
    HOST: 'not_a_host',
    PORT: '0',
  })
  expect({ code, stdout }).toEqual({ code: 1, stdout: '' })
  expect(stderr.trim().split('\n').at(-1)).toStartWith('Cannot listen on HOST not_a_host, PORT 0: ')
  await using server = await startServer({ DATABASE_PATH: fresh })
  expect(await firstRunToken(server)).toMatch(/^thp_/)
})

test('backup makes a consistent copy while the server writes', async () => {
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
  const target = join(dir, 'backup.sqlite')
  const result = await cli('backup', '--to', target)
  writing = false
  await writer
  expect(result).toMatchObject({ code: 0, stderr: '' })
  expect((await cli('backup', '--to', target)).stderr).toContain('already exists')

  const copy = new Database(target, { readonly: true })
  expect(copy.query('pragma integrity_check').get()).toEqual({ integrity_check: 'ok' })
  const copied = (copy.query('select count(*) as n from threads').get() as { n: number }).n
  copy.close()
  expect(copied).toBeGreaterThanOrEqual(5)
  expect(copied).toBeLessThanOrEqual(writes)
}, 30_000)
