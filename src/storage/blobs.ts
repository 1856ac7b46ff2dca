// File bytes by key, in a local folder (the default) or an S3-compatible bucket (`S3_BUCKET`). The server chooses
// the keys: an attachment's UUIDv7 and a suffix (`<id>`, `<id>.resized`, `<id>.txt`), so a key carries its own age.
// Both stores keep one contract, which test/blobs.test.ts holds them to; callers never see which one they have.
import { constants, type Dirent } from 'node:fs'
import { access, copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Config } from '../config'

/**
 * Where a store keeps its bytes, as plain data: the generation worker builds its own store from it. It holds the
 * bucket's credentials, so it is never logged; `BlobStore.description` is what logs show.
 */
export type BlobLocation =
  | { kind: 'local'; root: string }
  | {
      kind: 's3'
      bucket: string
      /** The service's URL; absent for AWS itself, whose endpoint follows from the region. */
      endpoint?: string
      region?: string
      accessKeyId: string
      secretAccessKey: string
    }

/** The store for logs and the start-up line: its kind and bucket or folder, never a credential. */
export type BlobDescription = { kind: 'local'; path: string } | { kind: 's3'; bucket: string; endpoint: string | null }

/**
 * Stored bytes, read whole, streamed, or a range of them. Deliberately not a Blob: an S3 file handed to a Response
 * becomes a redirect to the bucket, and downloads must stream through the server with its safety headers.
 */
export interface StoredBlob {
  readonly size: number
  stream(): ReadableStream<Uint8Array>
  bytes(): Promise<Uint8Array>
  text(): Promise<string>
  /** Bytes `start` to `end` (exclusive), read from the store only when read: a range request on S3. */
  slice(start: number, end?: number): StoredBlob
}

export interface BlobStore {
  readonly location: BlobLocation
  readonly description: BlobDescription
  /** Stores the bytes under `key`, replacing what was there; a reader sees the old bytes or the new, never half. */
  put(key: string, data: Uint8Array | string | Blob): Promise<void>
  /** Stores a local file's bytes under `key` and removes the file (moved on one disk, else uploaded and removed). */
  putFile(key: string, path: string): Promise<void>
  /** The bytes under `key`, or null when there is no such key. */
  get(key: string): Promise<StoredBlob | null>
  /** Copies the bytes under `key` into a new local file at `path`; false, writing nothing, when there is no such key. */
  getFile(key: string, path: string): Promise<boolean>
  /** Removes the key; removing a missing key is no error. */
  delete(key: string): Promise<void>
  /** Every key in the store, in no particular order. */
  keys(): AsyncIterable<string>
  /** Writes, reads and removes a probe: throws, with the reason, when the store cannot be used. For start-up. */
  check(): Promise<void>
  /** A read that proves the store answers, without writing: for health checks. Throws the reason when it does not. */
  ping(): Promise<void>
}

/**
 * Keys are made by the server; anything else (a path, a dot file, `..`) is a bug, never a file to touch. Probes and
 * partial writes use names outside this set (dot names, `.tmp` names), so that listing keys never shows them.
 */
const validKey = /^[0-9a-z][0-9a-z.-]{0,127}$/

export function isValidKey(key: string): boolean {
  return validKey.test(key) && !key.includes('..') && !key.endsWith('.tmp')
}

function checkedKey(key: string): string {
  if (!isValidKey(key)) throw new Error(`Invalid blob key: ${JSON.stringify(key)}`)
  return key
}

/** How long a check or a ping may take before it counts as failed: a bucket that never answers is not a working one. */
const defaultAnswerWithinMs = 10_000

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms)
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

function isCode(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as { code?: unknown } | null)?.code as string)
}

/** A Bun Blob (a local file or an S3 object) whose size is known, behind the StoredBlob contract. */
function storedBlob(blob: Blob, size: number): StoredBlob {
  return {
    size,
    stream: () => blob.stream(),
    bytes: async () => new Uint8Array(await blob.arrayBuffer()),
    text: () => blob.text(),
    slice(start, end = size) {
      const from = Math.min(Math.max(0, start), size)
      const to = Math.min(Math.max(from, end), size)
      return storedBlob(blob.slice(from, to), to - from)
    },
  }
}

