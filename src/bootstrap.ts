// First run: on an empty database, create organization `default`, its owner and a starter token, and
// print them once so a newcomer can call the API straight away. Instances started at once on one empty PostgreSQL
// database take turns (an advisory lock): the first makes the owner, the others then find one and print nothing.
import { createPersonalAccessToken } from './auth/personal-access-tokens'
import { createUser } from './auth/users'
import type { Config } from './config'
import { systemOrigin } from './shared/audit'
import { generateSecret } from './shared/security'
import type { Clock } from './shared/time'
import type { Store } from './store'

const print = (line: string): void => console.log(line)

export async function firstRun(
  store: Pick<Store, 'users' | 'accessTokens' | 'locks'>,
  config: Pick<Config, 'ADMIN_EMAIL' | 'ADMIN_PASSWORD' | 'PUBLIC_URL'>,
  clock: Clock,
): Promise<void> {
  await store.locks.inTurn('first-run', () => setUp(store, config, clock))
}

async function setUp(
  store: Pick<Store, 'users' | 'accessTokens'>,
  config: Pick<Config, 'ADMIN_EMAIL' | 'ADMIN_PASSWORD' | 'PUBLIC_URL'>,
  clock: Clock,
): Promise<void> {
  if (await store.users.hasAny()) return
  const email = config.ADMIN_EMAIL ?? 'admin@localhost'
  const password = config.ADMIN_PASSWORD ?? generateSecret('').slice(0, 24)
  const owner = await createUser(
    store.users,
    { email, password, name: 'Owner', organizationSlug: 'default', role: 'owner' },
    clock.now(),
    systemOrigin,
  )
  const token = await createPersonalAccessToken(
    store.accessTokens,
    {
      user: { id: owner.id, organizationId: owner.organizationId, role: 'owner' },
      name: 'first run',
      scopes: ['threads:read', 'threads:write'],
    },
    clock.now(),
    systemOrigin,
  )
  print('Threadhouse is set up. This is printed once; keep it somewhere safe.')
  print(`Sign in:   ${config.PUBLIC_URL}/login`)
  print(`Email:     ${email}`)
  print(`Password:  ${config.ADMIN_PASSWORD ? '(from ADMIN_PASSWORD)' : password}`)
  print(`API token (threads:read threads:write):`)
  print(token)
}
