// The audit log's hash chains, on whichever backend THREADHOUSE_TEST_BACKEND names: `bun run cli audit:verify` passes
// a log as written and names the first event that a change, a removal or a rewritten event breaks; writers on two
// instances at once never fork an organization's chain; and retention deletes the oldest events while the rest still
// verify, from the anchor it leaves.
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq, lt } from 'drizzle-orm'
import { eventHash } from '../src/audit/chain'
import { setAuditRetention, verifyAuditLog } from '../src/audit/service'
import { createPersonalAccessToken } from '../src/auth/personal-access-tokens'
import { createUser } from '../src/auth/users'
import { auditEntry, noOrganization, systemOrigin, target } from '../src/shared/audit'
import { createLogger } from '../src/shared/log'
import { dayMs } from '../src/shared/time'
import { LocalBlobStore } from '../src/storage/blobs'
import type { Store } from '../src/store'
import { startUpkeep } from '../src/upkeep'
import { eventsNamed, eventsOf, testOrigin, tokenHolder } from './support/audit'
import { databaseOf, migratedEnv, onPostgres, testDatabase } from './support/backend'
import { harness, ManualClock, ManualTimer, runToEnd } from './support/helpers'
import { freshPostgresDatabase } from './support/postgres'

const dir = mkdtempSync(join(tmpdir(), 'threadhouse-audit-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Ten acts in `acme` (a founder, members, tokens) and one in `globex`, made by the operator's services. */
async function someActs(store: Store, now: number): Promise<{ acme: number; globex: number }> {
  const founder = await createUser(
    store.users,
    { email: 'founder@acme.example', password: 'long enough', organizationSlug: 'acme', role: 'owner' },
    now,
    systemOrigin,
  )
  for (const name of ['ada', 'bo', 'cy', 'di']) {
    const user = await createUser(
      store.users,
      { email: `${name}@acme.example`, password: 'long enough', organizationSlug: 'acme', role: 'member' },
      now,
      systemOrigin,
    )
    await createPersonalAccessToken(
      store.accessTokens,
      { user: await tokenHolder(store, user.id), name: name, scopes: ['threads:read'] },
      now,
      systemOrigin,
    )
  }
  await store.audit.append(
    auditEntry(systemOrigin, now, { organizationId: founder.organizationId, action: 'signout', target: null }),
  )
  const other = await createUser(
    store.users,
    { email: 'x@globex.example', password: 'long enough', organizationSlug: 'globex', role: 'owner' },
    now,
    systemOrigin,
  )
  return { acme: founder.organizationId, globex: other.organizationId }
}

test('audit:verify passes the log as written, and names the first event a change breaks', async () => {
  const env = await migratedEnv(join(dir, 'verify.sqlite'))
  const ids = await (async () => {
    await using db = await databaseOf(env)
    return await someActs(db.store, Date.now())
  })()
  const cli = (...args: string[]) => runToEnd(['bun', 'run', 'cli', 'audit:verify', ...args], env)

  const whole = await cli()
  expect([whole.code, whole.stderr]).toEqual([0, ''])
  const lines = whole.stdout.trimEnd().split('\n')
  expect(lines).toHaveLength(2)
  expect(lines[0]).toMatch(/^ok acme: 10 events checked \(places 1-10\), last hash [0-9a-f]{64}$/)
  expect(lines[1]).toMatch(/^ok globex: 1 event checked \(places 1-1\), last hash [0-9a-f]{64}$/)

  // Someone turns a member into an owner in the log, by hand: the event's own hash no longer matches.
  await using db = await databaseOf(env)
  const { auditEvents } = db.tables
  const place = and(eq(auditEvents.organizationId, ids.acme), eq(auditEvents.seq, 2))
  const [second] = await db.orm.select().from(auditEvents).where(place)
  await db.orm
    .update(auditEvents)
    .set({ detail: '{"email":"ada@acme.example","restored":false,"role":"owner"}' })
    .where(place)
  const broken = await cli('--org', 'acme')
  expect(broken.code).toBe(1)
  expect(broken.stdout).toMatch(/^BROKEN acme: 1 event checked/)
  expect(broken.stderr.trim()).toBe(
    `error: The audit chain of acme is broken at event ${second?.id} (place 2, member.added at ${new Date(second?.at ?? 0).toISOString()}): its hash does not match its contents: the event was changed`,
  )
  // Another organization's chain is not affected.
  expect((await cli('--org', 'globex')).code).toBe(0)

  // Its retention, shown and set by the operator; a period shorter than 30 days is refused.
  const retention = (...args: string[]) => runToEnd(['bun', 'run', 'cli', 'audit:retention', ...args], env)
  expect((await retention('--org', 'globex')).stdout).toBe('globex keeps audit events for 400 days\n')
  expect((await retention('--org', 'globex', '--days', '7')).stderr).toBe(
    'error: Enter a whole number of days from 30 to 3650.\n',
  )
  expect((await retention('--org', 'globex', '--days', '90')).stdout).toBe('globex keeps audit events for 90 days\n')
  const changed = await db.store.audit.list(ids.globex, { actions: ['settings.audit_retention_changed'] }, { limit: 5 })
  expect(changed.map((event) => [event.actorKind, JSON.parse(event.detail)])).toEqual([['system', { days: 90 }]])
  expect((await cli('--org', 'globex')).code).toBe(0)
})

test('a removed event, a rewritten one, a lost newest one and a missing head are each named', async () => {
  await using db = await testDatabase()
  const ids = await someActs(db.store, Date.now())
  const { auditEvents, auditChains } = db.tables
  const at = (seq: number) => and(eq(auditEvents.organizationId, ids.acme), eq(auditEvents.seq, seq))
  const verify = async () => (await verifyAuditLog(db.store.audit, ids.acme))[0]?.broken
  expect(await verify()).toBeNull()
  const events = await eventsOf({ orm: db.orm, tables: db.tables }, ids.acme)

  // One event removed from the middle: the next one names the gap.
  await db.orm.delete(auditEvents).where(at(4))
  expect(await verify()).toMatchObject({
    event: { id: events[4]?.id, seq: 5 },
    reason: expect.stringContaining('missing'),
  })
  await db.orm.insert(auditEvents).values(events[3] as never)
  expect(await verify()).toBeNull()

  // One event rewritten with a hash that matches its new contents: the next one no longer follows it.
  const rewritten = { ...(events[5] as NonNullable<(typeof events)[number]>), detail: '{"name":"innocent"}' }
  await db.orm
    .update(auditEvents)
    .set({ detail: rewritten.detail, hash: eventHash(rewritten) })
    .where(at(6))
  expect(await verify()).toMatchObject({ event: { seq: 7 }, reason: expect.stringContaining('does not name the hash') })
  await db.orm.update(auditEvents).set({ detail: events[5]?.detail, hash: events[5]?.hash }).where(at(6))

  // The newest event removed: the head still names it.
  await db.orm.delete(auditEvents).where(at(10))
  expect(await verify()).toMatchObject({ event: { seq: 9 }, reason: expect.stringContaining('head') })
  await db.orm.insert(auditEvents).values(events[9] as never)

  // The oldest events removed and the head's anchor set past them, as if retention had: no audit.pruned says so.
  await db.orm.delete(auditEvents).where(and(eq(auditEvents.organizationId, ids.acme), lt(auditEvents.seq, 4)))
  await db.orm
    .update(auditChains)
    .set({ prunedSeq: 3, prunedHash: events[2]?.hash })
    .where(eq(auditChains.organizationId, ids.acme))
  expect(await verify()).toMatchObject({
    event: { id: events[3]?.id, seq: 4 },
    reason: expect.stringContaining('no kept audit.pruned event records'),
  })
  await db.orm
    .update(auditChains)
    .set({ prunedSeq: 0, prunedHash: '0'.repeat(64) })
    .where(eq(auditChains.organizationId, ids.acme))
  for (const event of events.slice(0, 3)) await db.orm.insert(auditEvents).values(event as never)
  expect(await verify()).toBeNull()

  // The head itself removed: every event of that chain is headless.
  await db.orm.delete(auditChains).where(eq(auditChains.organizationId, ids.acme))
  expect(await verify()).toMatchObject({ event: { seq: 1 }, reason: "its organization's chain head is missing" })
})

test('concurrent acts of one organization in one process take consecutive places', async () => {
  await using h = await harness()
  const owner = await h.user({ role: 'owner' })
  const holder = await tokenHolder(h.store, owner.id)
  await Promise.all(
    Array.from({ length: 20 }, (_, index) =>
      createPersonalAccessToken(
        h.store.accessTokens,
        { user: holder, name: `t${index}`, scopes: ['threads:read'] },
        0,
        testOrigin,
      ),
    ),
  )
  const events = await eventsOf(h, holder.organizationId)
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1))
  expect((await verifyAuditLog(h.store.audit, holder.organizationId))[0]?.broken).toBeNull()
})

