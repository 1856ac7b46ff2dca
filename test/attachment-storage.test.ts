// Attachments on both blob stores, a local folder and an S3 bucket (s3rver): upload → download → a model reads them
// → the web form's files → the start-up sweep → backup and restore, the same on both. Then what only a bucket has:
// a real server on one (start-up line, refusal in one line, downloads through Bun.serve), and /healthz's check.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { checkFormFiles, removeUnsentFiles, storeFormFiles, type UploadDeps } from '../src/attachments/service'
import { inFlightMs, sweepUploads } from '../src/attachments/sweep'
import type { Caller } from '../src/auth/model'
import { resolvePersonalAccessToken } from '../src/auth/personal-access-tokens'
import { createWorkerRunner } from '../src/generation/runner'
import { backup, restore } from '../src/operations/backup'
import { silentLogger } from '../src/shared/log'
import { hashSecret } from '../src/shared/security'
import { type BlobStore, LocalBlobStore, openBlobStore, S3BlobStore } from '../src/storage/blobs'
import { storageHealth } from '../src/storage/health'
import { startUpkeep } from '../src/upkeep'
import { onPostgres } from './support/backend'
import { FakeLlm, openaiText, settingsFor, sse } from './support/fake-llm'
import {
  collect,
  firstRunToken,
  type Harness,
  harness,
  ManualClock,
  ManualTimer,
  openStream,
  runToEnd,
  sharedInspector,
  startServer,
  type TestUser,
  tokensOf,
  until,
} from './support/helpers'
import { sharedS3 } from './support/s3'
import { form, jpeg, listening, pdf, upload } from './support/uploads'

// Uploads are checked in inspect processes and some tests start whole servers: a busy machine takes seconds.

