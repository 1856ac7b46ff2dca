// The operator CLI's registration-token:create, run as a real process against a real database: a SQLite file, or on
// PostgreSQL runs a database of the run's cluster.
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createUser, findUserByEmail } from '../src/auth/users'
import { testOrigin } from './support/audit'
import { databaseOf, migratedEnv } from './support/backend'
import { runToEnd } from './support/helpers'

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-oauth-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('bun run cli registration-token:create prints a usable token as the last line', async () => {
  const env = await migratedEnv(join(dir, 'db.sqlite'))
  await using db = await databaseOf(env)
  await createUser(
    db.store.users,
    { email: 'dev@example.com', password: 'hunter2hunter2', organizationSlug: 'acme', role: 'member' },
    Date.now(),
    testOrigin,
  )
  const cli = (...args: string[]) => runToEnd(['bun', 'run', 'cli', ...args], env)
  const [made, missing] = await Promise.all([
    cli('registration-token:create', '--email', 'dev@example.com'),
    cli('registration-token:create', '--email', 'nobody@example.com'),
  ])
  expect({ code: made.code, stderr: made.stderr }).toEqual({ code: 0, stderr: '' })
  const token = made.stdout.trimEnd().split('\n').at(-1) ?? ''
  expect(token).toMatch(/^thrg_[a-z2-7]{39}$/)
  const [row] = await db.orm.select().from(db.tables.oauthRegistrationTokens)
  const user = await findUserByEmail(db.store.users, 'dev@example.com')
  expect(row).toMatchObject({ userId: user?.id, organizationId: user?.organizationId, usedAt: null })
  expect((row?.expiresAt ?? 0) - (row?.createdAt ?? 0)).toBe(60 * 60_000)

  expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 1, stdout: '' })
  expect(missing.stderr.trim().split('\n')).toEqual(['error: No user with email nobody@example.com'])
})