test.skipIf(!onPostgres)('two instances writing one organization’s log at once never fork its chain', async () => {
  const database = await freshPostgresDatabase()
  const [{ openPostgres }, { pgStore }] = await Promise.all([
    import('../src/db/postgres'),
    import('../src/store/postgres'),
  ])
  const otherPool = openPostgres(database.url, { max: 8 })
  try {
    const a = pgStore(database.db)
    const b = pgStore(otherPool)
    const ids = await someActs(a, Date.now())
    const perInstance = 40
    // Each instance sends its acts as fast as its pool allows: on both, appends wait on the chain's head row.
    const write = (store: Store, name: string) =>
      Promise.all(
        Array.from({ length: perInstance }, (_, index) =>
          store.audit.append(
            auditEntry(systemOrigin, Date.now(), {
              organizationId: ids.acme,
              action: 'settings.models_changed',
              target: target('organization', ids.acme),
              detail: { instance: name, index },
            }),
          ),
        ),
      )
    await Promise.all([write(a, 'a'), write(b, 'b')])
    const events = await eventsOf(
      { orm: database.db as never, tables: (await import('./support/tables.pg')) as never },
      ids.acme,
    )
    expect(events).toHaveLength(10 + 2 * perInstance)
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1))
    // No two events chain onto the same one: a fork would show as a repeated prev_hash.
    expect(new Set(events.map((event) => event.prevHash)).size).toBe(events.length)
    expect(new Set(events.map((event) => JSON.parse(event.detail).instance))).toEqual(new Set([undefined, 'a', 'b']))
    expect((await verifyAuditLog(b.audit)).map((report) => report.broken)).toEqual([null, null])
  } finally {
    await otherPool.$client.close()
    await database[Symbol.asyncDispose]()
  }
})

