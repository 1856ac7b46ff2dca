// The operator CLI's registration-token:create, run as a real process against a real SQLite file.
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createUser, findUserByEmail } from '../src/auth/users'
import { migrateDatabase, openDatabase } from '../src/db/client'
import { oauthRegistrationTokens } from '../src/oauth/oauth.table'
import { sqliteStore } from '../src/store'

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-oauth-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('bun run cli registration-token:create prints a usable token as the last line', async () => {
  const databasePath = join(dir, 'db.sqlite')
  const db = openDatabase(databasePath)
  migrateDatabase(db)
  await createUser(
    sqliteStore(db).users,
    { email: 'dev@example.com', password: 'hunter2hunter2', organizationSlug: 'acme', role: 'member' },
    Date.now(),
  )
  const child = Bun.spawn(['bun', 'run', 'cli', 'registration-token:create', '--email', 'dev@example.com'], {
    cwd: `${import.meta.dir}/..`,
    env: { ...process.env, DATABASE_PATH: databasePath },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  expect(code).toBe(0)
  const token = stdout.trimEnd().split('\n').at(-1) ?? ''
  expect(token).toMatch(/^thrg_[a-z2-7]{39}$/)
  const row = db.select().from(oauthRegistrationTokens).get()
  const user = await findUserByEmail(sqliteStore(db).users, 'dev@example.com')
  expect(row).toMatchObject({ userId: user?.id, organizationId: user?.organizationId, usedAt: null })
  expect((row?.expiresAt ?? 0) - (row?.createdAt ?? 0)).toBe(60 * 60_000)

  const missing = Bun.spawn(['bun', 'run', 'cli', 'registration-token:create', '--email', 'nobody@example.com'], {
    cwd: `${import.meta.dir}/..`,
    env: { ...process.env, DATABASE_PATH: databasePath },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stderr, failed] = await Promise.all([new Response(missing.stderr).text(), missing.exited])
  expect(failed).not.toBe(0)
  expect(stderr).toContain('No user with email nobody@example.com')
  db.$client.close()
}, 30_000)
