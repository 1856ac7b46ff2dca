// What instances on one database share besides rows of their features (src/store): rate-limit windows, signing keys
// and the locks that keep first run and upkeep to one instance at a time. Two stores over one database, each with its
// own connection pool, stand in for two instances; test/instances.test.ts runs real server processes.
import { expect, test } from 'bun:test'
import { sharedLimiter } from '../src/shared/rate-limit'
import type { Store } from '../src/store'
import { onPostgres, testDatabase } from './support/backend'
import { ManualClock, until } from './support/helpers'
import { freshPostgresDatabase } from './support/postgres'

/** Two stores over one fresh PostgreSQL database, as two instances would open it, and SQL for the test's looks. */
async function twoInstances(): Promise<{ a: Store; b: Store; sql: Bun.SQL } & AsyncDisposable> {
  const database = await freshPostgresDatabase()
  const [{ openPostgres }, { pgStore }] = await Promise.all([
    import('../src/db/postgres'),
    import('../src/store/postgres'),
  ])
  const otherPool = openPostgres(database.url, { max: 4 })
  return {
    a: pgStore(database.db),
    b: pgStore(otherPool),
    sql: otherPool.$client,
    async [Symbol.asyncDispose]() {
      await otherPool.$client.close()
      await database[Symbol.asyncDispose]()
    },
  }
}

test('a limit counts every request once, made at once on any instance, and its window starts again when it ends', async () => {
  await using database = await testDatabase()
  const clock = new ManualClock()
  const limit = { max: 10, windowMs: 60_000 }
  const limiter = sharedLimiter(database.store.rateLimits, 'test', limit, clock)
  const answers = await Promise.all(Array.from({ length: 15 }, () => limiter.hit('192.0.2.1')))
  // Ten allowed, five refused, whichever order they were counted in; another key has its own window.
  expect(answers.filter((answer) => answer === null)).toHaveLength(10)
  expect(answers.filter((answer) => answer === 60)).toHaveLength(5)
  expect(await limiter.hit('192.0.2.2')).toBeNull()
  clock.advance(59_500)
  expect(await limiter.hit('192.0.2.1')).toBe(1)
  clock.advance(500)
  expect(await limiter.hit('192.0.2.1')).toBeNull()
})

test.skipIf(!onPostgres)('instances count into one window; upkeep deletes windows that ended', async () => {
  await using instances = await twoInstances()
  const clock = new ManualClock()
  const limit = { max: 3, windowMs: 60_000 }
  const onA = sharedLimiter(instances.a.rateLimits, 'signin', limit, clock)
  const onB = sharedLimiter(instances.b.rateLimits, 'signin', limit, clock)
  const answers = await Promise.all([onA.hit('x'), onB.hit('x'), onA.hit('x'), onB.hit('x')])
  expect(answers.filter((answer) => answer !== null)).toEqual([60])
  // Another limit's windows are apart even for the same key.
  expect(await sharedLimiter(instances.b.rateLimits, 'other', limit, clock).hit('x')).toBeNull()

  const windows = async () => (await instances.sql`select count(*)::int as n from rate_limit_windows`)[0].n
  expect(await windows()).toBe(2)
  clock.advance(59_999)
  await instances.a.rateLimits?.deleteEnded(clock.now())
  expect(await windows()).toBe(2)
  clock.advance(1)
  await instances.a.rateLimits?.deleteEnded(clock.now())
  expect(await windows()).toBe(0)
  expect(await onB.hit('x')).toBeNull()
})

test('the CSRF key is made once and is the same for every instance asking at once', async () => {
  if (!onPostgres) {
    // One process: its key lives in memory, the same at every use.
    await using database = await testDatabase()
    const keys = await Promise.all([database.store.serverKeys.key('csrf'), database.store.serverKeys.key('csrf')])
    expect(keys[0]).toHaveLength(32)
    expect(keys[1]).toEqual(keys[0] as Uint8Array)
    return
  }
  await using instances = await twoInstances()
  const keys = await Promise.all([
    instances.a.serverKeys.key('csrf'),
    instances.b.serverKeys.key('csrf'),
    instances.a.serverKeys.key('csrf'),
  ])
  expect(keys[0]).toHaveLength(32)
  expect(keys[1]).toEqual(keys[0] as Uint8Array)
  expect(keys[2]).toEqual(keys[0] as Uint8Array)
  // Another key is another secret.
  expect(await instances.b.serverKeys.key('other')).not.toEqual(keys[0] as Uint8Array)
})

test.skipIf(!onPostgres)(
  'the upkeep lock is held by one instance at a time; the first-run lock waits its turn',
  async () => {
    await using instances = await twoInstances()
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let sweeping = () => {}
    const started = new Promise<void>((resolve) => {
      sweeping = resolve
    })
    const sweep = instances.a.locks.ifFree('upkeep', async () => {
      sweeping()
      await held
    })
    await started
    expect(await instances.b.locks.ifFree('upkeep', async () => {})).toBe(false)

    const order: string[] = []
    const firstRun = instances.a.locks.inTurn('first-run', async () => {
      order.push('a')
      await held
      order.push('a done')
    })
    await until(() => order.length > 0)
    const second = instances.b.locks.inTurn('first-run', async () => {
      order.push('b')
    })
    // B is queued on the lock, not merely slow to ask for it.
    await until(
      async () =>
        (await instances.sql`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`)[0]
          .n === 1,
    )
    expect(order).toEqual(['a'])
    release()
    expect(await sweep).toBe(true)
    await Promise.all([firstRun, second])
    expect(order).toEqual(['a', 'a done', 'b'])
    // Free again, the lock is taken at once.
    expect(await instances.b.locks.ifFree('upkeep', async () => {})).toBe(true)
  },
)