/**
 * A name for a partial write beside the keys: never listed as a key, and named like the uploads' other temporary
 * files, which the start-up sweep removes should a crash leave one.
 */
const partialName = (): string => `${Bun.randomUUIDv7()}.tmp`

export class LocalBlobStore implements BlobStore {
  readonly location: BlobLocation
  readonly description: BlobDescription
  private readonly root: string

  constructor(root: string) {
    this.root = resolve(root)
    this.location = { kind: 'local', root: this.root }
    this.description = { kind: 'local', path: this.root }
  }

  private path(key: string): string {
    return join(this.root, checkedKey(key))
  }

  async put(key: string, data: Uint8Array | string | Blob): Promise<void> {
    const target = this.path(key)
    // Written whole under another name, then renamed: a concurrent reader never sees half a file.
    const partial = join(this.root, partialName())
    try {
      await Bun.write(partial, data)
      await rename(partial, target)
    } catch (error) {
      await rm(partial, { force: true })
      throw error
    }
  }

  async putFile(key: string, path: string): Promise<void> {
    const target = this.path(key)
    try {
      // Staged files are written inside the uploads folder, so this is one rename on one disk.
      await rename(path, target)
    } catch (error) {
      if (!isCode(error, 'EXDEV')) throw error
      await this.put(key, Bun.file(path))
      await rm(path, { force: true })
    }
  }

  async get(key: string): Promise<StoredBlob | null> {
    try {
      const stats = await stat(this.path(key))
      return stats.isFile() ? storedBlob(Bun.file(this.path(key)), stats.size) : null
    } catch (error) {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) return null
      throw error
    }
  }

  async getFile(key: string, path: string): Promise<boolean> {
    try {
      // A copy-on-write clone where the file system has them (btrfs, XFS, APFS), a plain copy elsewhere.
      await copyFile(this.path(key), path, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL)
      return true
    } catch (error) {
      if (isCode(error, 'ENOENT') && (await this.get(key)) === null) return false
      throw error
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true })
  }

  async *keys(): AsyncIterable<string> {
    let entries: Dirent[]
    try {
      entries = await readdir(this.root, { withFileTypes: true })
    } catch (error) {
      if (isCode(error, 'ENOENT')) return
      throw error
    }
    // Dot files (.gitkeep and the like) are the operator's; folders are nobody's key.
    for (const entry of entries) if (entry.isFile() && isValidKey(entry.name)) yield entry.name
  }

  async check(): Promise<void> {
    await mkdir(this.root, { recursive: true })
    const probe = join(this.root, `.write-check-${Bun.randomUUIDv7()}`)
    try {
      await Bun.write(probe, 'ok')
      if ((await Bun.file(probe).text()) !== 'ok') throw new Error('a file written there reads back differently')
    } finally {
      await rm(probe, { force: true })
    }
  }

  async ping(): Promise<void> {
    if (!(await stat(this.root)).isDirectory()) throw new Error('not a folder')
    await access(this.root, constants.W_OK)
  }
}

/** A URL as logs may show it: without any user name or password it holds. */
function withoutCredentials(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.href.replace(/\/$/, '')
}

/**
 * An S3-compatible bucket through Bun's own client. Objects are written whole by one PUT, so a reader sees the old
 * bytes or the new. Downloads stream through the server (see StoredBlob), never redirect to the bucket.
 */
export class S3BlobStore implements BlobStore {
  readonly location: Extract<BlobLocation, { kind: 's3' }>
  readonly description: BlobDescription
  private readonly client: Bun.S3Client

  private readonly pageSize: number
  private readonly answerWithinMs: number

