// A local S3-compatible server for tests (the npm package s3rver, in a process of its own on a free loopback port,
// over a temporary folder), and a fresh bucket per test, so tests that share the server share nothing else.
import { afterAll } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BlobLocation } from '../../src/storage/blobs'
import { closeAfterRun } from './after-run'

const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' }

export interface S3Server extends AsyncDisposable {
  endpoint: string
  /** A new empty bucket's location, with credentials the server accepts. */
  bucket(): Promise<Extract<BlobLocation, { kind: 's3' }>>
}

let buckets = 0

/** Starts s3rver on a free loopback port over a temporary folder; disposing stops it and removes the folder. */
export async function startS3(): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'threadhouse-s3-'))
  const child = Bun.spawn(['bun', join(import.meta.dir, 's3-server.ts'), directory], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const stop = async (): Promise<void> => {
    child.kill('SIGKILL')
    await child.exited
    rmSync(directory, { recursive: true, force: true })
  }
  let port: number
  try {
    // The first line it prints, once listening; a process that ends first has failed to start.
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
    let printed = ''
    while (!printed.includes('\n')) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`s3rver exited before listening (exit code ${await child.exited})`)
      printed += value
    }
    reader.releaseLock()
    port = JSON.parse(printed.split('\n')[0] ?? '').port
  } catch (error) {
    await stop()
    throw error
  }
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    async bucket() {
      buckets += 1
      const name = `test-${process.pid}-${buckets}`
      // CreateBucket needs no signature on s3rver; Bun's client has no call for it.
      const created = await fetch(`${endpoint}/${name}`, { method: 'PUT' })
      if (!created.ok) throw new Error(`s3rver did not create bucket ${name}: ${created.status}`)
      return { kind: 's3', bucket: name, endpoint, ...credentials }
    },
    [Symbol.asyncDispose]: stop,
  }
}

let shared: Promise<S3Server> | undefined

/** One s3rver for every test of the file that calls this, stopped after the file's last test. */
export function sharedS3(): () => Promise<S3Server> {
  afterAll(async () => {
    const server = await shared
    shared = undefined
    await server?.[Symbol.asyncDispose]()
  })
  return () => {
    shared ??= startS3()
    return shared
  }
}

let runServer: Promise<S3Server> | undefined

/**
 * One s3rver for the whole `bun test` run, started on first use and stopped by the after-run closing (after-run.ts):
 * after the last file, or in a parallel worker after each file, when the next file to ask starts another.
 */
export function runS3(): Promise<S3Server> {
  if (!runServer) {
    runServer = startS3()
    const started = runServer
    closeAfterRun(async () => {
      if (runServer === started) runServer = undefined
      await (await started)[Symbol.asyncDispose]()
    }, 'the S3 server')
  }
  return runServer
}