const inspector = sharedInspector()
const s3 = sharedS3()
const scratch = mkdtempSync(join(tmpdir(), 'threadhouse-attachment-storage-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/**
 * Each backend's store for a new harness, on either database: an uploads folder that is also the store (named here:
 * on PostgreSQL runs the harness's default is a bucket), or a fresh bucket.
 */
const backends: [string, () => Promise<{ blobs: BlobStore; uploadsDir?: string }>][] = [
  [
    'local',
    async () => {
      const uploadsDir = mkdtempSync(join(scratch, 'uploads-'))
      return { uploadsDir, blobs: new LocalBlobStore(uploadsDir) }
    },
  ],
  ['s3', async () => ({ blobs: openBlobStore(await (await s3()).bucket()) })],
]

async function keysOf(store: BlobStore): Promise<string[]> {
  const keys: string[] = []
  for await (const key of store.keys()) keys.push(key)
  return keys.sort()
}

/** What waits in the staging folder: on either backend, nothing once an upload has answered. */
function staged(h: Harness): string[] {
  return readdirSync(h.uploadsDir).filter((name) => name.endsWith('.tmp'))
}

/** The web composer's view of a harness: what its routes hand the attachment services, and the user as a caller. */
async function composer(h: Harness, user: TestUser): Promise<{ deps: UploadDeps; caller: Caller }> {
  const store = h.store
  const caller = (await resolvePersonalAccessToken(store.accessTokens, hashSecret(user.token), Date.now()))?.caller
  if (!caller) throw new Error('the test user has no valid token')
  const deps = {
    threads: store.threads,
    attachments: store.attachments,
    clock: h.clock,
    log: silentLogger,
    uploadsDir: h.uploadsDir,
    inspector,
    blobs: h.blobs,
  }
  return { deps, caller }
}

describe.each(backends)('attachments on the %s store', (kind, store) => {
  async function setup(options: Parameters<typeof harness>[0] = {}) {
    const h = await harness({ inspector, ...(await store()), ...options })
    const owner = await h.user()
    const created = await h.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
    return {
      h,
      owner,
      threadId: created.body.thread_id as string,
      [Symbol.asyncDispose]: () => h[Symbol.asyncDispose](),
    }
  }

  test('an upload puts the files by ID, then downloads stream them back with the same headers', async () => {
    await using s = await setup()
    const photo = await jpeg(2000, 1600)
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form({ name: 'notes.md', bytes: '# Notes\n\nÜnïcödé' }, { name: 'wide.jpg', bytes: photo }),
    )
    expect(reply.status).toBe(201)
    const [notes, wide] = reply.body.map((file: { id: string }) => file.id) as [string, string]
    expect(await keysOf(s.h.blobs)).toEqual([notes, wide, `${wide}.resized`].sort())
    expect(staged(s.h)).toEqual([])
    const scaled = await sharp(await (await s.h.blobs.get(`${wide}.resized`))?.bytes()).metadata()
    expect([scaled.width, scaled.height]).toEqual([1568, 1254])

    const path = `/api/v1/threads/${s.threadId}/attachments/${notes}`
    const download = await s.h.call('GET', path, { token: s.owner.token })
    expect({ status: download.status, headers: Object.fromEntries(download.headers), body: download.body }).toEqual({
      status: 200,
      headers: expect.objectContaining({
        'content-type': 'text/markdown; charset=utf-8',
        'content-length': String(Buffer.byteLength('# Notes\n\nÜnïcödé')),
        'content-disposition': `attachment; filename="notes.md"; filename*=UTF-8''notes.md`,
        'content-security-policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
        'x-content-type-options': 'nosniff',
        'cross-origin-resource-policy': 'same-origin',
        'cache-control': 'private, no-cache',
        etag: `"${notes}"`,
      }),
      body: '# Notes\n\nÜnïcödé',
    })
    const again = await s.h.call('GET', path, { token: s.owner.token, headers: { 'if-none-match': `"${notes}"` } })
    expect(again.status).toBe(304)

    // Through a real listening server too: the bytes come from this server, never a redirect to the bucket.
    await using server = listening(s.h)
    const served = await fetch(new URL(`/api/v1/threads/${s.threadId}/attachments/${wide}`, server.url), {
      headers: { authorization: `Bearer ${s.owner.token}` },
      redirect: 'manual',
    })
    expect({ status: served.status, type: served.headers.get('content-type') }).toEqual({
      status: 200,
      type: 'image/jpeg',
    })
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(photo))).toBe(true)
  })

  test('a row whose file is gone downloads as 404', async () => {
    await using s = await setup()
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'a.txt', bytes: 'a' }))
    const id = reply.body[0].id
    await s.h.blobs.delete(id)
    const gone = await s.h.call('GET', `/api/v1/threads/${s.threadId}/attachments/${id}`, { token: s.owner.token })
    expect(gone).toMatchObject({ status: 404, body: { error: 'not_found' } })
  })

  test('files whose rows cannot be committed (a full thread) are removed from the store again', async () => {
    await using s = await setup()
    for (let batch = 0; batch < 5; batch += 1) {
      const files = Array.from({ length: 5 }, (_, n) => ({ name: `${batch}-${n}.txt`, bytes: 'x' }))
      expect((await upload(s.h, s.owner.token, s.threadId, form(...files))).status).toBe(201)
    }
    const before = await keysOf(s.h.blobs)
    expect(before).toHaveLength(25)
    // Checked while the thread had room, as a form's files are; stored once it has none: the quota is counted
    // again in the transaction, after the files were put.
    const { deps, caller } = await composer(s.h, s.owner)
    const checked = await checkFormFiles(deps, [new File(['late'], 'late.txt')])
    await expect(storeFormFiles(deps, caller, s.threadId, checked)).rejects.toMatchObject({ status: 400 })
    expect(await keysOf(s.h.blobs)).toEqual(before)
    expect(staged(s.h)).toEqual([])
  })

  test('a model reads the files from the store in the generation worker; PDF text is cached there as a blob', async () => {
    await using fake = new FakeLlm()
    fake.reply(() => sse(openaiText(['Read them.'])))
    const settings = settingsFor('openai', fake)
    await using s = await setup({ runner: (blobs) => createWorkerRunner(settings, blobs, silentLogger) })
    const reply = await upload(
      s.h,
      s.owner.token,
      s.threadId,
      form({ name: 'notes.md', bytes: '# Notes\nBuy milk.' }, { name: 'report.pdf', bytes: await pdf(1) }),
    )
    const [notes, report] = reply.body.map((file: { id: string }) => file.id) as [string, string]
    const sent = await s.h.call('POST', `/api/v1/threads/${s.threadId}/messages`, {
      token: s.owner.token,
      body: { text: 'Summarise', attachment_ids: [notes, report] },
    })
    const path = `/api/v1/threads/${s.threadId}/messages/${sent.body.message_id}/response/stream`
    const events = await collect((await openStream(s.h, path, s.owner.token)).events)
    expect(tokensOf(events)).toBe('Read them.')
    const asked = JSON.stringify(fake.received[0]?.body)
    expect(asked).toContain(JSON.stringify('<file name="notes.md">\n# Notes\nBuy milk.\n</file>').slice(1, -1))
    expect(asked).toContain(JSON.stringify('<file name="report.pdf">\npage 1\n</file>').slice(1, -1))
    expect(await (await s.h.blobs.get(`${report}.txt`))?.text()).toBe('page 1')
  })

  test("the web form's files: checked in the staging folder, stored, and removed again when the message is refused", async () => {
    await using s = await setup()
    const { deps, caller } = await composer(s.h, s.owner)
    const checked = await checkFormFiles(deps, [new File(['a note'], 'note.txt', { type: 'text/plain' })])
    expect(staged(s.h)).toHaveLength(1)
    expect(await keysOf(s.h.blobs)).toEqual([])
    const [id] = (await storeFormFiles(deps, caller, s.threadId, checked)).map((file) => file.id)
    if (!id) throw new Error('nothing was stored')
    expect(staged(s.h)).toEqual([])
    expect(await keysOf(s.h.blobs)).toEqual([id])
    await removeUnsentFiles(deps, s.threadId, [id])
    expect(await keysOf(s.h.blobs)).toEqual([])
    expect(await s.h.orm.select().from(s.h.tables.attachments)).toEqual([])
  })

  test(
    kind === 'local'
      ? 'the start-up sweep removes every file without a row, and temporary files'
      : 'the start-up sweep removes keys without a row once an hour old, temporary files, and nothing else',
    async () => {
      await using s = await setup()
      const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'kept.txt', bytes: 'kept' }))
      const kept = reply.body[0].id
      await s.h.blobs.put(`${kept}.txt`, 'extracted text')
      const old = Bun.randomUUIDv7('hex', Date.now() - inFlightMs - 60_000)
      const young = Bun.randomUUIDv7()
      for (const key of [old, `${old}.resized`, young, 'notes']) await s.h.blobs.put(key, 'x')
      await Bun.write(join(s.h.uploadsDir, `${Bun.randomUUIDv7()}.tmp`), 'a body a crash left')
      await Bun.write(join(s.h.uploadsDir, '.gitkeep'), '')
      const removed = await sweepUploads(s.h.store.attachments, s.h.blobs, s.h.uploadsDir)
      const expected =
        kind === 'local'
          ? { removed: 5, keys: [kept, `${kept}.txt`] }
          : // The young key may be an upload still in flight on another server; `notes` is not Threadhouse's.
            { removed: 3, keys: [kept, `${kept}.txt`, 'notes', young].sort() }
      expect({ removed, keys: await keysOf(s.h.blobs) }).toEqual(expected)
      expect(readdirSync(s.h.uploadsDir).filter((name) => !(kind === 'local' && name.startsWith(kept)))).toEqual([
        '.gitkeep',
      ])
    },
  )

  test("every hour, the upkeep removes keys without a row once an hour old, and keeps younger keys and every row's", async () => {
    const clock = new ManualClock(Date.now())
    await using s = await setup({ clock })
    const reply = await upload(s.h, s.owner.token, s.threadId, form({ name: 'kept.txt', bytes: 'kept' }))
    const kept = reply.body[0].id
    // Left by an upload that failed after storing its files: at start-up, still young enough to be one in flight.
    const orphan = Bun.randomUUIDv7('hex', clock.now())
    for (const key of [orphan, `${orphan}.resized`, 'notes']) await s.h.blobs.put(key, 'x')
    const timer = new ManualTimer()
    const upkeep = startUpkeep({ store: s.h.store, blobs: s.h.blobs, clock, log: silentLogger, repeat: timer.repeat })
    // The first fire waits for the run started at once (or makes one as the timer would): nothing is old yet.
    await timer.fire()
    expect(await keysOf(s.h.blobs)).toEqual([kept, orphan, `${orphan}.resized`, 'notes'].sort())

    clock.advance(inFlightMs + 60_000)
    const fresh = Bun.randomUUIDv7('hex', clock.now())
    await s.h.blobs.put(fresh, 'an upload in flight')
    await timer.fire()
    // `notes` is no attachment's key: while serving, only a start on a local store removes such files.
    expect({ interval: timer.intervalMs, keys: await keysOf(s.h.blobs) }).toEqual({
      interval: 60 * 60_000,
      keys: [kept, fresh, 'notes'].sort(),
    })
    expect(await s.h.store.attachments.listByIds([kept])).toHaveLength(1)
    upkeep.stop()
    expect(() => timer.fire()).toThrow('the timer is not running')
  })

  // Backup and restore snapshot the SQLite file (on PostgreSQL they are pg_dump's): SQLite only.
  test.skipIf(onPostgres)(
    'backup copies the files the snapshot names into DIR/uploads; restore puts them back into the store',
    async () => {
      await using s = await setup()
      const reply = await upload(
        s.h,
        s.owner.token,
        s.threadId,
        form({ name: 'notes.md', bytes: '# Notes' }, { name: 'wide.jpg', bytes: await jpeg(2000, 1600) }),
      )
      const [notes, wide] = reply.body.map((file: { id: string }) => file.id) as [string, string]
      await s.h.blobs.put(`${notes}.txt`, 'cached text')
      const files = [notes, `${notes}.txt`, wide, `${wide}.resized`].sort()
      const home = join(scratch, `${kind}-backup-${Bun.randomUUIDv7()}`)
      const target = join(home, 'backup')
      const made = await backup(s.h.db, s.h, target, Date.now())
      expect(made).toMatchObject({ files: 4, leftOut: [], counts: { threads: 1, attachments: 2 } })
      expect(readdirSync(join(target, 'uploads')).sort()).toEqual(files)

      // Work after the backup, which the restore undoes: a file of an attachment the backup does not know, and a
      // file the backup has that went missing. On a bucket, an object that is not Threadhouse's stays.
      const later = Bun.randomUUIDv7()
      await s.h.blobs.put(later, 'after the backup')
      await s.h.blobs.delete(`${wide}.resized`)
      await s.h.blobs.put('not-ours', 'someone else’s')
      const databasePath = join(home, 'live', 'db.sqlite')
      const restored = await restore(target, { databasePath, blobs: s.h.blobs })
      expect(restored).toMatchObject({ files: 4, counts: { threads: 1, attachments: 2 } })
      expect(await keysOf(s.h.blobs)).toEqual(kind === 'local' ? files : [...files, 'not-ours'].sort())
      expect(existsSync(databasePath)).toBe(true)

      // A file the backup lacks stops the restore before anything is touched.
      rmSync(join(target, 'uploads', wide))
      await expect(restore(target, { databasePath, blobs: s.h.blobs })).rejects.toThrow(`lacks the file ${wide}`)
      expect(await keysOf(s.h.blobs)).toContain(wide)
    },
  )
})

