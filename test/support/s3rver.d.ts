// The part of s3rver's API the tests use; the package ships no types.
declare module 's3rver' {
  interface S3rverOptions {
    address?: string
    port?: number
    silent?: boolean
    directory: string
    configureBuckets?: { name: string; configs?: string[] }[]
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}

// Its file store, whose object reads and writes s3-server.ts replaces.
declare module 's3rver/lib/stores/filesystem.js' {
  export interface S3Object {
    bucket: string
    key: string
    content: unknown
    metadata: Record<string, string>
    range?: { start: number; end: number }
    readonly size: number
  }
  export default class FilesystemStore {
    getResourcePath(bucket: string, key: string, resource: 'object'): string
    putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>
    getObject(bucket: string, key: string, options?: unknown): Promise<S3Object | null>
    putObject(object: S3Object): Promise<{ size: number; md5: string }>
  }
}
