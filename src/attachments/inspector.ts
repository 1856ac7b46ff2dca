// The main thread's side of the inspect workers: a small pool, started on the first upload, that does all of an
// upload's work except the database (parsing the body, checking each file, writing the accepted ones under
// temporary names) while this thread keeps answering requests. A worker that dies fails only the uploads it
// held (they answer 500); the next upload gets a fresh worker.
import type { Logger } from '../shared/log'
import type { AttachmentKind } from './attachments.table'
import type { AttachmentsModel } from './model'

/** A file a web form sent, already parsed; its name and declared type are claims. */
export interface FormFile {
  filename: string
  declaredType: string
  bytes: ArrayBuffer
}

/**
 * What to inspect: the file holding an upload request's raw multipart body, with the number of files its thread
 * already holds, or the files of a web form. A form's buffers are transferred, so the caller must not use them
 * again.
 */
export type Upload = { bodyPath: string; contentType: string; stored: number } | { files: FormFile[] }

export interface ToInspector {
  id: number
  upload: Upload
  uploadsDir: string
}

/** Why an upload was refused, as plain data: the request thread turns it into the answer. */
export type Refusal =
  /** 400: the body is no valid upload form; `message` says why. */
  | { kind: 'form'; message: string }
  /** 400: more files than the thread has room for. */
  | { kind: 'quota'; stored: number }
  /** 422: a file broke a content rule; `problem` completes a sentence that starts with the file's name. */
  | {
      kind: 'file'
      part: string
      file: string
      code: AttachmentsModel.rejectionCode
      problem: string
      limit?: number
    }

/** A file that passed every check, waiting under a temporary name in the uploads folder until it is stored. */
export interface CheckedFile {
  filename: string
  kind: AttachmentKind
  mediaType: string
  sizeBytes: number
  temporaryPath: string
  /** The scaled copy of a large image, which models read, or null when the original already fits. */
  resizedTemporaryPath: string | null
}

export type Outcome = { accepted: CheckedFile[] } | { refused: Refusal }

/** Once, when the worker has loaded its modules; then per upload, the outcome or why the inspection failed. */
export type FromInspector = { ready: true } | { id: number; outcome: Outcome } | { id: number; failure: string }

export interface FileInspector {
  /** Inspects an upload off this thread. Takes ownership of its buffers. */
  inspect(upload: Upload, uploadsDir: string): Promise<Outcome>
  /** Ends every worker; uploads still being inspected fail. */
  close(): Promise<void>
}

export interface InspectorOptions {
  /**
   * Workers at most. Two let uploads use both cores of a small machine: their threads run at a lower priority
   * than the request thread (see inspect-worker.ts), so answers to other requests still come first.
   */
  size?: number
  /** The worker's entry module; tests swap in one that can be made to crash. */
  entry?: URL
  /**
   * How long one upload may wait for its outcome once handed to a worker that has loaded its modules (default
   * 60 s, far beyond any file within the limits, even beside other uploads on the same worker). A worker still
   * busy then is taken to be stuck in a parser or decoder: it is ended, and every upload it held fails.
   */
  timeoutMs?: number
  /**
   * How long a new worker may take to load its modules (default 60 s: it takes well under a second even on a
   * busy machine). One that is not ready by then is ended, and the uploads waiting for it fail.
   */
  startLimitMs?: number
}

interface Pending {
  resolve(outcome: Outcome): void
  reject(error: Error): void
  /** Armed when the worker is ready: loading sharp and pdf-lib on a busy machine is no stuck inspection. */
  timer?: ReturnType<typeof setTimeout>
}

interface Slot {
  worker: Worker
  ready: boolean
  /** Ends a worker that never becomes ready, so that the uploads waiting for it still get an answer. */
  starting: ReturnType<typeof setTimeout>
  pending: Map<number, Pending>
}

function buffersOf(upload: Upload): ArrayBuffer[] {
  return 'files' in upload ? upload.files.map((file) => file.bytes) : []
}

export function createFileInspector(log: Logger, options: InspectorOptions = {}): FileInspector {
  const size = Math.max(1, options.size ?? 2)
  const entry = options.entry ?? new URL('./inspect-worker.ts', import.meta.url)
  const timeoutMs = options.timeoutMs ?? 60_000
  const startLimitMs = options.startLimitMs ?? 60_000
  const slots = new Set<Slot>()
  let nextId = 0
  let closed = false

  function retire(slot: Slot, reason: string): void {
    if (!slots.delete(slot)) return
    clearTimeout(slot.starting)
    slot.worker.terminate()
    const pending = [...slot.pending.values()]
    slot.pending.clear()
    for (const job of pending) {
      clearTimeout(job.timer)
      job.reject(new Error(reason))
    }
  }

  function spawn(): Slot {
    const starting = setTimeout(() => {
      log.error('file inspector did not start', { startLimitMs })
      retire(slot, 'The file inspector did not start')
    }, startLimitMs)
    starting.unref()
    const slot: Slot = { worker: new Worker(entry), ready: false, starting, pending: new Map() }
    slot.worker.onmessage = (event: MessageEvent<FromInspector>) => settle(slot, event.data)
    slot.worker.onerror = (event) => {
      log.error('file inspector crashed', { error: event.message })
      retire(slot, 'The file inspector stopped unexpectedly')
    }
    // A worker that exits without an error event (process.exit, out of memory) has died all the same.
    slot.worker.addEventListener('close', () => {
      if (slots.has(slot)) log.error('file inspector exited')
      retire(slot, 'The file inspector stopped unexpectedly')
    })
    // Idle workers must not keep the process alive: the server and pending uploads do that.
    slot.worker.unref()
    slots.add(slot)
    return slot
  }

  function arm(slot: Slot, job: Pending): void {
    job.timer = setTimeout(() => {
      log.error('file inspection timed out', { timeoutMs })
      retire(slot, 'File inspection took too long')
    }, timeoutMs)
  }

  function settle(slot: Slot, message: FromInspector): void {
    if ('ready' in message) {
      clearTimeout(slot.starting)
      slot.ready = true
      for (const job of slot.pending.values()) arm(slot, job)
      return
    }
    const job = slot.pending.get(message.id)
    if (!job) return
    slot.pending.delete(message.id)
    clearTimeout(job.timer)
    if ('failure' in message) job.reject(new Error(`File inspection failed: ${message.failure}`))
    else job.resolve(message.outcome)
  }

  /** An idle worker if there is one, else a new one while the pool has room, else the least busy. */
  function choose(): Slot {
    let best: Slot | undefined
    for (const slot of slots) if (!best || slot.pending.size < best.pending.size) best = slot
    if (best && (best.pending.size === 0 || slots.size >= size)) return best
    return spawn()
  }

  return {
    inspect(upload: Upload, uploadsDir: string): Promise<Outcome> {
      if (closed) return Promise.reject(new Error('The server is shutting down'))
      const slot = choose()
      const id = nextId++
      return new Promise<Outcome>((resolve, reject) => {
        const job: Pending = { resolve, reject }
        if (slot.ready) arm(slot, job)
        slot.pending.set(id, job)
        slot.worker.postMessage({ id, upload, uploadsDir } satisfies ToInspector, buffersOf(upload))
      })
    },
    async close(): Promise<void> {
      closed = true
      for (const slot of [...slots]) retire(slot, 'The server is shutting down')
    },
  }
}
