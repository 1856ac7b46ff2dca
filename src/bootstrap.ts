// First run: on an empty database, create organization `default`, its owner and a starter token, and
// print them once so a newcomer can call the API straight away.
import { count } from 'drizzle-orm'
import { users } from './auth/auth.table'
import { createPersonalAccessToken, createUser } from './auth/service'
import type { Config } from './config'
import type { Db } from './db/client'
import { generateSecret } from './shared/security'
import type { Clock } from './shared/time'

const print = (line: string): void => console.log(line)

export async function firstRun(
  db: Db,
  config: Pick<Config, 'ADMIN_EMAIL' | 'ADMIN_PASSWORD' | 'PUBLIC_URL'>,
  clock: Clock,
): Promise<void> {
  const existing = db.select({ n: count() }).from(users).get()
  if (existing && existing.n > 0) return
  const email = config.ADMIN_EMAIL ?? 'admin@localhost'
  const password = config.ADMIN_PASSWORD ?? generateSecret('').slice(0, 24)
  const owner = await createUser(
    db,
    { email, password, name: 'Owner', organizationSlug: 'default', role: 'owner' },
    clock.now(),
  )
  const token = createPersonalAccessToken(
    db,
    { userId: owner.id, name: 'first run', scopes: ['threads:read', 'threads:write'] },
    clock.now(),
  )
  print('Threadhouse is set up. This is printed once; keep it somewhere safe.')
  print(`Sign in:   ${config.PUBLIC_URL}/login`)
  print(`Email:     ${email}`)
  print(`Password:  ${config.ADMIN_PASSWORD ? '(from ADMIN_PASSWORD)' : password}`)
  print(`API token (threads:read threads:write):`)
  print(token)
}
