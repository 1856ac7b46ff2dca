// After a full session against the real server, neither the database files nor the logs hold any
// password or token in plain text.
import { expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collect, parseEvents, startServer } from './helpers'

test('no plaintext secret in the database or the logs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-secrets-'))
  const password = 'plaintext-password-canary'
  try {
    const env = {
      DATABASE_PATH: join(dir, 'db.sqlite'),
      ECHO_TOKEN_DELAY_MS: '0',
      LOG_LEVEL: 'debug',
      ADMIN_EMAIL: 'owner@example.com',
      ADMIN_PASSWORD: password,
    }
    await using server = await startServer(env)
    const token = server.stdout().trim().split('\n').at(-1) ?? ''
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const cli = Bun.spawnSync(
      ['bun', 'src/cli.ts', 'token:create', '--email', 'owner@example.com', '--scopes', 'threads:read'],
      { cwd: `${import.meta.dir}/..`, env: { ...process.env, ...env } },
    )
    const second = cli.stdout.toString().trim().split('\n').at(-1) ?? ''
    expect(second).toStartWith('thp_')

    const created = (await (
      await fetch(`${server.url}/api/v1/threads`, { method: 'POST', headers, body: JSON.stringify({ text: 'hello' }) })
    ).json()) as { thread_id: string; message_id: string }
    const stream = `${server.url}/api/v1/threads/${created.thread_id}/messages/${created.message_id}/response/stream`
    await collect(parseEvents(await fetch(`${stream}?access_token=${second}`)))
    await fetch(`${server.url}/api/v1/me`, { headers: { authorization: 'Bearer thp_wrong-token-canary' } })

    const secrets = [password, token, second, token.slice(4), second.slice(4)]
    const files = readdirSync(dir).filter((name) => name.startsWith('db.sqlite'))
    expect(files.length).toBeGreaterThan(0)
    for (const file of files) {
      const bytes = readFileSync(join(dir, file)).toString('latin1')
      for (const secret of secrets) expect(bytes.includes(secret)).toBe(false)
    }
    const logs = server.stderr()
    expect(logs).toContain('"msg":"request"')
    for (const secret of [...secrets, 'wrong-token-canary']) expect(logs.includes(secret)).toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 30_000)