  constructor(
    location: Omit<Extract<BlobLocation, { kind: 's3' }>, 'kind'>,
    options: {
      /** Keys per listing request: S3 answers at most 1000; tests make pages small to see more than one. */
      pageSize?: number
      /** How long check and ping wait for the bucket (default 10 s). */
      answerWithinMs?: number
    } = {},
  ) {
    this.pageSize = options.pageSize ?? 1000
    this.answerWithinMs = options.answerWithinMs ?? defaultAnswerWithinMs
    this.location = { kind: 's3', ...location }
    const { bucket, endpoint, region, accessKeyId, secretAccessKey } = location
    this.client = new Bun.S3Client({ bucket, endpoint, region, accessKeyId, secretAccessKey })
    this.description = { kind: 's3', bucket, endpoint: endpoint === undefined ? null : withoutCredentials(endpoint) }
  }

  async put(key: string, data: Uint8Array | string | Blob): Promise<void> {
    await this.client.write(checkedKey(key), data)
  }

  async putFile(key: string, path: string): Promise<void> {
    await this.client.write(checkedKey(key), Bun.file(path))
    await rm(path, { force: true })
  }

  async get(key: string): Promise<StoredBlob | null> {
    const file = this.client.file(checkedKey(key))
    try {
      // One HEAD: whether the object exists, and its size, which the S3 file does not know before it is read.
      return storedBlob(file, (await file.stat()).size)
    } catch (error) {
      if (isCode(error, 'NoSuchKey', 'NotFound')) return null
      // A HEAD's 404 has no body to name its error: services differ in what the client makes of it.
      if (!(await file.exists())) return null
      throw error
    }
  }

  async getFile(key: string, path: string): Promise<boolean> {
    const blob = await this.get(key)
    if (!blob) return false
    // A GET that fails half-way leaves no partial copy behind.
    try {
      await Bun.write(path, new Response(blob.stream()))
    } catch (error) {
      await rm(path, { force: true })
      throw error
    }
    return true
  }

  async delete(key: string): Promise<void> {
    await this.client.delete(checkedKey(key))
  }

  async *keys(): AsyncIterable<string> {
    let continuationToken: string | undefined
    do {
      const page = await this.client.list({ continuationToken, maxKeys: this.pageSize })
      for (const object of page.contents ?? []) if (isValidKey(object.key)) yield object.key
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
    } while (continuationToken)
  }

  async check(): Promise<void> {
    // Outside the key space: never listed, and so never swept as a stray file either.
    const probe = `.write-check-${Bun.randomUUIDv7()}`
    await within(
      this.answerWithinMs,
      (async () => {
        await this.client.write(probe, 'ok')
        try {
          if ((await this.client.file(probe).text()) !== 'ok') {
            throw new Error('an object written there reads back differently')
          }
        } finally {
          await this.client.delete(probe)
        }
      })(),
    )
  }

  async ping(): Promise<void> {
    await within(this.answerWithinMs, this.client.list({ maxKeys: 1 }))
  }
}

export function openBlobStore(location: BlobLocation): BlobStore {
  if (location.kind === 'local') return new LocalBlobStore(location.root)
  const { kind: _, ...settings } = location
  return new S3BlobStore(settings)
}

type StorageConfig = Pick<
  Config,
  'UPLOADS_DIR' | 'S3_BUCKET' | 'S3_ENDPOINT' | 'S3_REGION' | 'S3_ACCESS_KEY_ID' | 'S3_SECRET_ACCESS_KEY'
>

/** The store the configuration names: the bucket when S3_BUCKET is set (see config.ts's checkS3), else UPLOADS_DIR. */
export function blobLocation(config: StorageConfig): BlobLocation {
  const { S3_BUCKET: bucket, S3_ACCESS_KEY_ID: accessKeyId, S3_SECRET_ACCESS_KEY: secretAccessKey } = config
  if (bucket === undefined || accessKeyId === undefined || secretAccessKey === undefined) {
    return { kind: 'local', root: resolve(config.UPLOADS_DIR) }
  }
  return {
    kind: 's3',
    bucket,
    accessKeyId,
    secretAccessKey,
    ...(config.S3_ENDPOINT !== undefined && { endpoint: config.S3_ENDPOINT }),
    // Always given: left out, Bun's client would take AWS_REGION from the environment, which no page documents.
    region: config.S3_REGION ?? 'us-east-1',
  }
}
