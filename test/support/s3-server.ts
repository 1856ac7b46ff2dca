// s3rver in a process of its own, for test/support/s3.ts: `bun test/support/s3-server.ts DIR` serves DIR on a free
// loopback port and prints `{"port":N}` once listening. Three shims make s3rver, written for Node, right under Bun,
// and stay in this process: nothing else here uses what they change.
import crypto from 'node:crypto'
import fs from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Readable } from 'node:stream'
import type { S3Object } from 's3rver/lib/stores/filesystem.js'

// s3rver encrypts listing continuation tokens with DES, which Bun's crypto (BoringSSL) lacks, so a listing longer
// than a page would fail with a 500. The token only has to come back intact: DES's 8-byte key and IV become
// AES-128-CBC's, doubled.
const ciphers = crypto as unknown as Record<string, (...args: unknown[]) => unknown>
for (const name of ['createCipheriv', 'createDecipheriv']) {
  const original = ciphers[name] as (...args: unknown[]) => unknown
  ciphers[name] = (algorithm, key, iv, ...rest) =>
    algorithm === 'des'
      ? original.call(
          crypto,
          'aes-128-cbc',
          Buffer.concat([key as Buffer, key as Buffer]),
          Buffer.concat([iv as Buffer, iv as Buffer]),
        )
      : original.call(crypto, algorithm, key, iv, ...rest)
}

// s3rver lists keys in the order readdir gives them and pages by "after this key": Node's readdir is sorted
// (libuv sorts), Bun's is the file system's order, which would skip keys between pages.
const files = fs as unknown as Record<string, (...args: unknown[]) => unknown>
const readdirSync = files.readdirSync as (...args: unknown[]) => unknown
files.readdirSync = (...args: unknown[]) => {
  const names = readdirSync.apply(fs, args)
  return Array.isArray(names) && names.every((name) => typeof name === 'string') ? names.sort() : names
}

// Loaded only now: fs-extra, which s3rver reads files through, copies fs's functions when it loads.
const { default: S3rver } = await import('s3rver')

// s3rver's file store streams objects in and out, and neither direction is whole here: it answers a PUT before its
// write stream has finished (its own bug: it resolves on the hashing stream's end), and under Bun a GET's read
// stream, opened before the response takes it, can send no bytes. So a GET right after a PUT read an empty object
// now and then on a loaded machine (the stores' write check failed 6 times in 880), where real S3 reads its
// writes. The tests' objects are small: the store here writes and reads each one whole, then answers. Multipart
// uploads still take s3rver's path, which Bun's client never uses for objects this small (under 5 MiB a part).
const { default: FilesystemStore } = await import('s3rver/lib/stores/filesystem.js')
type FilesystemStore = InstanceType<typeof FilesystemStore>
const { getObject } = FilesystemStore.prototype
Object.assign(FilesystemStore.prototype, {
  async putObject(this: FilesystemStore, object: S3Object) {
    const path = this.getResourcePath(object.bucket, object.key, 'object')
    const content = Buffer.isBuffer(object.content)
      ? object.content
      : Buffer.concat(await Array.fromAsync(object.content as AsyncIterable<Buffer>))
    await mkdir(dirname(path), { recursive: true })
    await writeFile(path, content)
    const md5 = crypto.createHash('md5').update(content).digest('hex')
    await this.putMetadata(object.bucket, object.key, object.metadata, md5)
    return { size: content.length, md5 }
  },
  async getObject(this: FilesystemStore, bucket: string, key: string, options?: unknown) {
    const object = await getObject.call(this, bucket, key, options)
    if (!object?.content) return object
    const stream = object.content as Readable
    stream.destroy()
    const range = object.range ?? { start: 0, end: object.size - 1 }
    let bytes: Buffer
    try {
      bytes = await readFile(this.getResourcePath(bucket, key, 'object'))
    } catch (error) {
      // Deleted since s3rver opened it: missing, as s3rver itself answers then.
      if ((error as { code?: unknown }).code === 'ENOENT') return null
      throw error
    }
    object.content = Readable.from([bytes.subarray(range.start, range.end + 1)])
    return object
  },
})
const directory = process.argv[2]
if (!directory) throw new Error('usage: bun test/support/s3-server.ts DIR')
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [] })
const { port } = await server.run()
console.log(JSON.stringify({ port }))