test('the upkeep deletes events past their retention, separately from threads, and what stays still verifies', async () => {
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
  await using h = await harness({ clock })
  const ids = await someActs(h.store, clock.now())
  await h.store.audit.append(
    auditEntry(systemOrigin, clock.now(), { organizationId: noOrganization, action: 'signin.failed', target: null }),
  )
  await setAuditRetention(h.store.audit, ids.acme, 30, clock.now(), systemOrigin)
  clock.advance(20 * dayMs)
  await h.store.audit.append(
    auditEntry(systemOrigin, clock.now(), { organizationId: ids.acme, action: 'signout', target: null }),
  )
  clock.advance(15 * dayMs)

  const timer = new ManualTimer()
  const logged: { msg: string; organization_id?: number; last_seq?: number; last_hash?: string }[] = []
  const upkeep = startUpkeep({
    store: h.store,
    blobs: new LocalBlobStore(h.uploadsDir),
    clock,
    log: createLogger('info', (line) => logged.push(JSON.parse(line))),
    repeat: timer.repeat,
  })
  try {
    await timer.fire()
  } finally {
    upkeep.stop()
  }
  // acme keeps 30 days: its first eleven events (the setting's change included) went, the signout of day 20 stays.
  const kept = await eventsOf(h, ids.acme)
  expect(kept.map((event) => [event.seq, event.action])).toEqual([
    [12, 'signout'],
    [13, 'audit.pruned'],
  ])
  const deletedLast = await h.store.audit.head(ids.acme)
  expect(JSON.parse(kept[1]?.detail ?? '{}')).toEqual({
    deleted: 11,
    through_seq: 11,
    through_hash: deletedLast?.prunedHash,
    retention_days: 30,
  })
  // Each chain's head is logged, so that a copy of it exists outside the database.
  expect(
    logged.filter((line) => line.msg === 'audit chain head').map((line) => [line.organization_id, line.last_seq]),
  ).toEqual([
    [noOrganization, 1],
    [ids.acme, 13],
    [ids.globex, 1],
  ])
  expect(logged.find((line) => line.organization_id === ids.acme)?.last_hash).toBe(kept[1]?.hash)
  // globex and the events of no organization keep the default 400 days: nothing of theirs went.
  expect(await eventsOf(h, ids.globex)).toHaveLength(1)
  expect(await eventsNamed(h, noOrganization, 'signin.failed')).toHaveLength(1)
  expect(
    (await verifyAuditLog(h.store.audit)).map((report) => [report.organizationId, report.firstSeq, report.broken]),
  ).toEqual([
    [noOrganization, 1, null],
    [ids.acme, 12, null],
    [ids.globex, 1, null],
  ])

  // The kept part is still checked: removing its first event is named, though retention removes events too.
  const { auditEvents } = h.tables
  await h.orm.delete(auditEvents).where(and(eq(auditEvents.organizationId, ids.acme), eq(auditEvents.seq, 12)))
  expect((await verifyAuditLog(h.store.audit, ids.acme))[0]?.broken).toMatchObject({ event: { seq: 13 } })
})