// Backup and restore snapshot the SQLite file (on PostgreSQL they are pg_dump's): SQLite only.
test.skipIf(onPostgres)(
  'a backup made from a bucket restores into a local folder, and the other way round',
  async () => {
    const bucket = openBlobStore(await (await s3()).bucket())
    await using from = await harness({ inspector, blobs: bucket })
    const owner = await from.user()
    const thread = await from.call('POST', '/api/v1/threads', { token: owner.token, body: {} })
    const reply = await upload(from, owner.token, thread.body.thread_id, form({ name: 'a.txt', bytes: 'from S3' }))
    const id = reply.body[0].id
    const home = join(scratch, `cross-${Bun.randomUUIDv7()}`)
    await backup(from.db, from, join(home, 'from-s3'), Date.now())
    const folder = new LocalBlobStore(join(home, 'uploads'))
    await restore(join(home, 'from-s3'), { databasePath: join(home, 'local.sqlite'), blobs: folder })
    expect(await (await folder.get(id))?.text()).toBe('from S3')

    await backup(from.db, { blobs: folder, uploadsDir: join(home, 'staging') }, join(home, 'from-local'), Date.now())
    const other = openBlobStore(await (await s3()).bucket())
    await restore(join(home, 'from-local'), { databasePath: join(home, 's3.sqlite'), blobs: other })
    expect(await keysOf(other)).toEqual([id])
  },
)

