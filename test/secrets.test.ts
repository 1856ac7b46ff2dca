// After a full session against the real server, neither the database files nor the logs hold any
// password or token in plain text.
import { expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { backendEnv } from './support/backend'
import { collect, firstRunToken, parseEvents, startServer } from './support/helpers'
import { authorizeUrl, Browser, basic, decide, locationOf } from './support/oauth-helpers'
import { dumpDatabase } from './support/postgres'

test('no plaintext secret in the database or the logs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadhouse-secrets-'))
  const password = 'plaintext-password-canary'
  try {
    // On PostgreSQL runs the server's database and bucket, which the CLI below must reach too.
    const env = await backendEnv({
      DATABASE_PATH: join(dir, 'db.sqlite'),
      ECHO_TOKEN_DELAY_MS: '0',
      LOG_LEVEL: 'debug',
      ADMIN_EMAIL: 'owner@example.com',
      ADMIN_PASSWORD: password,
    })
    await using server = await startServer(env)
    const token = await firstRunToken(server)
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
    await collect(parseEvents(await fetch(stream, { headers: { authorization: `Bearer ${second}` } })))
    await fetch(`${server.url}/api/v1/me`, { headers: { authorization: 'Bearer thp_wrong-token-canary' } })

    // The OAuth side: a registration token, a confidential client, sign-in, consent, code, tokens, refresh.
    const registrationToken =
      Bun.spawnSync(['bun', 'src/cli.ts', 'registration-token:create', '--email', 'owner@example.com'], {
        cwd: `${import.meta.dir}/..`,
        env: { ...process.env, ...env },
      })
        .stdout.toString()
        .trim()
        .split('\n')
        .at(-1) ?? ''
    const registered = (await (
      await fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { authorization: `Bearer ${registrationToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Canary app', redirect_uris: ['http://127.0.0.1/callback'] }),
      })
    ).json()) as { client_id: string; client_secret: string }
    const browser = Browser.overHttp(server.url)
    expect((await browser.signIn('owner@example.com', password)).status).toBe(303)
    const session = [...browser.cookies.values()].join(' ')
    const consent = await decide(
      browser,
      authorizeUrl({
        response_type: 'code',
        client_id: registered.client_id,
        redirect_uri: 'http://127.0.0.1:5000/callback',
        scope: 'threads:read',
        state: 'canary',
      }),
      'approve',
    )
    const code = locationOf(consent).searchParams.get('code') ?? ''
    const exchange = async (fields: Record<string, string>) =>
      (await (
        await fetch(`${server.url}/oauth/token`, {
          method: 'POST',
          headers: { authorization: basic(registered.client_id, registered.client_secret) },
          body: new URLSearchParams(fields),
        })
      ).json()) as { access_token: string; refresh_token: string }
    const issued = await exchange({
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:5000/callback',
    })
    const refreshed = await exchange({ grant_type: 'refresh_token', refresh_token: issued.refresh_token })
    expect(
      (await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${refreshed.access_token}` } }))
        .status,
    ).toBe(200)

    const oauthSecrets = [
      registrationToken,
      registered.client_secret,
      code,
      issued.access_token,
      issued.refresh_token,
      refreshed.access_token,
      refreshed.refresh_token,
      ...session.split(' '),
    ]
    for (const value of oauthSecrets) expect(value.length).toBeGreaterThan(20)
    const secrets = [password, token, second, token.slice(4), second.slice(4), ...oauthSecrets]
    if (env.DATABASE_URL) {
      // PostgreSQL: every row of the server's database, as pg_dump writes it.
      const rows = dumpDatabase(env.DATABASE_URL)
      expect(rows).toContain('owner@example.com')
      for (const secret of secrets) expect(rows.includes(secret)).toBe(false)
    } else {
      const files = readdirSync(dir).filter((name) => name.startsWith('db.sqlite'))
      expect(files.length).toBeGreaterThan(0)
      for (const file of files) {
        const bytes = readFileSync(join(dir, file)).toString('latin1')
        for (const secret of secrets) expect(bytes.includes(secret)).toBe(false)
      }
    }
    await server[Symbol.asyncDispose]() // every log line written, none still in the pipe
    const logs = server.stderr()
    expect(logs).toContain('"msg":"request"')
    for (const secret of [...secrets, 'wrong-token-canary']) expect(logs.includes(secret)).toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
