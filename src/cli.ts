// Operator CLI (see README, "Operator CLI"). Prints its result on stdout and exits 0, or one error line
// on stderr and exits 1. A printed secret is always the last line of stdout, alone.
import { existsSync, statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { roles } from './auth/auth.table'
import { isRole } from './auth/members'
import { createPersonalAccessToken, createUser, findUserByEmail, parseScopes } from './auth/service'
import { ConfigError, loadConfig } from './config'
import { migrateDatabase, openDatabase } from './db/client'
import { createRegistrationToken } from './oauth/service'
import { AppError } from './shared/errors'
import { systemClock, toIso } from './shared/time'

const usage = `Usage: bun run cli <command> [options]

  user:create --email E --password P [--name N] [--org SLUG] [--role owner|admin|member]
  token:create --email E --scopes "S1 S2" [--name N]
  registration-token:create --email E
  backup --to FILE`

class UsageError extends Error {}

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name]
  if (!value) throw new UsageError(`--${name} is required`)
  return value
}

export async function runCli(argv: string[], out: (line: string) => void): Promise<void> {
  const [command, ...rest] = argv
  const { values } = parseArgs({
    args: rest,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      name: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
      scopes: { type: 'string' },
      to: { type: 'string' },
    },
    strict: true,
  })
  const config = loadConfig()
  const db = openDatabase(config.DATABASE_PATH)
  try {
    migrateDatabase(db)
    const now = systemClock.now()
    switch (command) {
      case 'user:create': {
        const role = values.role ?? 'member'
        if (!isRole(role)) throw new UsageError(`--role must be one of ${roles.join(', ')}`)
        const user = await createUser(
          db,
          {
            email: required(values, 'email'),
            password: required(values, 'password'),
            name: values.name ?? null,
            organizationSlug: values.org ?? 'default',
            role,
          },
          now,
        )
        out(
          `Created user ${values.email?.toLowerCase()} (id ${user.id}, sub ${user.sub}) in ${values.org ?? 'default'}`,
        )
        return
      }
      case 'token:create': {
        const email = required(values, 'email')
        const user = findUserByEmail(db, email)
        if (!user) throw new UsageError(`No user with email ${email}`)
        const scopes = parseScopes(required(values, 'scopes'))
        const token = createPersonalAccessToken(db, { userId: user.id, name: values.name ?? 'cli', scopes }, now)
        out(`Personal access token for ${user.email} with scopes: ${scopes.join(' ')}`)
        out(token)
        return
      }
      case 'registration-token:create': {
        const email = required(values, 'email')
        const user = findUserByEmail(db, email)
        if (!user) throw new UsageError(`No user with email ${email}`)
        const created = createRegistrationToken(db, user, now)
        out(
          `Registration token for ${user.email}'s organization: single use, valid until ${toIso(created.expiresAt)}. ` +
            'Send it as "Authorization: Bearer <token>" to POST /oauth/register.',
        )
        out(created.token)
        return
      }
      case 'backup': {
        const target = required(values, 'to')
        if (existsSync(target)) throw new UsageError(`${target} already exists; choose a new file`)
        // VACUUM INTO reads one consistent snapshot while the server keeps writing (WAL).
        db.$client.run('VACUUM INTO ?', [target])
        out(`Backed up ${config.DATABASE_PATH} to ${target} (${statSync(target).size} bytes)`)
        return
      }
      case 'help':
        out(usage)
        return
      default:
        throw new UsageError(`${command ? `Unknown command "${command}"` : 'No command'}; see \`bun run cli help\``)
    }
  } finally {
    db.$client.close()
  }
}

if (import.meta.main) {
  try {
    await runCli(process.argv.slice(2), (line) => console.log(line))
  } catch (error) {
    const known = error instanceof UsageError || error instanceof AppError || error instanceof ConfigError
    const message = error instanceof Error ? error.message : String(error)
    console.error(`error: ${known ? message : `unexpected failure: ${message}`}`)
    process.exit(1)
  }
}