describe('/healthz reads the blob store, never writes it', () => {
  test.each(backends)('%s: 200 while it answers', async (_, make) => {
    await using h = await harness({ inspector, ...(await make()) })
    expect(await h.call('GET', '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } })
  })

  test('at most one read per ten seconds, shared by concurrent checks; the log says when it stops and starts answering', async () => {
    let pings = 0
    let failing = false
    const store = Object.assign(Object.create(new LocalBlobStore(scratch)) as BlobStore, {
      async ping() {
        pings += 1
        if (failing) throw new Error('the bucket does not answer')
      },
    })
    const lines: string[] = []
    const log = { ...silentLogger, error: (msg: string) => lines.push(msg), info: (msg: string) => lines.push(msg) }
    let clock = 0
    const healthy = storageHealth(store, log, 10_000, () => clock)
    expect(await Promise.all([healthy(), healthy(), healthy()])).toEqual([true, true, true])
    clock += 9_999
    expect({ healthy: await healthy(), pings }).toEqual({ healthy: true, pings: 1 })
    failing = true
    clock += 1
    expect({ healthy: await healthy(), pings }).toEqual({ healthy: false, pings: 2 })
    clock += 10_000
    expect({ healthy: await healthy(), pings }).toEqual({ healthy: false, pings: 3 })
    failing = false
    clock += 10_000
    expect({ healthy: await healthy(), pings }).toEqual({ healthy: true, pings: 4 })
    expect(lines).toEqual(['storage does not answer', 'storage answers again'])
  })

  test('a bucket that refuses connections is 503', async () => {
    const { kind: _, ...bucket } = await (await s3()).bucket()
    await using h = await harness({ inspector, blobs: new S3BlobStore({ ...bucket, endpoint: 'http://127.0.0.1:1' }) })
    expect(await h.call('GET', '/healthz')).toMatchObject({ status: 503, body: { status: 'storage_unavailable' } })
  })
})

describe('a real server on a bucket', () => {
  function serverEnv(bucket: { bucket: string; endpoint?: string; accessKeyId: string; secretAccessKey: string }) {
    const home = mkdtempSync(join(scratch, 'server-'))
    return {
      DATABASE_PATH: join(home, 'db.sqlite'),
      UPLOADS_DIR: join(home, 'staging'),
      S3_BUCKET: bucket.bucket,
      S3_ENDPOINT: bucket.endpoint ?? '',
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: bucket.accessKeyId,
      S3_SECRET_ACCESS_KEY: bucket.secretAccessKey,
      ECHO_TOKEN_DELAY_MS: '0',
    }
  }

  test('names the bucket in its start-up line, sweeps it once up, and stores, serves and answers from it', async () => {
    const bucket = await (await s3()).bucket()
    const env = serverEnv(bucket)
    // What a crash on this or another server can leave: an old key without a row, which goes once the server is
    // up; a young one, which may be an upload in flight and stays; a body in the staging folder.
    const store = openBlobStore(bucket)
    const old = Bun.randomUUIDv7('hex', Date.now() - inFlightMs - 60_000)
    const young = Bun.randomUUIDv7()
    for (const key of [old, young]) await store.put(key, 'left by a crash')
    await Bun.write(join(env.UPLOADS_DIR, `${Bun.randomUUIDv7()}.tmp`), 'a body')
    await using server = await startServer(env)
    const token = await firstRunToken(server)
    await until(async () => !(await keysOf(store)).includes(old))
    expect(await keysOf(store)).toEqual([young])
    // One line for the staging folder, before listening, and one for the bucket, after.
    const swept = () => server.stderr().match(/"msg":"removed stray upload files left by a crash","count":1\b/g)
    await until(() => swept()?.length === 2)
    expect(readdirSync(env.UPLOADS_DIR)).toEqual([])
    expect(server.stderr()).toContain(
      `"msg":"storage","kind":"s3","bucket":"${bucket.bucket}","endpoint":"${bucket.endpoint}"`,
    )
    expect(server.stderr()).not.toContain(bucket.secretAccessKey)
    const headers = { authorization: `Bearer ${token}` }
    const created = await fetch(`${server.url}/api/v1/threads`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{}',
    })
    const { thread_id } = (await created.json()) as { thread_id: string }
    const files = new FormData()
    files.append('attachments[0]', new File(['# Notes'], 'notes.md'))
    const uploaded = await fetch(`${server.url}/api/v1/threads/${thread_id}/attachments`, {
      method: 'POST',
      headers,
      body: files,
    })
    expect(uploaded.status).toBe(201)
    const [{ id }] = (await uploaded.json()) as [{ id: string }]
    expect(await keysOf(store)).toEqual([id, young].sort())
    expect(readdirSync(env.UPLOADS_DIR)).toEqual([])
    const download = await fetch(`${server.url}/api/v1/threads/${thread_id}/attachments/${id}`, {
      headers,
      redirect: 'manual',
    })
    expect({ status: download.status, body: await download.text() }).toEqual({ status: 200, body: '# Notes' })
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  })

  test.each([
    ['a bucket that does not exist', { bucket: 'no-such-bucket' }, 'the bucket does not exist (NoSuchBucket)'],
    [
      'a key the service does not know',
      { accessKeyId: 'WRONG' },
      'is not a key this service knows (InvalidAccessKeyId)',
    ],
    [
      'an endpoint that refuses connections',
      { endpoint: 'http://127.0.0.1:1' },
      'refuses connections (ConnectionRefused)',
    ],
  ])('%s stops the start with one line', async (_, change, reason) => {
    const bucket = { ...(await (await s3()).bucket()), ...change }
    const env = { PORT: '0', HOST: '127.0.0.1', ...serverEnv(bucket) }
    const { stdout, stderr, code } = await runToEnd(['bun', 'src/index.ts'], env)
    const lines = stderr.split('\n')
    expect({ code, stdout, lines: lines.length }).toEqual({ code: 1, stdout: '', lines: 2 })
    expect(lines[0]).toStartWith(`Cannot use S3_BUCKET ${bucket.bucket} at ${bucket.endpoint}: `)
    expect(lines[0]).toEndWith(reason)
  })
})
