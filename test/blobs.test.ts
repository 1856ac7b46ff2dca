// The blob store contract, run against both stores: a local folder and an S3 bucket (s3rver, started here). Every
// behaviour the attachments rely on is pinned here once, so the two cannot drift apart.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BlobStore, LocalBlobStore, openBlobStore, S3BlobStore } from '../src/storage/blobs'
import { sharedS3 } from './support/s3'

const scratch = mkdtempSync(join(tmpdir(), 'threadhouse-blobs-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const s3 = sharedS3()
let folders = 0

/** A fresh local folder, not yet created: a store makes its folder when it is first checked. */
function freshFolder(): string {
  folders += 1
  return join(scratch, `store-${folders}`)
}

/** Pages of two keys on S3, so that listing goes through several pages. */
const backends: [string, () => Promise<BlobStore>][] = [
  ['local', async () => new LocalBlobStore(freshFolder())],
  [
    's3',
    async () => {
      const { kind: _, ...bucket } = await (await s3()).bucket()
      return new S3BlobStore(bucket, { pageSize: 2 })
    },
  ],
]

async function listed(store: BlobStore): Promise<string[]> {
  const keys: string[] = []
  for await (const key of store.keys()) keys.push(key)
  return keys.sort()
}

function localFile(name: string, contents: string | Uint8Array): string {
  const path = join(scratch, name)
  writeFileSync(path, contents)
  return path
}

describe.each(backends)('%s blob store', (kind, open) => {
  async function fresh(): Promise<BlobStore> {
    const store = await open()
    await store.check()
    return store
  }

  test('put then get: the same bytes, their size and text; a second put replaces them', async () => {
    const store = await fresh()
    await store.put('a', new Uint8Array([0, 1, 2, 255]))
    const first = await store.get('a')
    expect({ size: first?.size, bytes: [...((await first?.bytes()) ?? [])] }).toEqual({
      size: 4,
      bytes: [0, 1, 2, 255],
    })
    await store.put('a', 'Ünïcödé')
    const second = await store.get('a')
    expect({ size: second?.size, text: await second?.text() }).toEqual({ size: 11, text: 'Ünïcödé' })
    await store.put('b', new Blob(['from a blob']))
    expect(await (await store.get('b'))?.text()).toBe('from a blob')
    await store.put('c', Bun.file(localFile(`${kind}-source`, 'from a file')))
    expect(await (await store.get('c'))?.text()).toBe('from a file')
    expect(existsSync(join(scratch, `${kind}-source`))).toBe(true)
  })

  test('putFile stores a local file and removes it', async () => {
    const store = await fresh()
    const path = localFile(`${kind}-moved`, 'moved bytes')
    await store.putFile('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.resized', path)
    expect(existsSync(path)).toBe(false)
    expect(await (await store.get('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.resized'))?.text()).toBe('moved bytes')
  })

  test('a missing key: get is null, getFile writes nothing, delete is no error', async () => {
    const store = await fresh()
    expect(await store.get('missing')).toBeNull()
    const path = join(scratch, `${kind}-never-written`)
    expect(await store.getFile('missing', path)).toBe(false)
    expect(existsSync(path)).toBe(false)
    await store.delete('missing')
  })

  test('getFile copies the bytes into a new local file and keeps the key', async () => {
    const store = await fresh()
    await store.put('kept', 'copied out')
    const path = join(scratch, `${kind}-copy`)
    expect(await store.getFile('kept', path)).toBe(true)
    expect(await Bun.file(path).text()).toBe('copied out')
    expect(await (await store.get('kept'))?.text()).toBe('copied out')
  })

  test('a stored blob streams, and slices into ranges read from the store', async () => {
    const store = await fresh()
    const bytes = new Uint8Array(300_000).map((_, index) => index % 251)
    await store.put('big', bytes)
    const blob = await store.get('big')
    if (!blob) throw new Error('stored blob missing')
    expect(new Uint8Array(await new Response(blob.stream()).arrayBuffer())).toEqual(bytes)
    const range = blob.slice(1000, 1010)
    expect({ size: range.size, bytes: [...(await range.bytes())] }).toEqual({
      size: 10,
      bytes: [...bytes.subarray(1000, 1010)],
    })
    const tail = blob.slice(299_990, 400_000)
    expect({ size: tail.size, bytes: [...(await tail.bytes())] }).toEqual({
      size: 10,
      bytes: [...bytes.subarray(299_990)],
    })
    expect(await blob.slice(10, 12).slice(1).bytes()).toEqual(bytes.subarray(11, 12))
  })

  test('delete removes the key; keys lists exactly the stored keys, over several pages', async () => {
    const store = await fresh()
    const names = ['k1', 'k2', 'k3', 'k4', 'k5']
    for (const name of names) await store.put(name, name)
    await store.delete('k3')
    expect(await store.get('k3')).toBeNull()
    expect(await listed(store)).toEqual(['k1', 'k2', 'k4', 'k5'])
  })

  test('keys the server never makes are refused before anything is touched', async () => {
    const store = await fresh()
    for (const key of ['../escape', '.hidden', 'a/b', 'UPPER', 'x.tmp', 'a..b', '', 'a'.repeat(129)]) {
      await expect(store.put(key, 'x')).rejects.toThrow('Invalid blob key')
      await expect(store.get(key)).rejects.toThrow('Invalid blob key')
      await expect(store.delete(key)).rejects.toThrow('Invalid blob key')
    }
    expect(await listed(store)).toEqual([])
  })

  test('check and ping pass on a working store and leave no key behind', async () => {
    const store = await open()
    await store.check()
    await store.ping()
    expect(await listed(store)).toEqual([])
  })

  test('a store built from another’s location sees the same keys (the generation worker’s way)', async () => {
    const store = await fresh()
    await store.put('shared', 'seen from both')
    const twin = openBlobStore(structuredClone(store.location))
    expect({ description: twin.description, text: await (await twin.get('shared'))?.text() }).toEqual({
      description: store.description,
      text: 'seen from both',
    })
  })
})

describe('a store that cannot be used says why', () => {
  test('local: a folder that is a file fails check and ping', async () => {
    const path = localFile('not-a-folder', 'x')
    const store = new LocalBlobStore(path)
    await expect(store.check()).rejects.toThrow('EEXIST')
    await expect(store.ping()).rejects.toThrow('not a folder')
  })

  test('local: a folder that does not exist yet fails ping until check creates it', async () => {
    const store = new LocalBlobStore(freshFolder())
    await expect(store.ping()).rejects.toThrow('ENOENT')
    await store.check()
    await store.ping()
    expect(readdirSync(store.description.kind === 'local' ? store.description.path : '')).toEqual([])
  })

  test('S3: a missing bucket, wrong credentials and a closed port fail check and ping with the reason', async () => {
    const server = await s3()
    const { kind: _, ...bucket } = await server.bucket()
    const missing = new S3BlobStore({ ...bucket, bucket: 'no-such-bucket' })
    await expect(missing.check()).rejects.toMatchObject({ code: 'NoSuchBucket' })
    await expect(missing.ping()).rejects.toMatchObject({ code: 'NoSuchBucket' })
    const wrong = new S3BlobStore({ ...bucket, accessKeyId: 'WRONG' })
    await expect(wrong.check()).rejects.toMatchObject({ code: 'InvalidAccessKeyId' })
    const closed = new S3BlobStore({ ...bucket, endpoint: 'http://127.0.0.1:1' })
    await expect(closed.check()).rejects.toMatchObject({ code: 'ConnectionRefused' })
    await expect(closed.ping()).rejects.toMatchObject({ code: 'ConnectionRefused' })
  })

  test('S3: an endpoint that takes the connection and never answers fails check and ping in time', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const { kind: _, ...bucket } = await (await s3()).bucket()
      const store = new S3BlobStore({ ...bucket, endpoint: `http://127.0.0.1:${silent.port}` }, { answerWithinMs: 200 })
      await expect(store.check()).rejects.toThrow('no answer within 0.2 s')
      await expect(store.ping()).rejects.toThrow('no answer within 0.2 s')
    } finally {
      silent.stop(true)
    }
  })
})
