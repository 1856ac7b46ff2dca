// Retention: an organization's threads not updated for its period are deleted by the upkeep, files too, in batches;
// busy threads, recent ones and other organizations' are kept. The clock is the test's.
import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { silentLogger } from '../src/shared/log'
import { dayMs } from '../src/shared/time'
import { retentionBatch } from '../src/threads/retention'
import { startUpkeep } from '../src/upkeep'
import { eventsNamed, testEvent } from './support/audit'
import { type Harness, harness, ManualClock, ManualTimer, ScriptedRunner, sharedInspector } from './support/helpers'
import { form, png, storedFiles, upload } from './support/uploads'

// Uploads are checked in inspect processes, which wait their turn with every other process on a busy machine.
const inspector = sharedInspector()
const day = dayMs

async function organizationOf(h: Harness, userId: number): Promise<number> {
  const [row] = await h.orm.select().from(h.tables.users).where(eq(h.tables.users.id, userId))
  if (!row) throw new Error('no such user')
  return row.organizationId
}

async function threadIds(h: Harness): Promise<string[]> {
  return (await h.orm.select({ id: h.tables.threads.id }).from(h.tables.threads)).map(({ id }) => id).sort()
}

/** Runs the upkeep once, as the hourly timer would, and waits for it to end. */
async function upkeepOnce(h: Harness, clock: ManualClock): Promise<void> {
  const timer = new ManualTimer()
  const upkeep = startUpkeep({ store: h.store, blobs: h.blobs, clock, log: silentLogger, repeat: timer.repeat })
  await timer.fire() // joins the run started at once
  upkeep.stop()
}

test('threads idle past the period are deleted with their files; busy, recent and other organizations’ are kept', async () => {
  const clock = new ManualClock()
  const runner = new ScriptedRunner()
  await using h = await harness({ clock, runner, inspector })
  const owner = await h.user()
  const outsider = await h.user({ org: 'elsewhere' })
  const create = async (token: string, body: object = {}) =>
    (await h.call('POST', '/api/v1/threads', { token, body })).body
  const old = await create(owner.token, { name: 'old' })
  expect((await upload(h, owner.token, old.thread_id, form({ name: 'a.png', bytes: await png() }))).status).toBe(201)
  const busy = await create(owner.token, { text: 'still thinking' })
  await runner.started(busy.message_id)
  const touched = await create(owner.token, { name: 'touched' })
  const elsewhere = await create(outsider.token, { name: 'other organization' })
  // Many more than one batch, all old and idle.
  const organizationId = await organizationOf(h, owner.id)
  for (let i = 0; i < retentionBatch + 20; i++) {
    await h.store.threads.createThread({
      organizationId,
      ownerId: owner.id,
      name: null,
      isPrivate: false,
      now: clock.now(),
    })
  }
  expect((await storedFiles(h)).length).toBeGreaterThan(0)

  // Off by default: nothing goes, however old.
  clock.advance(400 * day)
  await upkeepOnce(h, clock)
  expect(await threadIds(h)).toHaveLength(retentionBatch + 24)

  await h.store.users.setRetention(organizationId, 30, testEvent('settings.retention_changed'))
  await h.store.users.setRetention(await organizationOf(h, outsider.id), null, testEvent('settings.retention_changed'))
  clock.advance(29 * day)
  // Old, but updated a day before the sweep.
  const renamed = await h.call('PATCH', `/api/v1/threads/${touched.thread_id}`, {
    token: owner.token,
    body: { name: 'touched again' },
  })
  expect(renamed.status).toBe(200)
  const recent = await create(owner.token, { name: 'recent' })
  clock.advance(day + 1)
  await upkeepOnce(h, clock)

  expect(await threadIds(h)).toEqual([busy.thread_id, touched.thread_id, elsewhere.thread_id, recent.thread_id].sort())
  // Each deletion is recorded, by the system, saying why.
  const deletions = await eventsNamed(h, organizationId, 'thread.deleted')
  expect(deletions).toHaveLength(retentionBatch + 24 - 3)
  expect(deletions.map((event) => [event.actorKind, JSON.parse(event.detail)])).toContainEqual([
    'system',
    { reason: 'retention', retention_days: 30 },
  ])
  expect(deletions.map((event) => event.targetId)).toContain(old.thread_id)
  expect(await storedFiles(h)).toEqual([])
  expect((await h.call('GET', `/api/v1/threads/${old.thread_id}`, { token: owner.token })).status).toBe(404)
  expect(await h.orm.select().from(h.tables.attachments)).toEqual([])
  // The busy thread's answer is still running, untouched.
  ;(await runner.started(busy.message_id)).done()
  await h.app.decorator.engine.idle()
  const answered = await h.call('GET', `/api/v1/threads/${busy.thread_id}`, { token: owner.token })
  expect(answered.body.state).toBe('ready')
})

test('a thread updated after it was listed is kept: the deletion checks again', async () => {
  const clock = new ManualClock()
  await using h = await harness({ clock })
  const owner = await h.user()
  const organizationId = await organizationOf(h, owner.id)
  const { thread_id } = (await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })).body
  clock.advance(10 * day)
  const before = clock.now() - 5 * day
  expect(await h.store.threads.staleThreads(organizationId, before, 10)).toEqual([thread_id])
  await h.call('PATCH', `/api/v1/threads/${thread_id}`, { token: owner.token, body: { name: 'in use' } })
  expect(await h.store.threads.deleteThread(thread_id, clock.now(), testEvent('thread.deleted'), before)).toBeNull()
  expect(await threadIds(h)).toEqual([thread_id])
})
