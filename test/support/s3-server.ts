// s3rver in a process of its own, for test/support/s3.ts: `bun test/support/s3-server.ts DIR` serves DIR on a free
// loopback port and prints `{"port":N}` once listening. Two shims make s3rver, written for Node, right under Bun,
// and stay in this process: nothing else here uses what they change.
import crypto from 'node:crypto'
import fs from 'node:fs'

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
const directory = process.argv[2]
if (!directory) throw new Error('usage: bun test/support/s3-server.ts DIR')
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [] })
const { port } = await server.run()
console.log(JSON.stringify({ port }))
